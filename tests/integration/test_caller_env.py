"""A running daemon applies the caller's environment to that caller's request only.

Each daemon here is started without the variable under test; the variable is then set
in the shell of one ``tsukuctl`` run, as a user would (``export …`` or ``VAR=… cmd``).
"""

from __future__ import annotations

import json
import os
import secrets
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import Tsuku
from tests.fakes import anthropic_server as anth
from tests.fakes.anthropic_server import FakeAnthropic
from tsukuctl.client import Client, RemoteError


@pytest.fixture
def claude() -> Iterator[FakeAnthropic]:
    with FakeAnthropic() as f:
        yield f


def claude_row(text: str) -> list[str]:
    return next(line.split() for line in text.splitlines() if "claude" in line)


@pytest.mark.slow  # a daemon loading the LLM SDKs; the keys-never-logged test stays
def test_llm_status_sees_the_key_of_the_shell_that_asks(daemon: Tsuku) -> None:
    assert "ANTHROPIC_API_KEY" not in daemon.env
    key = "sk-ant-api03-callerStatus" + secrets.token_hex(8)
    cp = daemon.ctl("llm", "status", shell_env={"ANTHROPIC_API_KEY": key})
    assert cp.returncode == 0, cp.stderr
    assert claude_row(cp.stdout)[3:5] == ["(set)", "yes"]  # key, usable
    assert key not in cp.stdout + cp.stderr
    # Another shell, without it: the daemon did not keep it.
    cp = daemon.ctl("llm", "status", check=True)
    assert claude_row(cp.stdout)[3:5] == ["(not", "set)"]


def test_budget_from_the_callers_environment_for_that_request_only(daemon: Tsuku) -> None:
    cfg = daemon.home / "config.toml"
    cfg.write_text("[llm]\ndaily_budget = 3.0\n")
    os.chmod(cfg, 0o600)
    daemon.call("config.set", {"key": "llm.hourly_limit", "value": 7})  # reloads the file

    cp = daemon.ctl("status", shell_env={"TSUKU_LLM_DAILY_BUDGET": "1"})
    assert cp.returncode == 0, cp.stderr
    assert "of $1.00 today" in cp.stdout  # the caller's environment beats the file
    rows = {line.split()[0]: line.split()[1:] for line in cp.stdout.splitlines()[8:]}
    budget = " ".join(rows["llm.daily_budget"])
    assert budget == "1.0 from your environment ($TSUKU_LLM_DAILY_BUDGET)"
    assert rows["llm.hourly_limit"] == ["7", "from", "config", "file"]
    assert "llm.confirm_threshold" not in rows  # defaults are not listed

    plain = json.loads(daemon.ctl("status", "--json", check=True).stdout)
    assert plain["budget"]["daily_budget_usd"] == 3.0  # the file again
    (budget,) = [s for s in plain["settings"] if s["key"] == "llm.daily_budget"]
    assert budget["source"] == "file"

    cp = daemon.ctl("status", shell_env={"TSUKU_LLM_DAILY_BUDGET": "lots"})
    assert cp.returncode == 22, cp.stderr  # a bad value in the caller's shell: config error
    assert "TSUKU_LLM_DAILY_BUDGET" in cp.stderr and "Traceback" not in cp.stderr


def test_callers_keys_are_used_and_never_logged_evented_or_stored(
    tsuku: Tsuku, claude: FakeAnthropic, monkeypatch: pytest.MonkeyPatch
) -> None:
    key = "callercanary" + secrets.token_hex(16)  # no known token shape: only scoping hides it
    token = "ghcanary" + secrets.token_hex(16)
    shell = {"ANTHROPIC_API_KEY": key, "GITHUB_TOKEN": token}
    tsuku.env["ANTHROPIC_BASE_URL"] = claude.url
    proc = tsuku.start("--log-stderr")
    outputs: list[str] = []

    def ctl(*args: str) -> subprocess.CompletedProcess[str]:
        cp = tsuku.ctl(*args, shell_env=shell)
        outputs.extend([cp.stdout, cp.stderr])
        return cp

    claude.reply([anth.text("OK")])
    res = json.loads(ctl("llm", "test", "--json").stdout)
    assert res["provider"] == "claude"
    sent = claude.requests[-1].headers  # the caller's key was used (as a bearer token)
    assert key in (sent.get("x-api-key"), sent.get("authorization", "")[7:])
    # The provider refuses it, quoting it back: the error the caller sees is scrubbed.
    claude.error(401, "authentication_error", f"invalid x-api-key: {key}")
    cp = ctl("llm", "test")
    assert cp.returncode != 0 and "authentication" in cp.stderr.lower()
    ctl("status")
    ctl("status", "--json")
    ctl("llm", "status", "--json")
    ctl("config", "list")

    # A request carrying the keys that tries to write them into the ledger, or to have
    # them echoed in an error frame.
    for name, value in {
        **shell,
        **{k: tsuku.env[k] for k in ("TSUKU_HOME", "TSUKU_SOCKET")},
    }.items():
        monkeypatch.setenv(name, value)
    with Client.connect(autostart=False) as c:  # as tsukuctl does: for this shell
        c.call("events.append", {"events": [{"type": "client.note", "payload": {"k": key}}]})
        for method, params in [(key, {}), ("events.list", {"limit": token})]:
            with pytest.raises(RemoteError) as e:
                c.call(method, params)
            outputs.append(e.value.message + e.value.hint + repr(e.value.data))
    for name in shell:
        monkeypatch.delenv(name)

    ctl("events", "--json", "--limit", "0")
    ctl("daemon", "logs", "-n", "1000")
    proc.send_signal(signal.SIGTERM)
    _out, err = proc.communicate(timeout=15)
    outputs.append(err.decode(errors="replace"))

    written = [p for p in tsuku.home.rglob("*") if p.is_file()]
    assert any(p.name == "tsuku.db" for p in written)
    assert any(p.name == "tsukud.log" for p in written)
    for canary in (key, token):
        for text in outputs:
            assert canary not in text
        for p in written:
            assert canary.encode() not in p.read_bytes(), f"{canary[:16]}… found in {p}"


def test_an_auto_started_daemon_keeps_no_one_off_callers_environment(tsuku: Tsuku) -> None:
    token = "ghcanary" + secrets.token_hex(16)
    one_off = {"TSUKU_LLM_DAILY_BUDGET": "1", "GITHUB_TOKEN": token}
    cp = tsuku.ctl("status", shell_env=one_off)  # no daemon yet: this starts it
    assert cp.returncode == 0, cp.stderr
    assert "of $1.00 today" in cp.stdout  # the starting request has them all the same
    pid = tsuku.daemon_pid()
    try:
        # Another shell, without them: the default budget and no token.
        plain = json.loads(tsuku.ctl("status", "--json", check=True).stdout)
        assert plain["budget"]["daily_budget_usd"] == 5.0
        (budget,) = [s for s in plain["settings"] if s["key"] == "llm.daily_budget"]
        assert budget["source"] == "default"
        cp = tsuku.ctl("status", check=True)
        assert "of $5.00 today" in cp.stdout and "tsukud's environment" not in cp.stdout, cp.stdout
        environ = dict(
            item.split("=", 1)
            for item in Path(f"/proc/{pid}/environ").read_bytes().decode().split("\0")
            if "=" in item
        )
        assert "TSUKU_LLM_DAILY_BUDGET" not in environ and "GITHUB_TOKEN" not in environ
        assert token not in json.dumps(environ)
        # What it needs to run, and where it is, stays.
        assert environ["TSUKU_HOME"] == tsuku.env["TSUKU_HOME"]
        assert environ["TSUKU_SOCKET"] == tsuku.env["TSUKU_SOCKET"]
        assert environ["PATH"] == tsuku.env["PATH"]
    finally:
        os.kill(pid, signal.SIGTERM)


@pytest.mark.slow  # a daemon loading the LLM SDKs; the keys-never-logged test stays
def test_the_variable_api_key_env_names_travels_like_anthropic_api_key(
    tsuku: Tsuku, claude: FakeAnthropic
) -> None:
    """The design's ``[llm.claude] api_key_env``: the variable it names is the caller's,
    sent per request like ANTHROPIC_API_KEY (and used before it), and an auto-started
    daemon keeps none of it."""
    cfg = tsuku.home / "config.toml"
    tsuku.home.mkdir(parents=True, exist_ok=True)
    cfg.write_text('[llm.claude]\napi_key_env = "WORK_CLAUDE_KEY"\n')
    os.chmod(cfg, 0o600)
    tsuku.env["ANTHROPIC_BASE_URL"] = claude.url
    key = "workcanary" + secrets.token_hex(16)
    shell = {"WORK_CLAUDE_KEY": key, "ANTHROPIC_API_KEY": "sk-ant-api03-not-this-one-0000"}
    cp = tsuku.ctl("llm", "status", shell_env=shell)  # no daemon yet: this starts it
    assert cp.returncode == 0, cp.stderr
    assert claude_row(cp.stdout)[3:5] == ["(set)", "yes"]
    pid = tsuku.daemon_pid()
    try:
        claude.reply([anth.text("OK")])
        tsuku.ctl("llm", "test", shell_env=shell, check=True)
        sent = claude.requests[-1].headers
        assert key in (sent.get("x-api-key"), sent.get("authorization", "")[7:])
        # Another shell, without it: the daemon did not keep it.
        cp = tsuku.ctl("llm", "status", check=True)
        assert claude_row(cp.stdout)[3:5] == ["(not", "set)"]
        environ = Path(f"/proc/{pid}/environ").read_bytes().decode(errors="replace")
        assert "WORK_CLAUDE_KEY" not in environ and key not in environ
        log = (tsuku.home / "logs" / "tsukud.log").read_text()
        assert key not in log
    finally:
        os.kill(pid, signal.SIGTERM)
