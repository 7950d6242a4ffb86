"""The kernel demo (`make run`): boots its YAML tree through the real loader in a subprocess."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

START = Path(__file__).resolve().parents[2] / "examples" / "kernel-demo" / "start.py"


def run_demo(cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    environment = {key: value for key, value in os.environ.items() if key != "DSH_DEMO_WHO"}
    environment.update(env)
    return subprocess.run(
        [sys.executable, str(START)], cwd=cwd, env=environment, capture_output=True, text=True, timeout=30, check=False
    )


def test_the_demo_boots_its_tree_greets_and_disposes_cleanly(tmp_path: Path) -> None:
    """From any working directory: the tree, the greeting, what booted, the LIFO teardown."""
    done = run_demo(tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    assert done.stdout.splitlines() == [
        "tree tree.yml:",
        "  services (include)",
        "    greeter (./plugins/greeter.py:Greeter)",
        "  hello (./plugins/hello.py)",
        "Hello, world!",
        "booted: include (active), hello (active)",
        "hello: unloaded",
        "greeter: service withdrawn",
        "disposed: include (disposed), hello (disposed)",
    ]


def test_the_demo_reads_who_to_greet_from_the_environment(tmp_path: Path) -> None:
    """The tree's `!env [DSH_DEMO_WHO, world]` tag reaches the plugin's config."""
    done = run_demo(tmp_path, DSH_DEMO_WHO="dsh")
    assert done.returncode == 0, done.stderr
    assert "Hello, dsh!" in done.stdout.splitlines()
