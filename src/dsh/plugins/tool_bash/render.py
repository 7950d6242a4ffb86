"""What the model reads about a command (SPEC §9c): result text, status lines, exit parsing.

Pure functions. :func:`render_result` writes the markers (``[exit code: N]``,
``[killed by signal: SIG]``, ``[timed out after Nms]``) and :func:`parse_exit_status`
reads the exit back from such a text, so a display can show an exit pill for a
logged result without re-running anything.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from dsh.core.bash import BashRunResult, BashTask, CollectedOutput
from dsh.core.session import dumps_json

_SIGNAL_MARKER = re.compile(r"\n\[killed by signal: ([^\]\n]+)\]\Z")
_EXIT_MARKER = re.compile(r"\n\[exit code: (\d+)\]\Z")


def json_text(value: object) -> str:
    """``value`` as compact JSON, the way the model wrote it (non-finite numbers read ``null``)."""
    try:
        return dumps_json(value)
    except ValueError:
        return "null"


def format_ms(value: float) -> str:
    """A millisecond count as written: ``100`` (not ``100.0``), ``1.5``."""
    return str(int(value)) if float(value).is_integer() else repr(value)


def _stream_text(output: CollectedOutput) -> str:
    if not output.truncated:
        return output.text
    if output.spill_path is None:
        return f"{output.text}\n[output truncated; full output: (unavailable)]"
    if output.spill_truncated:
        return f"{output.text}\n[output truncated; the beginning of it (up to the size cap): {output.spill_path}]"
    return f"{output.text}\n[output truncated; full output: {output.spill_path}]"


def render_result(result: BashRunResult) -> str:
    """The text the model sees for a foreground run.

    stdout, then (if any) ``[stderr]`` and stderr on a fresh line; ``(no output)``
    when both are empty. Then the markers, each on its own line: the timeout
    marker whenever the run timed out (however the process ended), then the signal
    marker, or else the exit-code marker for a non-zero (or unknown: ``null``) exit.
    """
    body = _stream_text(result.stdout)
    err = _stream_text(result.stderr)
    if err:
        if body and not body.endswith("\n"):
            body += "\n"
        body += "[stderr]\n" + err
    if not body:
        body = "(no output)"
    markers: list[str] = []
    if result.timed_out:
        markers.append(f"[timed out after {format_ms(result.timeout_ms)}ms]")
    if result.signal is not None:
        markers.append(f"[killed by signal: {result.signal}]")
    elif result.exit_code != 0:
        markers.append(f"[exit code: {json_text(result.exit_code)}]")
    if markers:
        if not body.endswith("\n"):
            body += "\n"
        body += "\n".join(markers)
    return body


def status_line(task: BashTask) -> str:
    """``[status: running]``, ``[status: killed]`` / ``[status: killed by SIG]``, or
    ``[status: completed, exit code: N]`` (an unknown exit code reads 0)."""
    if task.status == "running":
        return "[status: running]"
    if task.status == "killed":
        return f"[status: killed by {task.signal}]" if task.signal is not None else "[status: killed]"
    exit_code = task.exit_code if task.exit_code is not None else 0
    return f"[status: completed, exit code: {exit_code}]"


@dataclass(frozen=True)
class ExitStatus:
    """How a rendered run ended: exactly one of ``exit_code`` and ``signal`` is set."""

    exit_code: int | None = None
    signal: str | None = None


def parse_exit_status(text: str) -> ExitStatus:
    """Read the final marker of a :func:`render_result` text.

    A marker counts only on its own last line (preceded by a newline, ending the
    text); anything else, including output that merely ends in marker-like words,
    reads as exit 0.
    """
    killed = _SIGNAL_MARKER.search(text)
    if killed is not None:
        return ExitStatus(signal=killed.group(1))
    exited = _EXIT_MARKER.search(text)
    if exited is not None:
        return ExitStatus(exit_code=int(exited.group(1)))
    return ExitStatus(exit_code=0)
