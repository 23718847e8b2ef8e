"""The real tsukud and tsukuctl processes, as a user runs them."""

from __future__ import annotations

import csv
import io
import json
import os
import signal
import socket
import sqlite3
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from tests.conftest import Tsuku
from tests.waiting import wait_until
from tsukud.errors import ExitCode
from tsukud.launch import RemoteError

pytestmark = pytest.mark.ctl_process  # the daemon's life (auto-start, stop, logs): real processes


def test_autostart_status_and_socket_permissions(tsuku: Tsuku) -> None:
    cp = tsuku.ctl("status", check=True)
    assert "tsukud 0.1.0" in cp.stdout
    assert "of $5.00 today" in cp.stdout and "0 of 10 in the last hour" in cp.stdout
    assert stat.S_IMODE(tsuku.socket.stat().st_mode) == 0o600
    assert stat.S_IMODE(tsuku.socket.parent.stat().st_mode) == 0o700
    st = json.loads(tsuku.ctl("status", "--json", check=True).stdout)
    assert st["events"]["count"] >= 1
    assert st["budget"]["daily_budget_usd"] == 5.0
    assert st["generations"] == {"count": 0, "limit": 10}
    assert st["socket"] == str(tsuku.socket)


def test_no_start_flag_reports_daemon_unavailable(tsuku: Tsuku) -> None:
    cp = tsuku.ctl("--no-start", "status")
    assert cp.returncode == ExitCode.DAEMON_UNAVAILABLE
    assert "no tsukud answers" in cp.stderr and "hint:" in cp.stderr
    # The hint names what a user runs, not the daemon's own invocation.
    assert "tsukuctl daemon start" in cp.stderr and "tsukud --foreground" not in cp.stderr


def test_events_filters_and_formats(daemon: Tsuku) -> None:
    daemon.call(
        "events.append",
        {
            "events": [
                {
                    "type": "client.note",
                    "payload": {"n": i, "provider": "p1" if i % 2 else "p2"},
                    "session": "sess-a" if i < 3 else "sess-b",
                }
                for i in range(6)
            ]
        },
    )
    rows = [
        json.loads(line) for line in daemon.ctl("events", "--json", check=True).stdout.splitlines()
    ]
    assert [r["type"] for r in rows][:1] == ["daemon.started"]
    assert [r["payload"]["n"] for r in rows if r["type"] == "client.note"] == list(range(6))
    assert all(set(r) == {"id", "ts", "type", "session", "payload", "hash"} for r in rows)

    sess = daemon.ctl("events", "--session", "sess-b", "--json", check=True).stdout.splitlines()
    assert [json.loads(x)["payload"]["n"] for x in sess] == [3, 4, 5]
    typed = daemon.ctl("events", "--type", "client.*", "--limit", "2", "--json", check=True)
    assert [json.loads(x)["payload"]["n"] for x in typed.stdout.splitlines()] == [4, 5]
    assert (
        daemon.ctl("events", "--since", "1h", "--type", "client.note", "--json").stdout.count("\n")
        == 6
    )
    assert daemon.ctl("events", "--until", "2000-01-01", "--json").stdout == ""
    table = daemon.ctl("events", check=True).stdout
    assert "client.note" in table and "TYPE" in table

    out = daemon.ctl("events", "--csv", "--type", "client.note", check=True).stdout
    parsed = list(csv.DictReader(io.StringIO(out)))
    assert len(parsed) == 6 and parsed[1]["provider"] == "p1"
    assert json.loads(parsed[0]["payload"])["n"] == 0

    bad = daemon.ctl("events", "--since", "last tuesday")
    assert bad.returncode == ExitCode.USAGE and "7d" in bad.stderr


def test_events_summary_by_each_key(daemon: Tsuku) -> None:
    res = daemon.ctl("events", "summary", "--json", check=True)
    body = json.loads(res.stdout)
    assert body["by"] == "day" and body["totals"]["events"] >= 1
    for by in ("day", "hour", "provider", "model", "session", "type"):
        cp = daemon.ctl("events", "summary", "--by", by, check=True)
        assert "total" in cp.stdout
    bytype = json.loads(daemon.ctl("events", "summary", "--by", "type", "--json").stdout)
    assert any(g["key"] == "daemon.started" for g in bytype["groups"])


# Events a client may not append, and how the refusal names the one of the request.
REFUSED_APPENDS = [
    ({"type": "llm.turn", "payload": {}}, "events[2].type: event type 'llm.turn' is reserved"),
    ({"type": "client.Bad!"}, "events[2].type: invalid event type 'client.Bad!'"),
    ({"type": "client.x", "session": "s" * 129}, "events[2].session: invalid session id"),
]


def test_client_cannot_forge_daemon_events(daemon: Tsuku) -> None:
    with daemon.client() as c, pytest.raises(Exception) as e:
        c.call("events.append", {"events": [{"type": "llm.turn", "payload": {"cost_usd": -5}}]})
    assert "reserved for the daemon" in str(e.value)
    # A request's events are one whole: the refused event is named by its index, and
    # nothing of its request is written, not even the events before it.
    sent = [{"type": "client.refused", "payload": {"i": i}} for i in range(4)]
    for bad, message in REFUSED_APPENDS:
        with pytest.raises(RemoteError) as refused:
            daemon.call("events.append", {"events": [*sent[:2], bad, *sent[2:]]})
        assert refused.value.remote_code == "invalid_params"
        assert message in refused.value.message and refused.value.hint
    for events, message in (([], "must not be empty"), (sent * 2501, "at most 10000 events")):
        with pytest.raises(RemoteError) as refused:
            daemon.call("events.append", {"events": events})
        assert message in refused.value.message
    done = daemon.call("events.append", {"events": [{"type": "client.ok"}]})
    assert done["durable"] is True
    conn = sqlite3.connect(f"file:{daemon.home / 'tsuku.db'}?mode=ro", uri=True)
    try:
        kept = conn.execute("SELECT type FROM events WHERE type LIKE 'client.%'").fetchall()
    finally:
        conn.close()
    assert kept == [("client.ok",)]
    daemon.ctl("events", "verify", check=True)  # no hash was handed out for them either


def test_verify_passes_then_detects_tampering(daemon: Tsuku) -> None:
    daemon.call(
        "events.append", {"events": [{"type": "client.x", "payload": {"i": i}} for i in range(10)]}
    )
    ok = daemon.ctl("events", "verify", check=True)
    assert "hash chain intact" in ok.stdout
    conn = sqlite3.connect(daemon.home / "tsuku.db")
    conn.execute("DROP TRIGGER events_no_update")
    conn.execute("UPDATE events SET payload = '{\"i\":42}' WHERE id = 5")
    conn.commit()
    conn.close()
    bad = daemon.ctl("events", "verify")
    assert bad.returncode == ExitCode.LEDGER_CORRUPT
    assert "event 5" in bad.stderr


def test_config_set_get_list_and_secrets_from_stdin_only(daemon: Tsuku) -> None:
    assert daemon.ctl("config", "set", "llm.daily_budget", "2.5", check=True).returncode == 0
    assert daemon.ctl("config", "get", "llm.daily_budget", check=True).stdout.strip() == "2.5"
    st = json.loads(daemon.ctl("status", "--json").stdout)
    assert st["budget"]["daily_budget_usd"] == 2.5  # applied live

    refused = daemon.ctl("config", "set", "secrets.anthropic_api_key", "sk-ant-on-argv-123")
    assert (
        refused.returncode == ExitCode.USAGE
        and "never taken from the command line" in refused.stderr
    )
    ok = daemon.ctl(
        "config", "set", "secrets.anthropic_api_key", input="sk-ant-from-stdin-123\n", check=True
    )
    assert "sk-ant" not in ok.stdout
    assert daemon.ctl("config", "get", "secrets.anthropic_api_key").stdout.strip() == "(set)"
    listing = daemon.ctl("config", "list", check=True).stdout
    assert "secrets.anthropic_api_key" in listing and "(set)" in listing and "sk-ant" not in listing
    cfg = daemon.home / "config.toml"
    assert stat.S_IMODE(cfg.stat().st_mode) == 0o600
    assert "sk-ant-from-stdin-123" in cfg.read_text()

    bad = daemon.ctl("config", "set", "llm.hourly_limit", "many")
    assert bad.returncode == ExitCode.CONFIG
    assert "must be a whole number (e.g. 10), got 'many'" in bad.stderr
    unknown = daemon.ctl("config", "get", "llm.nope")
    assert unknown.returncode == ExitCode.USAGE


def test_env_overrides_file_and_says_so(tsuku: Tsuku) -> None:
    tsuku.env["TSUKU_LLM_HOURLY_LIMIT"] = "7"
    tsuku.start()
    s = json.loads(tsuku.ctl("config", "get", "llm.hourly_limit", "--json").stdout)
    assert s == {**s, "value": 7, "source": "env:TSUKU_LLM_HOURLY_LIMIT"}
    cp = tsuku.ctl("config", "set", "llm.hourly_limit", "3", check=True)
    assert "overrides the file" in cp.stderr


def test_a_config_others_can_change_refuses_to_start_with_fix(tsuku: Tsuku) -> None:
    cfg = tsuku.home / "config.toml"
    cfg.write_text('[secrets]\nanthropic_api_key = "sk-ant-leaky-0123456789"\n')
    os.chmod(cfg, 0o666)
    cp = tsuku.ctl("status")
    assert cp.returncode == ExitCode.DAEMON_UNAVAILABLE
    assert f"chmod 600 {cfg}" in cp.stderr
    assert "sk-ant-leaky" not in cp.stderr
    direct = subprocess.run(
        [sys.executable, "-m", "tsukud", "--foreground"],
        env=tsuku.env,
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert direct.returncode == ExitCode.CONFIG
    assert "writable by other users" in direct.stderr and f"chmod 600 {cfg}" in direct.stderr
    assert cp.stderr.count(f"chmod 600 {cfg}") == 1  # the start-up hint, printed once


def test_a_readable_config_stops_only_what_needs_its_keys(tsuku: Tsuku) -> None:
    """An editor that writes config.toml 0644 (issue 29, point 5): `status` and `list`
    work and name the fix; what reads a key from the file stops with it (exit 22), the
    same before and after the daemon started (the file keeps the person's mode); the
    hint's own fix, which changes only the mode, is picked up at once."""
    cfg = tsuku.home / "config.toml"
    tsuku.home.mkdir(mode=0o700, exist_ok=True)
    cfg.write_text(
        '[llm]\ndaily_budget = 1.5\n[secrets]\nanthropic_api_key = "sk-ant-leaky-0123456789"\n'
    )
    os.chmod(cfg, 0o644)
    for _ in range(2):  # the first starts the daemon
        cp = tsuku.ctl("status")
        assert cp.returncode == 0, cp.stderr
        assert "of $1.50 today" in cp.stdout
        assert cp.stderr.count(f"chmod 600 {cfg}") == 1 and "readable by other" in cp.stderr
        assert tsuku.ctl("list").returncode == 0
        key = tsuku.ctl("config", "get", "secrets.anthropic_api_key")
        assert key.returncode == ExitCode.CONFIG and f"chmod 600 {cfg}" in key.stderr
        assert os.stat(cfg).st_mode & 0o777 == 0o644
    assert "sk-ant-leaky" not in cp.stdout + cp.stderr + key.stdout + key.stderr
    os.chmod(cfg, 0o600)
    key = tsuku.ctl("config", "get", "secrets.anthropic_api_key", check=True)
    assert "(set)" in key.stdout
    cp = tsuku.ctl("status", check=True)
    assert "chmod" not in cp.stderr


def test_a_typo_in_the_config_locks_nothing_out_and_a_fix_is_picked_up_live(
    tsuku: Tsuku,
) -> None:
    """Only a command that uses the mistyped setting fails, with one error naming the
    line and the fix (status shows its default and the problem); `config` fixes it
    without a daemon, and the running daemon reads the fixed file before its next
    request (recording config.changed)."""
    cfg = tsuku.home / "config.toml"
    cfg.write_text("# limits\n[llm]\nhourly_limit = 4\ndaily_budjet = 1.5\n")
    cfg.chmod(0o600)
    status = tsuku.ctl("status")  # starts the daemon; the budget is the mistyped key
    assert status.returncode == 0, status.stderr
    assert "of $5.00 today" in status.stdout and "llm.daily_budget" in status.stdout
    assert status.stderr.count("line 4: unknown setting 'llm.daily_budjet'") == 1
    assert "did you mean llm.daily_budget?" in status.stderr
    assert status.stderr.count("hint:") == 1 and "tsukuctl config" in status.stderr
    assert tsuku.ctl("events", "--limit", "1").returncode == 0  # needs no setting
    assert tsuku.ctl("config", "get", "llm.hourly_limit", check=True).stdout == "4\n"
    tsuku.ctl("config", "unset", "llm.daily_budjet", check=True)
    tsuku.ctl("config", "set", "llm.daily_budget", "1.5", check=True)
    assert cfg.read_text() == "# limits\n[llm]\nhourly_limit = 4\ndaily_budget = 1.5\n"
    st = json.loads(tsuku.ctl("status", "--json", check=True).stdout)
    assert st["budget"]["daily_budget_usd"] == 1.5  # the same daemon, reloaded
    changed = [
        json.loads(line)
        for line in tsuku.ctl("events", "--type", "config.changed", "--json").stdout.splitlines()
    ]
    assert [(e["payload"]["key"], e["payload"]["source"]) for e in changed] == [
        ("llm.daily_budget", "file")
    ]


def test_single_instance_and_socket_not_hijacked(daemon: Tsuku) -> None:
    pid = daemon.daemon_pid()
    second = subprocess.run(
        [sys.executable, "-m", "tsukud", "--foreground"],
        env=daemon.env,
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert second.returncode != 0 and "already running" in second.stderr
    assert daemon.daemon_pid() == pid


def test_racing_autostarts_make_one_daemon(tsuku: Tsuku) -> None:
    results: list[subprocess.CompletedProcess[str]] = []

    def run() -> None:
        results.append(tsuku.ctl("status", "--json"))

    threads = [threading.Thread(target=run) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert all(r.returncode == 0 for r in results), [r.stderr for r in results]
    assert len({json.loads(r.stdout)["pid"] for r in results}) == 1
    started = [
        json.loads(x)
        for x in tsuku.ctl("events", "--type", "daemon.started", "--json").stdout.splitlines()
    ]
    assert len(started) == 1


def test_sigterm_stops_cleanly_and_records_it(daemon: Tsuku) -> None:
    proc = daemon.procs[0]
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=10) == 0
    assert not daemon.socket.exists()
    conn = sqlite3.connect(daemon.home / "tsuku.db")
    types = [r[0] for r in conn.execute("SELECT type FROM events ORDER BY id")]
    conn.close()
    assert types[0] == "daemon.started" and types[-1] == "daemon.stopped"


def test_in_flight_request_gets_shutting_down(tsuku: Tsuku) -> None:
    """A request still running when the daemon stops is answered ``shutting_down``, not
    dropped. The request is an LLM call whose provider has not answered yet, so it is
    in flight for certain when the stop arrives: the one right answer is the error."""
    from tests.fakes import anthropic_server as anth
    from tests.fakes.anthropic_server import FakeAnthropic

    with FakeAnthropic() as claude:
        claude.reply([anth.text("too late")], delay=60)  # the close wakes it
        tsuku.env.update(
            {
                "ANTHROPIC_API_KEY": "sk-ant-api03-SHUTDOWN0123456789",
                "ANTHROPIC_BASE_URL": claude.url,
            }
        )
        tsuku.start()
        with tsuku.client() as c:
            rid = c.send("llm.test", {})
            deadline = time.monotonic() + 15
            while not claude.requests:  # the daemon is waiting on the provider now
                assert time.monotonic() < deadline, "the daemon never called the provider"
                time.sleep(0.01)
            tsuku.call("daemon.stop")
            frames = []
            while True:
                f = c.read_frame()
                frames.append(f)
                if "result" in f or "error" in f:
                    break
        assert tsuku.procs[0].wait(timeout=10) == 0
    final = frames[-1]
    assert final["id"] == rid
    assert "result" not in final
    assert final["error"]["code"] == "shutting_down", final


@pytest.mark.slow  # real daemon stop/restart processes; the other daemon CLI tests stay
def test_daemon_stop_and_restart_commands(tsuku: Tsuku) -> None:
    tsuku.ctl("daemon", "start", check=True)
    pid = tsuku.daemon_pid()
    cp = tsuku.ctl("daemon", "restart", check=True)
    assert f"stopped (pid {pid})" in cp.stdout
    assert tsuku.daemon_pid() != pid
    cp = tsuku.ctl("daemon", "stop", check=True)
    assert "stopped" in cp.stdout
    assert tsuku.ctl("--no-start", "status").returncode == ExitCode.DAEMON_UNAVAILABLE
    logs = tsuku.ctl("daemon", "logs", check=True).stdout
    assert '"event": "daemon.started"' in logs


def test_systemd_socket_activation(tsuku: Tsuku) -> None:
    tsuku.socket.parent.mkdir(parents=True, mode=0o700)
    lsock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    lsock.bind(str(tsuku.socket))
    lsock.listen(16)
    fd = lsock.fileno()
    code = (
        "import os, sys\n"
        f"os.dup2({fd}, 3)\n"
        "os.environ['LISTEN_PID'] = str(os.getpid()); os.environ['LISTEN_FDS'] = '1'\n"
        "from tsukud.__main__ import main\n"
        "sys.exit(main(['--foreground']))\n"
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", code],
        env=tsuku.env,
        pass_fds=(fd,),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    tsuku.procs.append(proc)
    lsock.close()
    tsuku.wait_ready(proc)
    st = json.loads(tsuku.ctl("status", "--json", check=True).stdout)
    assert st["activation"] == "systemd" and st["pid"] == proc.pid
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=10) == 0
    assert tsuku.socket.exists()  # the service manager owns an activated socket


def test_cold_start_is_quick(tsuku: Tsuku) -> None:
    """Not a benchmark (see bench/), only a guard against importing an SDK (or the
    DevTools WebSocket stack, or the PostgreSQL driver) at start, where every method
    module is loaded: each of the suite's hundreds of daemons would pay for it."""
    t0 = time.monotonic()
    tsuku.start()
    assert time.monotonic() - t0 < 5
    # A fresh daemon serves the core methods from its start and loads the features'
    # on the first request naming one (rpc/registry.MethodTable): that first request
    # is answered, not refused as unknown.
    assert isinstance(tsuku.call("batch.status"), dict)
    out = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys, tsukud.daemon, tsukud.rpc.registry as r; r.load_methods(); "
            "heavy = ('anthropic', 'google.genai', 'aiodocker', 'trio_websocket', 'psycopg'); "
            "print(sorted(m for m in heavy if m in sys.modules))",
        ],
        capture_output=True,
        text=True,
        env=tsuku.env,
        check=True,
    )
    assert out.stdout.strip() == "[]"


def test_this_module_s_daemons_are_processes_of_their_own(daemon: Tsuku) -> None:
    """The daemons of the tests named in tests/daemon_forks.EXEC_STARTS (this module's:
    its subject is the process) are a fresh ``python -m tsukud``, not forked from the
    worker's pre-imported parent: the autouse fixture that says so is wired in."""
    (proc,) = daemon.procs
    cmdline = (Path("/proc") / str(proc.pid) / "cmdline").read_bytes().split(b"\0")
    assert b"tsukud" in cmdline and b"--foreground" in cmdline, cmdline
    # A fresh interpreter, so what it froze before serving is its own doing (a forked
    # daemon inherits the parent's freeze): start-up's objects are out of the
    # collector's full passes, which otherwise hold the loop ~100 ms each under load.
    log = daemon.home / "logs" / "tsukud.log"

    def started() -> list[dict[str, object]]:
        lines = log.read_text().splitlines() if log.exists() else []
        return [e for e in map(json.loads, lines) if e.get("event") == "daemon.started"]

    wait_until(started, "the daemon.started log line")
    (line,) = started()
    assert isinstance(line["gc_frozen"], int) and line["gc_frozen"] > 1000, line
