"""SPEC §12: the plugin entry (module shape, config, environment fallbacks)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from dsh.core.errors import HarnessError
from dsh.core.llm import LLM_STREAM, LlmService
from dsh.kernel import ConfigError, Context, FiberState, describe
from dsh.plugins import llm_replay
from dsh.plugins.llm_replay import FILE_ENV, OVERRIDE_ENV, Config
from tests.plugins.llm_replay.helpers import answer, drain, recorded_call, write_json, write_log


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    monkeypatch.delenv(FILE_ENV, raising=False)
    monkeypatch.delenv(OVERRIDE_ENV, raising=False)
    return monkeypatch


def test_exposes_the_namespace_plugin_shape_name_inject_no_default_export() -> None:
    """exposes the namespace plugin shape (name/inject, no default export)"""
    assert llm_replay.name == "llm-replay"
    assert llm_replay.inject == ["llm"]
    assert (FILE_ENV, OVERRIDE_ENV) == ("DSH_SNAPSHOT_FILE", "DSH_SNAPSHOT_OVERRIDE")
    info = describe(llm_replay)
    assert info.name == "llm-replay"
    assert info.inject == ("llm",)
    assert info.config_model is Config
    assert info.start is llm_replay.apply
    assert not hasattr(llm_replay, "default")


def test_config_reads_camel_case_keys_and_rejects_unknown_ones() -> None:
    """Extra: YAML keys are camelCase (snake_case accepted); a typo is a config error."""
    assert Config.model_validate({"file": "a", "overrideFile": "b"}).override_file == "b"
    assert Config.model_validate({"override_file": "c"}).override_file == "c"
    with pytest.raises(ValueError, match="overide"):
        Config.model_validate({"overide": "x"})


async def test_installs_replay_from_an_explicit_config_file(
    root: Context, llm: LlmService, tmp_path: Path, clean_env: pytest.MonkeyPatch
) -> None:
    """installs replay from an explicit config.file"""
    chunks = answer("explicit")
    file = write_log(tmp_path / "session.jsonl", recorded_call(1, 1, chunks))
    clean_env.setenv(FILE_ENV, str(tmp_path / "elsewhere.jsonl"))  # config wins over the environment
    fiber = await root.plugin(llm_replay, {"file": str(file)})
    assert fiber.state is FiberState.ACTIVE
    assert await drain(llm) == chunks


async def test_relative_paths_resolve_against_the_working_directory(
    root: Context, llm: LlmService, tmp_path: Path, clean_env: pytest.MonkeyPatch
) -> None:
    """Extra: apply makes relative fixture paths absolute (cwd at apply time)."""
    chunks = answer("relative")
    write_log(tmp_path / "session.jsonl", recorded_call(1, 1, chunks))
    clean_env.chdir(tmp_path)
    await root.plugin(llm_replay, {"file": "session.jsonl"})
    assert await drain(llm) == chunks
    with pytest.raises(HarnessError) as caught:
        await root.plugin(llm_replay, {"file": "missing.jsonl"})
    assert f"fixture not found: {os.path.join(tmp_path, 'missing.jsonl')} —" in caught.value.message


async def test_falls_back_to_dsh_snapshot_file_dsh_snapshot_override_when_config_is_empty(
    root: Context, llm: LlmService, tmp_path: Path, clean_env: pytest.MonkeyPatch
) -> None:
    """falls back to $DSH_SNAPSHOT_FILE / $DSH_SNAPSHOT_OVERRIDE when config is empty"""
    file = write_log(tmp_path / "session.jsonl", recorded_call(1, 1, answer("from the log")))
    sidecar = write_json(tmp_path / "replay.override.json", [{"kind": "chunks", "chunks": answer("override")}])
    clean_env.setenv(FILE_ENV, str(file))
    clean_env.setenv(OVERRIDE_ENV, str(sidecar))
    await root.plugin(llm_replay, {})
    assert await drain(llm) == answer("override")


async def test_the_env_file_alone_serves_the_log(
    root: Context, llm: LlmService, tmp_path: Path, clean_env: pytest.MonkeyPatch
) -> None:
    """Extra: with only $DSH_SNAPSHOT_FILE set (no config at all) the log is replayed."""
    file = write_log(tmp_path / "session.jsonl", recorded_call(1, 1, answer("env log")))
    clean_env.setenv(FILE_ENV, str(file))
    await root.plugin(llm_replay)
    assert await drain(llm) == answer("env log")


async def test_uses_only_the_file_when_no_override_path_is_configured_or_in_the_env(
    root: Context, llm: LlmService, tmp_path: Path, clean_env: pytest.MonkeyPatch
) -> None:
    """uses only the file when no override path is configured or in the env"""
    file = write_log(tmp_path / "session.jsonl", recorded_call(1, 1, answer("log only")))
    # a sidecar sits beside the log, but nobody names it: it must not be picked up
    write_json(tmp_path / "replay.override.json", [{"kind": "hang"}])
    await root.plugin(llm_replay, {"file": str(file)})
    assert await drain(llm) == answer("log only")


async def test_an_empty_override_path_means_none(
    root: Context, llm: LlmService, tmp_path: Path, clean_env: pytest.MonkeyPatch
) -> None:
    """Extra: an empty overrideFile (config or env) means no override; config '' beats the env."""
    file = write_log(tmp_path / "session.jsonl", recorded_call(1, 1, answer("log")))
    sidecar = write_json(tmp_path / "replay.override.json", [{"kind": "hang"}])
    clean_env.setenv(OVERRIDE_ENV, str(sidecar))
    await root.plugin(llm_replay, {"file": str(file), "overrideFile": ""})
    assert await drain(llm) == answer("log")
    clean_env.setenv(OVERRIDE_ENV, "")
    second = await root.plugin(llm_replay, {"file": str(file)})
    assert second.state is FiberState.ACTIVE


async def test_throws_when_no_fixture_path_is_given_by_config_or_env(
    root: Context, llm: LlmService, clean_env: pytest.MonkeyPatch
) -> None:
    """throws when no fixture path is given by config or env"""
    with pytest.raises(HarnessError) as caught:
        await root.plugin(llm_replay, {})
    assert caught.value.message == "llm-replay: a fixture path is required (Config.file or $DSH_SNAPSHOT_FILE)"
    assert root.listener_count(LLM_STREAM) == 0


async def test_treats_an_empty_string_fixture_path_as_missing(
    root: Context, llm: LlmService, tmp_path: Path, clean_env: pytest.MonkeyPatch
) -> None:
    """treats an empty-string fixture path as missing"""
    clean_env.setenv(FILE_ENV, "")
    with pytest.raises(HarnessError, match="a fixture path is required"):
        await root.plugin(llm_replay, {})
    file = write_log(tmp_path / "session.jsonl", recorded_call(1, 1, answer("x")))
    clean_env.setenv(FILE_ENV, str(file))
    with pytest.raises(HarnessError, match="a fixture path is required"):
        await root.plugin(llm_replay, {"file": ""})  # an explicit '' does not fall back to the env
    assert root.listener_count(LLM_STREAM) == 0


async def test_an_invalid_config_is_rejected_before_apply(root: Context, llm: LlmService) -> None:
    """Extra: a wrongly typed key fails config validation with its path."""
    with pytest.raises(ConfigError, match="file"):
        await root.plugin(llm_replay, {"file": 3})
