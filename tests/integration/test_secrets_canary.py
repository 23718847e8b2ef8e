"""A planted API key must appear in no log line, event, or error, whatever path it takes."""

from __future__ import annotations

import os
import secrets
import signal
from pathlib import Path

import pytest

from tests.conftest import Tsuku
from tsukuctl.client import RemoteError
from tsukud.secrets import REDACTED


def test_canary_keys_never_leak(tsuku: Tsuku) -> None:
    env_key = "sk-ant-api03-CANARY" + secrets.token_hex(16)
    file_key = "ghp_CANARY" + secrets.token_hex(16)
    stdin_key = "AIzaCANARY" + secrets.token_hex(16)
    canaries = (env_key, file_key, stdin_key)
    tsuku.env["ANTHROPIC_API_KEY"] = env_key
    cfg = tsuku.home / "config.toml"
    cfg.write_text(f'[secrets]\ngithub_token = "{file_key}"\n')
    os.chmod(cfg, 0o600)
    proc = tsuku.start("--log-stderr")
    outputs: list[str] = []

    def ctl(*args: str, input: str | None = None) -> None:
        cp = tsuku.ctl(*args, input=input)
        outputs.extend([cp.stdout, cp.stderr])

    ctl("status", "--json")
    ctl("config", "list")
    ctl("config", "list", "--json")
    ctl("config", "get", "secrets.anthropic_api_key")
    ctl("config", "get", "secrets.github_token", "--json")
    ctl("config", "set", "secrets.google_api_key", input=stdin_key)
    ctl("config", "set", "secrets.google_api_key", stdin_key)  # refused: on argv

    with tsuku.client() as c:
        c.call(
            "events.append",
            {
                "events": [
                    {
                        "type": "client.note",
                        "payload": {"leak": env_key, "nested": {"h": f"Bearer {file_key}"}},
                    },
                    {
                        "type": "client.note",
                        "payload": {"api_key": "short", "msg": f"x{stdin_key}y"},
                    },
                ]
            },
        )
        for method, params in [
            (env_key, {}),  # unknown method named after the key
            ("events.list", {"limit": env_key}),
            ("budget.reserve", {"amount_usd": 99.0, "purpose": file_key, "confirmed": True}),
            ("config.get", {"key": stdin_key}),
        ]:
            with pytest.raises(RemoteError) as e:
                c.call(method, params)
            outputs.append(e.value.message + e.value.hint + repr(e.value.data))
        g = c.call("budget.reserve", {"amount_usd": 0.01, "purpose": f"run {env_key}"})
        c.call("budget.settle", {"reservation": g["reservation"], "actual_usd": 0.0})

    ctl("events", "--json", "--limit", "0")
    ctl("events", "--csv", "--limit", "0")
    ctl("events", "summary", "--by", "session")
    ctl("daemon", "logs", "-n", "1000")
    proc.send_signal(signal.SIGTERM)
    _out, err = proc.communicate(timeout=15)
    outputs.append(err.decode(errors="replace"))

    written = [p for p in tsuku.home.rglob("*") if p.is_file() and p.name != "config.toml"]
    assert any(p.name == "tsuku.db" for p in written)
    for canary in canaries:
        for text in outputs:
            assert canary not in text
        for p in written:
            assert canary.encode() not in p.read_bytes(), f"{canary[:12]}… found in {p}"
    # The redacted events are still there, readable, and say what was removed.
    events = tsuku.home / "tsuku.db"
    marker = REDACTED.encode()
    assert marker in events.read_bytes() or any(
        marker in Path(str(events) + sfx).read_bytes()
        for sfx in ("-wal",)
        if Path(str(events) + sfx).exists()
    )
