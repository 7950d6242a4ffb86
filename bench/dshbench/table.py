"""The one table ``bench/run.py`` prints: every metric with its median, spread and target."""

from __future__ import annotations

from collections.abc import Sequence

from dshbench.metrics import Metric, format_value

HEADERS = ("scenario", "metric", "median", "min – max", "IQR", "n", "target", "")


def _row(metric: Metric) -> tuple[str, ...]:
    summary = metric.summary
    target = metric.target.describe(metric.unit) if metric.target is not None else ""
    if summary is None:
        return (metric.scenario, metric.name, metric.note or "n/a", "", "", "0", target, metric.verdict)
    unit = metric.unit
    return (
        metric.scenario,
        metric.name,
        f"{format_value(summary.median)} {unit}",
        f"{format_value(summary.low)} – {format_value(summary.high)}",
        f"{format_value(summary.q1)} – {format_value(summary.q3)}",
        str(summary.count),
        target,
        metric.verdict,
    )


def render_table(metrics: Sequence[Metric]) -> str:
    """A Markdown-compatible pipe table (readable as plain text, pasteable into docs)."""
    rows = [HEADERS, *(_row(metric) for metric in metrics)]
    widths = [max(len(row[column]) for row in rows) for column in range(len(HEADERS))]

    def line(cells: Sequence[str]) -> str:
        return "| " + " | ".join(cell.ljust(width) for cell, width in zip(cells, widths, strict=True)) + " |"

    rule = "|" + "|".join("-" * (width + 2) for width in widths) + "|"
    return "\n".join([line(rows[0]), rule, *(line(row) for row in rows[1:])])
