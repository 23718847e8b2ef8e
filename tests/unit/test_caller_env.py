"""The caller's environment: what travels with a request, how it layers over the
daemon's settings, and where each home's socket is."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tsukud import caller_env, config, paths
from tsukud.errors import ConfigError


def test_every_settings_variable_travels_with_a_request() -> None:
    names = {e for k in config.KEYS.values() for e in k.env}
    assert all(caller_env.allowed(n) for n in names), sorted(
        n for n in names if not caller_env.allowed(n)
    )
    for extra in ("DOCKER_HOST", "HTTPS_PROXY", "no_proxy", "GH_TOKEN", "TSUKU_NEW_SETTING"):
        assert caller_env.allowed(extra)
    # Where the daemon is, and the process's own environment, never travel.
    for never in ("TSUKU_HOME", "TSUKU_SOCKET", "PATH", "HOME", "LD_PRELOAD", "tsuku_x"):
        assert not caller_env.allowed(never)


def test_collect_and_accept_keep_only_the_allowed_names() -> None:
    shell = {
        "GITHUB_TOKEN": "t0ken",
        "PATH": "/bin",
        "TSUKU_LLM_DAILY_BUDGET": "",
        "TSUKU_HOME": "/h",
        "X": "y",
    }
    # PATH travels as a fact about the caller (which commands its shell finds), never
    # as a setting: it is not "allowed", so a detached daemon keeps its own.
    assert caller_env.collect(shell) == {"GITHUB_TOKEN": "t0ken", "PATH": "/bin"}
    assert caller_env.daemon_environ(shell)["PATH"] == "/bin"
    sent = {
        "GITHUB_TOKEN": "t0ken",
        "LD_PRELOAD": "/tmp/evil.so",
        "TSUKU_HOME": "/elsewhere",
        "DOCKER_HOST": "x" * (caller_env.MAX_VALUE + 1),
        "NO_PROXY": "",
    }
    assert caller_env.accept(sent) == {"GITHUB_TOKEN": "t0ken"}
    long_path = "/opt/sdk/bin:" * 1000  # longer than a setting may be, as a PATH can be
    assert caller_env.accept({"PATH": long_path}) == {"PATH": long_path}
    assert caller_env.accept({"PATH": "x" * (caller_env.MAX_FACT_VALUE + 1)}) == {}


def test_the_key_variables_the_config_names_travel_too(tmp_path: Path) -> None:
    cfg = tmp_path / "config.toml"
    assert caller_env.key_env_names(str(cfg)) == frozenset()  # no file
    cfg.write_text('[llm]\ndaily_budget = 2\n\n[llm.claude]\napi_key_env = "WORK_KEY"\n')
    cfg.chmod(0o600)
    names = caller_env.key_env_names(str(cfg))
    assert names == {"WORK_KEY"}
    assert caller_env.key_env_names(str(cfg)) == config.resolve(env={}, path=cfg).key_env_names()
    shell = {"WORK_KEY": "k1", "OTHER_KEY": "k2", "HOME": "/h"}
    assert caller_env.collect(shell, extra=names) == {"WORK_KEY": "k1"}
    assert caller_env.accept(shell) == {}  # a daemon whose config names none takes none
    assert "WORK_KEY" not in caller_env.daemon_environ(shell, extra=names)
    # The caller's named variable comes first, as in the daemon's own environment.
    cfg_ = config.resolve(env={}, path=cfg)
    mine = cfg_.with_caller_env({"WORK_KEY": "k1", "ANTHROPIC_API_KEY": "k0"})
    assert mine["secrets.anthropic_api_key"] == "k1"
    assert mine.setting("secrets.anthropic_api_key").source == "caller:WORK_KEY"
    cfg.write_text("[llm\napi_key_env = 1\n")  # broken: names nothing, the daemon says why
    assert caller_env.key_env_names(str(cfg)) == frozenset()
    cfg.write_text(
        '[llm]\nclaude.api_key_env = "A_KEY"  # dotted\n'
        '# api_key_env = "COMMENTED"\n'
        "[llm.gemini]\n\"api_key_env\" = 'B_KEY'\n"
        '[llm.other]\napi_key_env = "PATH; rm"\n'
    )
    assert caller_env.key_env_names(str(cfg)) == {"A_KEY", "B_KEY"}


def test_caller_env_sits_between_flags_and_the_daemons_env(tmp_path: Path) -> None:
    f = tmp_path / "config.toml"
    f.write_text("[llm]\ndaily_budget = 2.0\nhourly_limit = 4\n")
    os.chmod(f, 0o600)
    daemon_env = {"TSUKU_LLM_HOURLY_LIMIT": "6", "GITHUB_TOKEN": "daemons-token"}
    base = config.resolve(flags={"llm.provider": "gemini"}, env=daemon_env, path=f)
    caller = {
        "TSUKU_LLM_DAILY_BUDGET": "1",
        "TSUKU_LLM_HOURLY_LIMIT": "8",
        "TSUKU_LLM_PROVIDER": "claude",
        "GH_TOKEN": "callers-token",
    }
    c = base.with_caller_env(caller)
    got = {n: (c[n], c.setting(n).source) for n in ("llm.daily_budget", "llm.hourly_limit")}
    assert got == {
        "llm.daily_budget": (1.0, "caller:TSUKU_LLM_DAILY_BUDGET"),  # over the file
        "llm.hourly_limit": (8, "caller:TSUKU_LLM_HOURLY_LIMIT"),  # over tsukud's env
    }
    assert (c["llm.provider"], c.setting("llm.provider").source) == ("gemini", "flag")
    # The caller's GH_TOKEN beats tsukud's GITHUB_TOKEN, though GITHUB_TOKEN comes first
    # among one environment's names.
    assert c["secrets.github_token"] == "callers-token"
    assert c.setting("secrets.github_token").source == "caller:GH_TOKEN"
    assert (c["llm.confirm_threshold"], c.setting("llm.confirm_threshold").source) == (
        0.5,
        "default",
    )
    # The daemon's own settings are untouched: the next request without it sees them.
    assert (base["llm.daily_budget"], base["secrets.github_token"]) == (2.0, "daemons-token")
    assert "callers-token" in c.secret_values()


def test_a_bad_value_in_the_callers_shell_names_the_variable() -> None:
    base = config.resolve(env={}, path=Path("/nonexistent/config.toml"))
    c = base.with_caller_env({"TSUKU_LLM_DAILY_BUDGET": "lots"})
    assert c["llm.hourly_limit"] == 10  # the other settings still read
    with pytest.raises(ConfigError) as e:
        c["llm.daily_budget"]
    assert "your $TSUKU_LLM_DAILY_BUDGET" in e.value.message
    assert "unset TSUKU_LLM_DAILY_BUDGET" in e.value.hint


def test_the_callers_value_stands_in_for_a_spoiled_file_value(tmp_path: Path) -> None:
    f = tmp_path / "config.toml"
    f.write_text('[llm]\ndaily_budget = "lots"\n')
    os.chmod(f, 0o600)
    base = config.resolve(env={}, path=f)
    with pytest.raises(ConfigError):
        base["llm.daily_budget"]
    c = base.with_caller_env({"TSUKU_LLM_DAILY_BUDGET": "2"})
    assert c["llm.daily_budget"] == 2.0 and c.problems == base.problems


def test_the_socket_follows_a_home_of_its_own() -> None:
    env = {"HOME": "/home/u", "XDG_RUNTIME_DIR": "/run/user/1000"}
    assert paths.socket_path(env) == "/run/user/1000/tsuku/tsukud.sock"
    # TSUKU_HOME spelling out the default home keeps the runtime dir's socket.
    assert paths.socket_path({**env, "TSUKU_HOME": "/home/u/.tsuku/"}) == (
        "/run/user/1000/tsuku/tsukud.sock"
    )
    assert paths.socket_path({**env, "TSUKU_HOME": "/tmp/hB"}) == "/tmp/hB/run/tsukud.sock"
    assert paths.socket_path({**env, "TSUKU_HOME": "/h", "TSUKU_SOCKET": "/s/x.sock"}) == (
        "/s/x.sock"
    )
    assert paths.socket_path({"HOME": "/home/u"}) == "/home/u/.tsuku/run/tsukud.sock"


def test_a_long_home_gets_a_short_stable_socket_of_its_own() -> None:
    long_a, long_b = "/tmp/" + "a" * 120, "/tmp/" + "b" * 120
    env = {"HOME": "/home/u", "XDG_RUNTIME_DIR": "/run/user/1000"}
    a = paths.socket_path({**env, "TSUKU_HOME": long_a})
    b = paths.socket_path({**env, "TSUKU_HOME": long_b})
    assert a != b and a == paths.socket_path({**env, "TSUKU_HOME": long_a})
    assert a.startswith("/run/user/1000/tsuku/") and a.endswith(".sock")
    assert len(a.encode()) <= paths.MAX_SOCKET_PATH
    # No runtime dir (or one too long itself): the per-user directory in /tmp.
    shared = paths.socket_path({"HOME": "/home/u", "TSUKU_HOME": long_a})
    assert os.path.dirname(shared) == paths.shared_socket_dir()
    assert os.path.basename(shared) == os.path.basename(a)
    deep = {"HOME": "/home/u", "TSUKU_HOME": long_a, "XDG_RUNTIME_DIR": "/r" * 60}
    assert os.path.dirname(paths.socket_path(deep)) == paths.shared_socket_dir()
    assert paths.too_long(a) is None and paths.too_long(long_a + "/run/tsukud.sock")


def test_the_shared_socket_dir_must_be_private_and_ours(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    shared = tmp_path / "tsuku-shared"
    monkeypatch.setattr(paths, "shared_socket_dir", lambda: str(shared))
    sock = str(shared / "abc.sock")
    assert paths.foreign_socket_dir(sock) is None  # missing: the daemon makes it 0700
    shared.mkdir(mode=0o700)
    os.chmod(shared, 0o700)
    assert paths.foreign_socket_dir(sock) is None
    os.chmod(shared, 0o755)
    problem = paths.foreign_socket_dir(sock)
    assert problem is not None and "0755" in problem
    shared.rmdir()
    shared.symlink_to(tmp_path)  # a link planted where the directory should be
    assert paths.foreign_socket_dir(sock) is not None
    # Directories the user chose are the daemon's to check, not the client's.
    assert paths.foreign_socket_dir(str(tmp_path / "elsewhere.sock")) is None


def test_a_request_names_this_home_however_it_spells_it(tmp_path: Path) -> None:
    from tsukud.daemon import same_home

    home = tmp_path / "home"
    home.mkdir()
    assert same_home(str(home), home) and same_home(f"{home}/", home)
    assert same_home(str(tmp_path / "." / "home"), home)
    assert not same_home(str(tmp_path), home)
    assert not same_home(str(tmp_path / "missing"), home)
    assert not same_home("a\0b", home)  # not a path at all: refused, not a crash
