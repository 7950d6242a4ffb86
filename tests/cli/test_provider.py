"""`--provider openai`, the `provider:` setting, and `--model` with the built-in profile and with `--config`."""

from __future__ import annotations

from pathlib import Path

import pytest

from dsh.cli import amain
from dsh.cli.boot import serving
from dsh.cli.errors import CliError
from dsh.cli.profile import NO_OPENAI_KEY_HELP, NO_OPENAI_MODEL_HELP, OPENAI_PUBLIC_BASE_URL, profile_entries
from dsh.cli.settings import Settings, read_settings_file, settings_file
from dsh.kernel import PluginEntry
from dsh.testing.wire import WireServer, text_reply
from tests.cli.helpers import log_of, namespace, session_id_of, turn_ends, write_tree


def run_args(root: Path, cwd: Path, *rest: str) -> list[str]:
    return ["run", "--sessions-root", str(root), "--cwd", str(cwd), *rest]


@pytest.fixture
async def openai_server(clean_env: pytest.MonkeyPatch) -> WireServer:
    async with WireServer() as wire:
        clean_env.setenv("OPENAI_API_KEY", "sk-openai")
        clean_env.setenv("OPENAI_BASE_URL", wire.base_url)
        yield wire  # type: ignore[misc]


async def test_provider_openai_asks_the_openai_variables_server(
    openai_server: WireServer, sessions_root: Path, workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    openai_server.add(text_reply("from openai"))
    args = run_args(sessions_root, workspace, "--provider", "openai", "--model", "local-model", "hi")
    assert await amain(args) == 0
    out, err = capsys.readouterr()
    assert out == "from openai\n"
    (request,) = openai_server.requests
    assert request.json["model"] == "local-model"
    assert request.headers["authorization"] == "Bearer sk-openai"
    _, events = log_of(sessions_root, session_id_of(err))
    assert turn_ends(events) == [{"turn": 1, "reason": {"kind": "completed"}}]


async def test_the_settings_file_picks_the_provider_and_model(
    openai_server: WireServer,
    sessions_root: Path,
    workspace: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / "settings.yml").write_text("provider: openai\nmodel: from-settings\n")
    openai_server.add(text_reply("set"))
    assert await amain(run_args(sessions_root, workspace, "hi")) == 0
    assert openai_server.requests[0].json["model"] == "from-settings"
    assert capsys.readouterr().out == "set\n"


async def test_provider_openai_without_key_or_model_says_what_to_set(
    sessions_root: Path, workspace: Path, capsys: pytest.CaptureFixture[str], clean_env: pytest.MonkeyPatch
) -> None:
    assert await amain(run_args(sessions_root, workspace, "--provider", "openai", "--model", "m", "hi")) == 2
    assert capsys.readouterr().err == f"dsh: {NO_OPENAI_KEY_HELP}\n"
    clean_env.setenv("OPENAI_API_KEY", "sk")
    assert await amain(run_args(sessions_root, workspace, "--provider", "openai", "hi")) == 2
    assert capsys.readouterr().err == f"dsh: {NO_OPENAI_MODEL_HELP}\n"
    assert not sessions_root.exists()


def test_the_openai_profile_defaults_to_openai_itself(tmp_path: Path) -> None:
    settings = Settings.from_args(namespace(provider="openai", model="gpt"), {"OPENAI_API_KEY": "k"})
    assert settings.has_api_key
    (model,) = [entry for entry in profile_entries(settings) if entry["id"] == "model"]
    assert model == {
        "id": "model",
        "name": "llm-openai",
        "config": {
            "models": ["gpt"],
            "apiKeyEnv": "OPENAI_API_KEY",
            "baseURLEnv": "OPENAI_BASE_URL",
            "baseURL": OPENAI_PUBLIC_BASE_URL,
        },
    }


async def test_model_extends_the_adapter_of_a_config_tree(
    server: WireServer, tmp_path: Path, sessions_root: Path, workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`--config` + `--model`: the model is served as with the built-in profile (no NO_ADAPTER at turn time)."""
    settings = Settings.from_args(namespace(sessions_root=str(sessions_root), cwd=str(workspace)), {})
    tree = write_tree(tmp_path / "tree.yml", profile_entries(settings))
    server.add(text_reply("configured"))
    assert await amain(["run", "--config", str(tree), "--model", "custom-model", "hi"]) == 0
    assert capsys.readouterr().out == "configured\n"
    assert server.requests[0].json["model"] == "custom-model"
    server.add(text_reply("listed"))
    assert await amain(["run", "--config", str(tree), "--model", "deepseek-v4-pro", "hi"]) == 0
    assert server.requests[1].json["model"] == "deepseek-v4-pro"


def test_serving_leaves_trees_without_one_adapter_alone(tmp_path: Path) -> None:
    file = tmp_path / "t.yml"
    one = [PluginEntry("model", "llm-openai", None, file)]
    (changed,) = serving(one, "m")
    assert changed.config == {"models": ["deepseek-v4-flash", "deepseek-v4-pro", "m"]}
    two = [PluginEntry("a", "llm-openai", None, file), PluginEntry("b", "llm-deepseek", None, file)]
    assert serving(two, "m") == two
    bad = [PluginEntry("model", "llm-openai", {"models": "m"}, file)]
    assert serving(bad, "m") == bad


def test_settings_file_locations_and_errors(tmp_path: Path) -> None:
    assert settings_file({"DSH_HOME": "/h"}) == Path("/h/settings.yml")
    assert settings_file({"XDG_CONFIG_HOME": "/x"}) == Path("/x/dsh/settings.yml")
    assert settings_file({}) == Path.home() / ".config" / "dsh" / "settings.yml"
    path = tmp_path / "settings.yml"
    assert read_settings_file(path) == {}
    path.write_text("")
    assert read_settings_file(path) == {}
    for text, message in [
        ("[", "is not valid YAML"),
        ("- a\n", "must be a mapping"),
        ("colour: red\n", r"unknown keys \['colour'\]"),
        ("model: 3\n", "model must be a non-empty string"),
    ]:
        path.write_text(text)
        with pytest.raises(CliError, match=message):
            read_settings_file(path)
    path.unlink()
    path.mkdir()
    with pytest.raises(CliError, match="cannot read the settings file"):
        read_settings_file(path)


def test_an_unknown_provider_in_the_settings_is_a_usage_error(tmp_path: Path) -> None:
    (tmp_path / "settings.yml").write_text("provider: nope\n")
    with pytest.raises(CliError, match='unknown provider "nope": use one of deepseek, openai'):
        Settings.from_args(namespace(), {"DSH_HOME": str(tmp_path)})


def test_demo_ignores_the_model_of_the_settings_file(tmp_path: Path) -> None:
    (tmp_path / "settings.yml").write_text("model: big\n")
    assert Settings.from_args(namespace(demo=True), {"DSH_HOME": str(tmp_path)}).model is None
    assert Settings.from_args(namespace(), {"DSH_HOME": str(tmp_path)}).model == "big"


async def test_a_printed_profile_runs_its_tools_in_the_cwd_given_later(
    tmp_path: Path, sessions_root: Path, workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`dsh config > tree.yml` bakes no workspace: `--config tree.yml --cwd DIR` runs bash in DIR."""
    assert await amain(["config", "--demo", "--sessions-root", str(sessions_root)]) == 0
    tree = tmp_path / "tree.yml"
    tree.write_text(capsys.readouterr().out)
    assert "cwd" not in tree.read_text()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    assert await amain(["run", "--config", str(tree), "--cwd", str(elsewhere), "$ pwd"]) == 0
    assert f"[tool result] {elsewhere}\n" in capsys.readouterr().err
