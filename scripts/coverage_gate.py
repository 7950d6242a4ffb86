"""Fail unless every file under src/dsh has 100% line and branch coverage.

Reads coverage.py's JSON report (coverage.json) and lists each source file that
falls short, with the lines and branches still missing. Files that were never
imported by any test are reported too: they do not appear in the report at all.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SRC = ROOT / "src" / "dsh"


def main() -> int:
    report_path = ROOT / "coverage.json"
    if not report_path.exists():
        print("coverage_gate: coverage.json is missing; run the tests first", file=sys.stderr)
        return 1
    report = json.loads(report_path.read_text(encoding="utf-8"))
    measured: dict[str, dict[str, object]] = {}
    for name, data in report["files"].items():
        path = Path(name)
        if not path.is_absolute():
            path = ROOT / path
        measured[str(path.resolve())] = data
    failures: list[str] = []
    for source in sorted(SRC.rglob("*.py")):
        key = str(source.resolve())
        rel = source.relative_to(ROOT)
        data = measured.get(key)
        if data is None:
            failures.append(f"{rel}: never imported by any test")
            continue
        summary = data["summary"]
        assert isinstance(summary, dict)
        missing_lines = data.get("missing_lines") or []
        missing_branches = data.get("missing_branches") or []
        if missing_lines or missing_branches:
            detail = []
            if missing_lines:
                detail.append(f"lines {missing_lines}")
            if missing_branches:
                detail.append("branches " + ", ".join(f"{a}->{b}" for a, b in missing_branches))
            failures.append(f"{rel}: {summary['percent_covered_display']}% ({'; '.join(detail)})")
    if failures:
        print("coverage_gate: every file under src/ needs 100% line and branch coverage:", file=sys.stderr)
        for line in failures:
            print(f"  {line}", file=sys.stderr)
        return 1
    print(f"coverage_gate: {len(measured)} files at 100% line and branch coverage")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
