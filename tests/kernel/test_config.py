"""Plugin config validation with every bad field path named."""

from __future__ import annotations

import pytest
from pydantic import BaseModel

from dsh.kernel import ConfigError, KernelError, validate_config


class Inner(BaseModel):
    depth: int


class Settings(BaseModel):
    name: str
    inner: Inner
    count: int = 1


async def test_a_valid_mapping_becomes_the_model_with_defaults() -> None:
    """Validation applies defaults."""
    assert validate_config("p", Settings, {"name": "n", "inner": {"depth": 2}}) == Settings(
        name="n", inner=Inner(depth=2), count=1
    )


async def test_every_failing_field_path_is_listed() -> None:
    """Nested paths are dotted; the message ends with the fix."""
    with pytest.raises(ConfigError) as caught:
        validate_config("p", Settings, {"inner": {"depth": "deep"}, "count": "x"})
    error = caught.value
    assert isinstance(error, KernelError)
    assert error.plugin == "p"
    assert [path for path, _ in error.problems] == ["name", "inner.depth", "count"]
    assert str(error).startswith('plugin "p": invalid config: name: Field required; inner.depth: ')
    assert str(error).endswith("(fix these fields in its config)")
    assert error.__cause__ is not None


async def test_none_is_an_empty_mapping_and_a_model_instance_passes_through() -> None:
    """Absent config validates as {}; an already-built model is accepted as is."""

    class Flagged(BaseModel):
        flag: bool = False

    assert validate_config("p", Flagged, None) == Flagged()
    built = Settings(name="n", inner=Inner(depth=1))
    assert validate_config("p", Settings, built) is built


async def test_a_non_mapping_config_is_rejected_at_the_root() -> None:
    """A list or scalar cannot be a config."""
    with pytest.raises(ConfigError, match=r"\(root\): expected a mapping, got list"):
        validate_config("p", Settings, [1, 2])


async def test_without_a_model_the_raw_value_is_passed_through() -> None:
    """Plugins without Config get the raw mapping ({} for None)."""
    raw = {"free": "form"}
    assert validate_config("p", None, raw) is raw
    assert validate_config("p", None, None) == {}
