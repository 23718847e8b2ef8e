"""A config file with a problem: ``status`` still answers and names it; ``config list``
and ``config get`` show what the problem leaves fine as it is."""

from __future__ import annotations

import json
import os

from tests.conftest import Tsuku


def write_config(t: Tsuku, text: str) -> None:
    t.home.mkdir(parents=True, exist_ok=True, mode=0o700)
    cfg = t.home / "config.toml"
    cfg.write_text(text)
    os.chmod(cfg, 0o600)


def test_status_reports_a_typo_that_spoils_a_setting_it_shows_and_still_prints(
    daemon: Tsuku,
) -> None:
    write_config(daemon, "[llm]\ndaily_budget = 3.0\nhourly_limt = 3\n")
    cp = daemon.ctl("status")
    assert cp.returncode == 0, cp.stderr
    assert "of $3.00 today" in cp.stdout  # what the file gets right is in force
    assert "0 of 10 in the last hour" in cp.stdout  # the spoiled one: its default, marked
    assert "llm.hourly_limit" in cp.stdout and "(invalid)" in cp.stdout
    assert cp.stderr.count("problem:") == 1
    assert "line 3: unknown setting 'llm.hourly_limt'; did you mean llm.hourly_limit?" in (
        cp.stderr
    )
    st = json.loads(daemon.ctl("status", "--json", check=True).stdout)
    (problem,) = st["problems"]
    assert "llm.hourly_limt" in problem["message"] and "config edit" in problem["hint"]
    # A bad value in the caller's own shell still fails the command it was given to.
    cp = daemon.ctl("status", shell_env={"TSUKU_LLM_HOURLY_LIMIT": "lots"})
    assert cp.returncode == 22 and "TSUKU_LLM_HOURLY_LIMIT" in cp.stderr
