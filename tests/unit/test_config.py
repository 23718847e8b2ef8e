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


def test_a_file_others_can_read_keeps_its_keys_out_and_the_rest_in(tmp_path: Path) -> None:
    """An editor's 0644 (issue 29, point 5): only what needs the file's keys stops, with
    the fix; every other setting is read; a key from the environment still works."""
    f = write(
        tmp_path / "config.toml",
        '[llm]\ndaily_budget = 2.0\n[secrets]\nanthropic_api_key = "sk-ant-x"\n',
        0o644,
    )
    c = config.resolve(env={}, path=f)
    assert c["llm.daily_budget"] == 2.0
    with pytest.raises(ConfigError) as e:
        c["secrets.anthropic_api_key"]
    assert "readable by other users" in e.value.message and "0644" in e.value.message
    assert "keys in it are not used" in e.value.message
    assert e.value.hint == f"Fix it with: chmod 600 {f}"
    assert "sk-ant-x" not in e.value.message + e.value.hint
    assert [p.error for p in c.problems] == [e.value] and "sk-ant-x" not in c.secret_values()
    assert c["secrets.google_api_key"] == ""  # a key the file does not set is not spoiled
    env = {"ANTHROPIC_API_KEY": "sk-ant-env"}
    assert config.resolve(env=env, path=f)["secrets.anthropic_api_key"] == "sk-ant-env"
    os.chmod(f, 0o600)
    assert config.resolve(env={}, path=f)["secrets.anthropic_api_key"] == "sk-ant-x"


def test_a_file_without_keys_that_others_can_read_is_named_and_read(tmp_path: Path) -> None:
    f = write(tmp_path / "config.toml", "[llm]\ndaily_budget = 2.0\n", 0o640)
    c = config.resolve(env={}, path=f)
    assert c["llm.daily_budget"] == 2.0
    (problem,) = c.problems
    assert "keep it private before adding keys" in problem.error.message
    assert problem.spoils == ()


@pytest.mark.parametrize("loose", [0o620, 0o602, 0o666])
def test_a_file_others_can_change_is_refused_whole(tmp_path: Path, loose: int) -> None:
    """Another user who can write it could point tsuku's downloads elsewhere."""
    f = write(tmp_path / "config.toml", "[llm]\ndaily_budget = 2.0\n", loose)
    with pytest.raises(ConfigError) as e:
        config.resolve(env={}, path=f)
    assert "writable by other users" in e.value.message
    assert e.value.hint == f"Fix it with: chmod 600 {f}"


def test_missing_file_is_defaults(tmp_path: Path) -> None:
    c = config.resolve(env={}, path=tmp_path / "nope.toml")
    assert c["llm.daily_budget"] == 5.0
    assert c["llm.hourly_limit"] == 10


@pytest.mark.parametrize(
    ("text", "needle", "line", "spoiled"),
    [
        (
            "[llm]\ndaily_budget = 'lots'\n",
            "llm.daily_budget must be a number of dollars",
            2,
            "llm.daily_budget",
        ),
        (
            "# mine\n[llm]\nhourly_limit = 1.5\n",
            "llm.hourly_limit must be a whole number",
            3,
            "llm.hourly_limit",
        ),
        ("[llm]\nhourly_limit = -1\n", "at least 0", 2, "llm.hourly_limit"),
        ("[llm]\nbogus = 1\n", "unknown setting 'llm.bogus'", 2, None),
        # A typo spoils the setting it was meant to be: its default could spend money.
        (
            "[llm]\nhourly_limit = 3\ndaily_budjet = 1\n",
            "unknown setting 'llm.daily_budjet'; did you mean llm.daily_budget?",
            3,
            "llm.daily_budget",
        ),
        ("\nbudget = 3\n", "must be a table", 2, None),
        # A syntax error spoils what its line sets: a table header, the table.
        (
            "[sandbox]\nmax_concurrent = 2\n[llm\n",
            "'[llm' is not valid TOML",
            3,
            "llm.daily_budget",
        ),
        # A value, that setting (the rest of the file reads as usual).
        (
            "[llm]\ndaily_budget = \nhourly_limit = 4\n",
            "llm.daily_budget is not valid TOML",
            2,
            "llm.daily_budget",
        ),
    ],
)
def test_a_bad_file_spoils_only_what_it_gets_wrong(
    tmp_path: Path, text: str, needle: str, line: int, spoiled: str | None
) -> None:
    """One problem naming the line and the fix; reading the spoiled setting raises it, and
    every other setting reads as usual (a syntax error spoils every file setting, but
    the environment still counts)."""
    f = write(tmp_path / "config.toml", text)
    c = config.resolve(env={"TSUKU_LOG_LEVEL": "debug"}, path=f)
    [problem] = c.problems
    assert needle in problem.error.message
    assert problem.error.message.startswith(f"{f}, line {line}: ")
    assert "tsukuctl config" in problem.error.hint
    if spoiled is not None:
        with pytest.raises(ConfigError) as e:
            c[spoiled]
        assert e.value is problem.error
        assert c.value_or_default(spoiled) == config.KEYS[spoiled].default
    assert c["log.level"] == "debug"  # from the environment
    if "'[llm'" in needle:
        with pytest.raises(ConfigError):
            c["llm.confirm_threshold"]
        assert c["sandbox.max_concurrent"] == 2
    else:
        assert c["llm.confirm_threshold"] == 0.5


def test_a_file_that_cannot_be_parsed_at_all_says_so_once_and_spoils_every_file_setting(
    tmp_path: Path,
) -> None:
    f = write(tmp_path / "config.toml", "[llm]\nhourly_limit = 4\n= 3\n")
    c = config.resolve(env={"TSUKU_LOG_LEVEL": "debug"}, path=f)
    [problem] = c.problems
    assert problem.error.message.startswith(f"{f}, line 3: the file cannot be read at all")
    assert problem.error.hint.startswith("Edit it with `tsukuctl config edit`")
    for name in ("llm.hourly_limit", "llm.daily_budget"):
        with pytest.raises(ConfigError) as e:
            c[name]
        assert e.value is problem.error
    assert c["log.level"] == "debug"  # the environment still counts


def test_a_syntax_error_names_the_key_and_a_concrete_fix(tmp_path: Path) -> None:
    f = write(tmp_path / "config.toml", "[llm]\nhourly_limit = 4\ndaily_budget = \n")
    [problem] = config.resolve(env={}, path=f).problems
    assert (
        problem.error.message == f"{f}, line 3: llm.daily_budget is not valid TOML (Invalid value)"
    )
    assert problem.error.hint == (
        "Edit it with `tsukuctl config edit`: llm.daily_budget takes a number of dollars, "
        "e.g. `daily_budget = 2.50`. Until then llm.daily_budget is not read from the file."
    )


def test_a_bad_value_under_the_designs_name_says_which_setting_it_is(tmp_path: Path) -> None:
    f = write(tmp_path / "config.toml", "[llm]\nrequire_confirmation = true\n")
    [problem] = config.resolve(env={}, path=f).problems
    assert problem.error.message.startswith(
        f"{f}, line 2 (llm.require_confirmation is read as llm.confirm_threshold): "
        "llm.confirm_threshold must be a number of dollars"
    )


def test_bad_secret_value_is_not_echoed(tmp_path: Path) -> None:
    f = write(tmp_path / "config.toml", "[secrets]\nanthropic_api_key = 12345678\n")
    with pytest.raises(ConfigError) as e:
        config.resolve(env={}, path=f)["secrets.anthropic_api_key"]
    assert "12345678" not in e.value.message
    assert "(hidden)" in e.value.message


def test_write_value_keeps_comments_and_layout(tmp_path: Path) -> None:
    f = write(
        tmp_path / "config.toml",
        '# my settings\n\n[llm.claude]\napi_key_env = "WORK_KEY"  # the work key\n\n'
        "[log]\nlevel = 'debug'  # loud\n",
    )
    config.write_value(f, "log.level", "info")
    config.write_value(f, "llm.hourly_limit", "4")
    text = f.read_text()
    assert text.startswith("# my settings\n")
    assert 'api_key_env = "WORK_KEY"  # the work key\n' in text
    assert 'level = "info"  # loud\n' in text
    c = config.resolve(env={}, path=f)
    assert (c["log.level"], c["llm.hourly_limit"], c["llm.claude.api_key_env"]) == (
        "info",
        4,
        "WORK_KEY",
    )
    config.write_value(f, "log.level", None)
    assert "[log]" not in f.read_text()  # an emptied table without comments goes


def test_unset_removes_a_typo_and_refuses_a_name_that_is_nowhere(tmp_path: Path) -> None:
    f = write(tmp_path / "config.toml", "[llm]\ndaily_budjet = 1  # oops\nhourly_limit = 2\n")
    config.write_value(f, "llm.daily_budjet", None)
    assert f.read_text() == "[llm]\nhourly_limit = 2\n"
    assert config.resolve(env={}, path=f).problems == ()
    with pytest.raises(UsageError):
        config.write_value(f, "llm.nowhere", None)


def test_a_value_is_checked_before_anything_is_written(tmp_path: Path) -> None:
    f = write(tmp_path / "config.toml", "# keep\n")
    with pytest.raises(ConfigError):
        config.write_value(f, "llm.hourly_limit", "many")
    assert f.read_text() == "# keep\n"


@pytest.mark.parametrize(
    ("name", "raw", "message", "hint"),
    [
        (
            "llm.daily_budget",
            "abc",
            "llm.daily_budget must be a number of dollars (e.g. 5 or 2.50), got 'abc'",
            "Give a number of dollars, e.g. `tsukuctl config set llm.daily_budget 2.50`.",
        ),
        (
            "llm.hourly_limit",
            "1.5",
            "llm.hourly_limit must be a whole number (e.g. 10), got '1.5'",
            "Give a whole number, e.g. `tsukuctl config set llm.hourly_limit 10`.",
        ),
        (
            "llm.only_provider",
            "maybe",
            "llm.only_provider must be true or false (or yes/no, on/off, 1/0), got 'maybe'",
            "Give true or false, e.g. `tsukuctl config set llm.only_provider true`.",
        ),
        (
            "breaker.reset_seconds",
            "-1",
            "breaker.reset_seconds must be a number of seconds of at least 0 (e.g. 30 or 2.5)"
            ", got -1.0",
            "Give a number of seconds, e.g. `tsukuctl config set breaker.reset_seconds 30`.",
        ),
        (
            "llm.daily_budget",
            "1e20",
            "llm.daily_budget must be a number of dollars of at most 1e+15 (e.g. 5 or 2.50), "
            "got '1e20'",
            "Give a number of dollars, e.g. `tsukuctl config set llm.daily_budget 2.50`.",
        ),
    ],
)
def test_a_bad_value_says_what_the_setting_takes_and_a_real_fix(
    tmp_path: Path, name: str, raw: str, message: str, hint: str
) -> None:
    with pytest.raises(ConfigError) as e:
        config.write_value(tmp_path / "config.toml", name, raw)
    assert (e.value.message, e.value.hint) == (message, hint)


def test_a_bad_file_value_names_the_file_and_the_edit() -> None:
    with pytest.raises(ConfigError) as e:
        config.coerce(config.KEYS["github.api_url"], 5, "/h/config.toml")
    assert e.value.message == (
        '/h/config.toml: github.api_url must be a URL in quotes (e.g. "https://example.com"), got 5'
    )
    assert "tsukuctl config edit" in e.value.hint
    assert "tsukuctl config set github.api_url https://example.com" in e.value.hint
    with pytest.raises(ConfigError) as e:
        config.coerce(config.KEYS["llm.hourly_limit"], "x", "$TSUKU_LLM_HOURLY_LIMIT")
    assert e.value.hint == "Set $TSUKU_LLM_HOURLY_LIMIT to a whole number (e.g. 10), or unset it."


def test_a_file_with_a_syntax_error_is_not_edited_blindly(tmp_path: Path) -> None:
    f = write(tmp_path / "config.toml", "[llm]\ndaily_budget = \n")
    with pytest.raises(ConfigError) as e:
        config.write_value(f, "llm.daily_budget", "2")
    assert "line 2" in e.value.message and "config edit" in e.value.hint
    assert f.read_text() == "[llm]\ndaily_budget = \n"


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


def test_a_mistyped_key_gets_the_setting_it_is_near() -> None:
    with pytest.raises(UsageError) as e:
        config.write_value(Path("/nonexistent/config.toml"), "llm.daily_budgt", "3")
    assert e.value.message == "unknown setting 'llm.daily_budgt' (did you mean llm.daily_budget?)"
    with pytest.raises(UsageError) as e:
        config.key("zzz.qqq")
    assert "did you mean" not in e.value.message


def test_secret_env_aliases() -> None:
    c = config.resolve(env={"GH_TOKEN": "gho_1234567890"}, path=Path("/nonexistent/c.toml"))
    assert c.setting("secrets.github_token").source == "env:GH_TOKEN"


def test_a_key_set_twice_is_a_problem_that_spoils_it_not_a_silent_last_value() -> None:
    # Issue 31: a file must mean one thing. TOML refuses a repeated key; the reader keeps
    # the first line (what a person reading from the top sees) and reports the second.
    read = config.parse_file(
        b"[llm]\ndaily_budget = 1\ndaily_budget = 1000\n", Path("/h/config.toml")
    )
    assert read.values["llm.daily_budget"] == 1.0
    (problem,) = read.problems
    assert "line 3" in problem.error.message and "llm.daily_budget" in problem.error.message
    assert problem.spoils == ("llm.daily_budget",)
