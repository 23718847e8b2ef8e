from __future__ import annotations

import os
from pathlib import Path

import pytest

from tsukud import config
from tsukud.errors import ConfigError, UsageError


def write(path: Path, text: str, mode: int = 0o600) -> Path:
    path.write_text(text)
    os.chmod(path, mode)
    return path


def test_precedence_flag_env_file_default(tmp_path: Path) -> None:
    f = write(tmp_path / "config.toml", "[llm]\ndaily_budget = 2.0\nhourly_limit = 4\n")
    env = {"TSUKU_LLM_DAILY_BUDGET": "3.5", "TSUKU_LLM_HOURLY_LIMIT": ""}
    c = config.resolve(env=env, path=f)
    assert (c["llm.daily_budget"], c.setting("llm.daily_budget").source) == (
        3.5,
        "env:TSUKU_LLM_DAILY_BUDGET",
    )
    # An empty env var does not count as set.
    assert (c["llm.hourly_limit"], c.setting("llm.hourly_limit").source) == (4, "file")
    assert (c["llm.confirm_threshold"], c.setting("llm.confirm_threshold").source) == (
        0.5,
        "default",
    )
    c = config.resolve(flags={"llm.daily_budget": "9"}, env=env, path=f)
    assert (c["llm.daily_budget"], c.setting("llm.daily_budget").source) == (9.0, "flag")


def test_group_readable_file_with_key_is_refused_with_the_fix(tmp_path: Path) -> None:
    f = write(tmp_path / "config.toml", '[secrets]\nanthropic_api_key = "sk-ant-x"\n', 0o644)
    with pytest.raises(ConfigError) as e:
        config.resolve(env={}, path=f)
    assert "readable by other users" in e.value.message
    assert "0644" in e.value.message
    assert e.value.hint == f"Fix it with: chmod 600 {f}"
    assert "sk-ant-x" not in e.value.message + e.value.hint


def test_missing_file_is_defaults(tmp_path: Path) -> None:
    c = config.resolve(env={}, path=tmp_path / "nope.toml")
    assert c["llm.daily_budget"] == 5.0
    assert c["llm.hourly_limit"] == 10


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("[llm]\ndaily_budget = 'lots'\n", "llm.daily_budget must be float"),
        ("[llm]\nhourly_limit = 1.5\n", "llm.hourly_limit must be int"),
        ("[llm]\nhourly_limit = -1\n", "at least 0"),
        ("[llm]\nbogus = 1\n", "unknown setting(s) llm.bogus"),
        ("budget = 3\n", "must be a table"),
        ("[llm\n", "not valid TOML"),
    ],
)
def test_bad_files_name_the_problem(tmp_path: Path, text: str, needle: str) -> None:
    f = write(tmp_path / "config.toml", text)
    with pytest.raises(ConfigError) as e:
        config.resolve(env={}, path=f)
    assert needle in e.value.message


def test_bad_secret_value_is_not_echoed(tmp_path: Path) -> None:
    f = write(tmp_path / "config.toml", "[secrets]\nanthropic_api_key = 12345678\n")
    with pytest.raises(ConfigError) as e:
        config.resolve(env={}, path=f)
    assert "12345678" not in e.value.message
    assert "(hidden)" in e.value.message


def test_write_value_is_atomic_0600_and_roundtrips(tmp_path: Path) -> None:
    f = tmp_path / "home" / "config.toml"
    config.write_value(f, "llm.daily_budget", "7.25")
    config.write_value(f, "secrets.github_token", "ghp_abcdefgh12345")
    assert oct(f.stat().st_mode & 0o777) == "0o600"
    c = config.resolve(env={}, path=f)
    assert c["llm.daily_budget"] == 7.25
    assert c.secret_values() == ["ghp_abcdefgh12345"]
    config.write_value(f, "llm.daily_budget", None)
    assert config.resolve(env={}, path=f).setting("llm.daily_budget").source == "default"
    assert not list(f.parent.glob(".*.tmp"))


def test_unknown_key_is_a_usage_error() -> None:
    with pytest.raises(UsageError):
        config.key("llm.nope")


def test_secret_env_aliases() -> None:
    c = config.resolve(env={"GH_TOKEN": "gho_1234567890"}, path=Path("/nonexistent/c.toml"))
    assert c.setting("secrets.github_token").source == "env:GH_TOKEN"
