"""Rule parsing, matching and the scopes "always" grants."""

from __future__ import annotations

import pytest

from dsh.plugins.permissions import bash_grant, matches, parse_rule, path_grant, subject_of


def test_parse_and_match() -> None:
    assert parse_rule(" read ").argument is None
    rule = parse_rule("bash(git status*)")
    assert (rule.tool, rule.argument, rule.text) == ("bash", "git status*", "bash(git status*)")
    assert matches(rule, subject_of("bash", {"command": "git status --short"}))
    assert not matches(rule, subject_of("bash", {"command": "git status && rm -rf x"}))
    assert matches(parse_rule("bash(rm *)"), subject_of("bash", {"command": "ls && rm -rf x"}), deny=True)
    assert matches(parse_rule("mcp__gh__*"), subject_of("mcp__gh__issue", {"title": "t"}))
    assert not matches(parse_rule("write(src/*)"), subject_of("write", {"x": 1}))
    assert matches(parse_rule("write(src/*)"), subject_of("write", {"file_path": "/w/src/a", "path": "no"}, ("src/a",)))
    assert subject_of("probe", "raw text").text is None
    for bad in ("", "bash()", "a b", "x(y"):
        with pytest.raises(ValueError, match="is not TOOL or TOOL"):
            parse_rule(bad)


def test_grants() -> None:
    assert bash_grant("git push origin main") == "bash(git push*)"
    assert bash_grant("ls -la") == "bash(ls*)"
    assert bash_grant("ls") == "bash(ls*)"
    assert path_grant("read", "/etc/passwd") == "read(/etc/*)"
    assert path_grant("read", "/x") == "read(/*)"


def test_path_argument() -> None:
    from dsh.plugins.permissions.rules import path_argument

    assert path_argument("raw") is None
    assert path_argument({"path": 3}) is None
    assert path_argument({"path": "p"}) == "p"
