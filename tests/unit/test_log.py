from __future__ import annotations

import json
from pathlib import Path

from tsukud import log
from tsukud.secrets import REDACTED, Redactor


def test_json_lines_rotate_and_scrub_secrets(tmp_path: Path) -> None:
    key = "sk-ant-api03-" + "z" * 40
    path = tmp_path / "logs" / "tsukud.log"
    log.configure(path, max_bytes=4096, backups=2, redactor=Redactor([key]))
    try:
        lg = log.get()
        for i in range(200):
            lg.info("call.done", n=i, detail=f"upstream said: bad key {key}", api_key="whatever")
    finally:
        log.close()
    files = sorted(path.parent.iterdir())
    assert [f.name for f in files] == ["tsukud.log", "tsukud.log.1", "tsukud.log.2"]
    assert all(f.stat().st_size <= 4096 + 512 for f in files)
    for f in files:
        for line in f.read_text().splitlines():
            rec = json.loads(line)
            assert rec["event"] == "call.done" and rec["level"] == "info"
            assert key not in line
            assert rec["api_key"] == REDACTED
            assert rec["detail"] == f"upstream said: bad key {REDACTED}"


def test_redactor_names_and_values() -> None:
    r = Redactor(["ghp_0123456789abcdef", "abc"])  # under the threshold
    out = r.value(
        {
            "github_token": "x-anything",
            "input_tokens": 12,
            "nested": ["ghp_0123456789abcdef!"],
            "note": "abc is fine",
        }
    )
    assert out == {
        "github_token": REDACTED,
        "input_tokens": 12,
        "nested": [f"{REDACTED}!"],
        "note": "abc is fine",
    }
