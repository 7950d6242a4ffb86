"""Measured values, their summary statistics and the targets they are judged against.

A :class:`Metric` is one row of the benchmark table: a name, a unit, the samples of
every run and an optional :class:`Target`. A metric that could not be measured
carries no samples and a ``note`` saying why (``"n/a (dsh run not available)"``).
Nothing here asserts anything: a missed target is reported, never raised.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field
from typing import Any, Literal


@dataclass(frozen=True)
class Target:
    """A budget: ``limit`` in the metric's unit; ``better`` says which side passes."""

    limit: float
    better: Literal["lower", "higher"] = "lower"

    def met_by(self, value: float) -> bool:
        return value <= self.limit if self.better == "lower" else value >= self.limit

    def describe(self, unit: str) -> str:
        sign = "≤" if self.better == "lower" else "≥"
        return f"{sign} {format_value(self.limit)} {unit}"


@dataclass(frozen=True)
class Summary:
    """Median and spread of a non-empty sample list (quartiles by the inclusive method)."""

    median: float
    low: float
    high: float
    q1: float
    q3: float
    count: int

    @classmethod
    def of(cls, samples: list[float]) -> Summary:
        if not samples:
            raise ValueError("a summary needs at least one sample")
        if len(samples) == 1:
            q1 = q3 = samples[0]
        else:
            q1, _, q3 = statistics.quantiles(samples, n=4, method="inclusive")
        return cls(statistics.median(samples), min(samples), max(samples), q1, q3, len(samples))


@dataclass
class Metric:
    """One row of the table; see the module docstring."""

    scenario: str
    name: str
    unit: str
    samples: list[float] = field(default_factory=list)
    target: Target | None = None
    note: str = ""

    @property
    def summary(self) -> Summary | None:
        return Summary.of(self.samples) if self.samples else None

    @property
    def verdict(self) -> str:
        """``ok`` / ``MISS`` by the median against the target, ``n/a`` without samples, else empty."""
        summary = self.summary
        if summary is None:
            return "n/a"
        if self.target is None:
            return ""
        return "ok" if self.target.met_by(summary.median) else "MISS"

    def to_json(self) -> dict[str, Any]:
        value: dict[str, Any] = {"scenario": self.scenario, "name": self.name, "unit": self.unit}
        summary = self.summary
        if summary is not None:
            value.update(
                median=summary.median,
                min=summary.low,
                max=summary.high,
                q1=summary.q1,
                q3=summary.q3,
                runs=summary.count,
                samples=self.samples,
            )
        if self.target is not None:
            value["target"] = {"limit": self.target.limit, "better": self.target.better}
            value["verdict"] = self.verdict
        if self.note:
            value["note"] = self.note
        return value


def unavailable(scenario: str, name: str, unit: str, reason: str, target: Target | None = None) -> Metric:
    """A row that could not be measured, reported as ``n/a (<reason>)``."""
    return Metric(scenario, name, unit, [], target, f"n/a ({reason})")


def format_value(value: float) -> str:
    """Three significant digits, without exponent for the ranges the table shows."""
    magnitude = abs(value)
    if magnitude >= 1000:
        return f"{value:,.0f}"
    if magnitude >= 100:
        return f"{value:.0f}"
    if magnitude >= 10:
        return f"{value:.1f}"
    if magnitude >= 1:
        return f"{value:.2f}"
    return f"{value:.3g}"
