"""SPEC §16.3 ``coding-task.e2e``: coding task: fix a failing test via bash.

The workspace holds ``add.js`` (it subtracts) and ``add.test.js``. The agent must make
``node add.test.js`` pass without touching the test; the test re-runs it itself.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from dsh.core.llm import text
from dsh.testing.wire import WireServer, text_reply
from tests.examples.coding.harness import coding_harness, of_type, pick_model, wait_for_idle
from tests.examples.coding.scripts import bash_reply

pytestmark = [pytest.mark.e2e, pytest.mark.skipif(shutil.which("node") is None, reason="needs node")]

ADD_JS = """function add(a, b) {
  return a - b;
}

module.exports = { add };
"""

ADD_TEST_JS = """const { add } = require('./add');

const cases = [[2, 3, 5], [-1, 1, 0], [10, 5, 15]];
for (const [a, b, want] of cases) {
  const got = add(a, b);
  if (got !== want) {
    console.log(`FAIL: add(${a}, ${b}) = ${got}, want ${want}`);
    process.exit(1);
  }
}
console.log('PASS');
"""


def node_test(workdir: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["node", "add.test.js"], cwd=workdir, capture_output=True, text=True, timeout=30, check=False)


@pytest.mark.parametrize("model", ["wire", pytest.param("deepseek", marks=pytest.mark.timeout(300))])
async def test_repairs_add_js_so_node_add_test_js_passes(model: str, tmp_path: Path, wire: WireServer) -> None:
    """coding task: fix a failing test via bash — repairs add.js so node add.test.js passes"""
    workdir = tmp_path / "project"
    workdir.mkdir()
    (workdir / "add.js").write_text(ADD_JS, encoding="utf-8")
    (workdir / "add.test.js").write_text(ADD_TEST_JS, encoding="utf-8")
    test_bytes = (workdir / "add.test.js").read_bytes()
    assert node_test(workdir).returncode == 1  # it fails to begin with

    wire.add(
        bash_reply("call-1", "cat add.js add.test.js && node add.test.js"),
        bash_reply("call-2", "sed -i 's/a - b/a + b/' add.js && node add.test.js"),
        text_reply("Fixed: add.js added instead of subtracting; node add.test.js prints PASS."),
    )
    async with coding_harness(workdir, pick_model(model, wire.base_url)) as h:
        agent = h.create("coding-task")
        agent.send(
            [
                text(
                    "In this directory, `node add.test.js` fails. Fix add.js so that the test passes. "
                    "Do not modify add.test.js. Run the test to confirm."
                )
            ]
        )
        await wait_for_idle(agent)
        assert any(call["name"] == "bash" for call in of_type(agent.session.events, "tool/call"))

    rerun = node_test(workdir)
    assert rerun.returncode == 0, rerun.stdout + rerun.stderr
    assert "PASS" in rerun.stdout
    assert (workdir / "add.test.js").read_bytes() == test_bytes
    assert "a - b" not in (workdir / "add.js").read_text(encoding="utf-8")
