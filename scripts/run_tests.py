"""Run pytest under coverage and translate its exit codes for `make test`.

pytest exits 5 when it collected no test at all; for the gate that is a failure
(a suite that runs nothing proves nothing), so it is reported loudly.
"""

from __future__ import annotations

import subprocess
import sys


def main(argv: list[str]) -> int:
    command = [
        sys.executable,
        "-m",
        "pytest",
        "--cov=dsh",
        "--cov-branch",
        "--cov-report=",
        *argv,
    ]
    code = subprocess.call(command)
    if code == 5:
        print("run_tests: pytest collected no tests; refusing to call that a pass", file=sys.stderr)
        return 1
    if code != 0:
        return code
    report = subprocess.call([sys.executable, "-m", "coverage", "json", "-q", "-o", "coverage.json"])
    return report


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
