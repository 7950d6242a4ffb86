"""Global options resolved into Settings; the default sessions root."""

from __future__ import annotations

from pathlib import Path

import pytest

from dsh.cli.errors import CliError, report
from dsh.cli.settings import Settings, default_sessions_root
from tests.cli.helpers import namespace


def test_the_default_sessions_root_follows_dsh_home_then_xdg_then_home(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", "/home/u")
    assert default_sessions_root({"DSH_HOME": "/d"}) == Path("/d/sessions")
    assert default_sessions_root({"DSH_HOME": "~/d"}) == Path("/home/u/d/sessions")
    assert default_sessions_root({"XDG_DATA_HOME": "/x"}) == Path("/x/dsh/sessions")
    assert default_sessions_root({"DSH_HOME": "", "XDG_DATA_HOME": ""}) == Path("/home/u/.local/share/dsh/sessions")


def test_settings_make_paths_absolute_and_record_the_key(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "ws").mkdir()
    settings = Settings.from_args(
        namespace(config="tree.yml", cwd="ws", sessions_root="store", model="", verbose=1),
        {"DEEPSEEK_API_KEY": "k"},
    )
    assert settings.config == tmp_path / "tree.yml"
    assert settings.cwd == tmp_path / "ws"
    assert settings.sessions_root == tmp_path / "store"
    assert settings.model is None
    assert (settings.has_api_key, settings.verbose, settings.demo) == (True, 1, False)
    defaults = Settings.from_args(namespace(), {"DEEPSEEK_API_KEY": "", "DSH_HOME": str(tmp_path / "h")})
    assert defaults.cwd == tmp_path
    assert defaults.sessions_root == tmp_path / "h" / "sessions"
    assert defaults.has_api_key is False
    assert Settings.from_args(namespace()).sessions_root == Path(str(tmp_path / "home")) / "sessions"


def test_settings_refuse_a_missing_cwd_and_demo_with_config(tmp_path: Path) -> None:
    with pytest.raises(CliError) as caught:
        Settings.from_args(namespace(cwd=str(tmp_path / "nope")), {})
    assert (caught.value.status, str(caught.value)) == (
        2,
        f"--cwd {tmp_path / 'nope'} is not a directory: give an existing directory",
    )
    with pytest.raises(CliError, match="cannot be combined with --config") as combined:
        Settings.from_args(namespace(config="t.yml", demo=True), {})
    assert combined.value.status == 2


def test_report_prints_the_message_and_returns_the_status(capsys: pytest.CaptureFixture[str]) -> None:
    assert report(CliError("fix this", 3)) == 3
    assert capsys.readouterr().err == "dsh: fix this\n"
    assert CliError("default").status == 1
