"""`tsukuctl doctor`: a healthy setup, and each line's bad state with its fix.

In this directory because the healthy walk needs the container runtime and the
validation image (the ``image`` fixture); the bad states each break one thing.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import Tsuku
from tsukud.errors import ExitCode

pytestmark = pytest.mark.docker

CANARY = "sk-ant-doctor-canary-0123456789abcdef"


def healthy(t: Tsuku) -> Tsuku:
    """PATH holds $TSUKU_HOME/bin, bash's rc sources the installed hook script."""
    user = t.home / "user"
    user.mkdir()
    t.env.update(HOME=str(user), SHELL="/bin/bash")
    t.env["PATH"] = f"{t.home / 'bin'}{os.pathsep}{t.env['PATH']}"
    hooks = t.home / "share" / "hooks"
    hooks.mkdir(parents=True)
    (hooks / "tsuku.bash").write_text("# the hook\n")
    (user / ".bashrc").write_text(f'. "{hooks}/tsuku.bash"  # tsuku hook (managed)\n')
    return t


def doctor(t: Tsuku) -> tuple[int, dict[str, dict[str, Any]], str]:
    cp = t.ctl("doctor", "--json")
    checks = {c["check"]: c for c in json.loads(cp.stdout)["checks"]}
    human = t.ctl("doctor")
    assert human.returncode == cp.returncode
    return cp.returncode, checks, human.stdout


def test_a_healthy_setup(tsuku: Tsuku, image: str) -> None:
    t = healthy(tsuku)
    t.env["ANTHROPIC_API_KEY"] = CANARY
    t.start()
    rc, checks, human = doctor(t)
    assert rc == 0, human
    assert list(checks) == ["daemon", "home", "config", "keys", "sandbox", "image", "hooks", "PATH"]
    assert {c["state"] for c in checks.values()} == {"ok"}, human
    assert checks["daemon"]["detail"].startswith("running, version ")
    assert str(t.home) in checks["daemon"]["detail"]
    assert checks["home"]["detail"] == f"{t.home} writable, 700"
    assert (
        "anthropic_api_key set (tsukud's environment ($ANTHROPIC_API_KEY))"
        in (checks["keys"]["detail"])
    )
    assert "github_token not set" in checks["keys"]["detail"]
    assert checks["image"]["detail"] == f"{image} present"
    assert checks["hooks"]["detail"].startswith("bash: ")
    lines = human.splitlines()
    assert len(lines) == 8 and lines[0].startswith("ok    daemon")
    assert CANARY not in human and CANARY not in json.dumps(checks)


def test_a_bad_setting_names_its_key_line_and_fix(tsuku: Tsuku) -> None:
    t = healthy(tsuku)
    t.home.mkdir(exist_ok=True, mode=0o700)
    (t.home / "config.toml").write_text("[llm]\ndaily_budget = 'lots'\n")
    (t.home / "config.toml").chmod(0o600)
    rc, checks, human = doctor(t)
    assert rc == ExitCode.GENERAL
    config = checks["config"]
    assert config["state"] == "FAIL" and "daily_budget" in config["detail"]
    assert "line 2" in config["detail"] and config["fix"]
    assert checks["keys"]["state"] == "warn"  # the other settings still read
    # The daemon runs (the file spoils one setting) and its status still answers: the
    # config line above is where the problem is reported.
    assert checks["daemon"]["state"] == "ok"
    assert checks["daemon"]["detail"].startswith("running, version ")
    assert checks["sandbox"]["state"] != "skip"
    assert "fix: " in human


def test_a_config_the_daemon_refuses_does_not_stop_doctor(tsuku: Tsuku) -> None:
    t = healthy(tsuku)
    t.home.mkdir(exist_ok=True, mode=0o700)
    (t.home / "config.toml").write_text("[llm]\ndaily_budget = 2.0\n")
    (t.home / "config.toml").chmod(0o646)  # others could change it: refused
    rc, checks, _ = doctor(t)
    assert rc == ExitCode.GENERAL
    assert (
        checks["config"]["state"] == "FAIL"
        and "writable by other users" in checks["config"]["detail"]
    )
    assert checks["config"]["fix"] == f"Fix it with: chmod 600 {t.home / 'config.toml'}"
    assert checks["daemon"]["state"] == "FAIL" and checks["daemon"]["fix"]
    assert (
        checks["keys"]["state"] == checks["sandbox"]["state"] == checks["image"]["state"] == "skip"
    )
    assert checks["home"]["state"] == checks["PATH"]["state"] == "ok"


def test_no_daemon_with_no_start(tsuku: Tsuku) -> None:
    cp = tsuku.ctl("--no-start", "doctor")
    assert cp.returncode == ExitCode.GENERAL
    daemon = cp.stdout.splitlines()[0]
    assert daemon.startswith("FAIL  daemon") and "not reachable" in daemon
    assert "tsukuctl daemon start" in cp.stdout.splitlines()[1]
    assert not (tsuku.home / "run" / "tsukud.lock").exists()


def test_home_open_to_others(tsuku: Tsuku) -> None:
    t = healthy(tsuku)
    t.start()
    t.home.chmod(0o755)
    rc, checks, _ = doctor(t)
    assert rc == ExitCode.GENERAL
    assert checks["home"] == {
        "check": "home",
        "state": "FAIL",
        "detail": f"{t.home} is 755: others can read it",
        "fix": f"chmod 700 {t.home}",
    }


def test_no_llm_key_is_a_warning(tsuku: Tsuku, image: str) -> None:
    t = healthy(tsuku)
    t.start()
    rc, checks, _ = doctor(t)
    assert rc == 0
    assert checks["keys"]["state"] == "warn" and "ANTHROPIC_API_KEY" in checks["keys"]["fix"]


def test_a_key_only_the_daemons_environment_holds_counts(tsuku: Tsuku, image: str) -> None:
    """A service unit's ``Environment=`` gives tsukud a key this shell never sees:
    doctor asks the daemon, so the key is set, and says where it lives."""
    t = healthy(tsuku)
    t.env["ANTHROPIC_API_KEY"] = CANARY
    t.start()
    del t.env["ANTHROPIC_API_KEY"]
    rc, checks, human = doctor(t)
    assert rc == 0, human
    assert checks["keys"]["state"] == "ok", human
    assert (
        "anthropic_api_key set (tsukud's environment ($ANTHROPIC_API_KEY))"
        in (checks["keys"]["detail"])
    )
    assert CANARY not in human


def test_unreachable_container_runtime(tsuku: Tsuku) -> None:
    t = healthy(tsuku)
    t.env["DOCKER_HOST"] = "unix:///nonexistent/docker.sock"
    t.start()
    rc, checks, _ = doctor(t)
    assert rc == ExitCode.GENERAL
    assert checks["sandbox"]["state"] == "FAIL" and "DOCKER_HOST" in checks["sandbox"]["fix"]
    assert checks["image"]["state"] == "skip"


def test_missing_validation_image(tsuku: Tsuku) -> None:
    t = healthy(tsuku)
    t.env["TSUKU_SANDBOX_IMAGE"] = "tsuku/no-such-image:local"
    t.start()
    rc, checks, _ = doctor(t)
    assert rc == ExitCode.GENERAL
    assert checks["sandbox"]["state"] == "ok"
    assert checks["image"]["state"] == "FAIL"
    assert checks["image"]["fix"] == "tsukuctl sandbox prepare"


def test_hooks_not_installed_or_broken(tsuku: Tsuku) -> None:
    t = healthy(tsuku)
    t.start()
    Path(t.env["HOME"], ".bashrc").write_text("# nothing of ours\n")
    rc, checks, _ = doctor(t)
    assert checks["hooks"]["state"] == "warn"
    assert checks["hooks"]["fix"] == "tsukuctl hook install"
    Path(t.env["HOME"], ".bashrc").write_text(". x  # tsuku hook (managed)\n")
    (t.home / "share" / "hooks" / "tsuku.bash").unlink()
    rc, checks, _ = doctor(t)
    assert rc == ExitCode.GENERAL and checks["hooks"]["state"] == "FAIL"


def test_bin_not_on_path(tsuku: Tsuku) -> None:
    t = healthy(tsuku)
    t.env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + "/usr/bin:/bin"
    t.start()
    rc, checks, _ = doctor(t)
    assert rc == ExitCode.GENERAL
    assert checks["PATH"]["state"] == "FAIL"
    # The hook is in place: only this shell predates it, and a new one is the fix.
    assert checks["PATH"]["fix"].startswith("open a new shell (the hook adds it)")
    Path(t.env["HOME"], ".bashrc").write_text("# nothing of ours\n")
    rc, checks, _ = doctor(t)
    assert checks["PATH"]["fix"].startswith(f'export PATH="{t.home / "bin"}:$PATH"')
    assert "tsukuctl hook install" in checks["PATH"]["fix"]


def test_config_check_reports_secrets_without_values(tsuku: Tsuku) -> None:
    env = {**tsuku.env, "GITHUB_TOKEN": CANARY}
    cp = subprocess.run(
        [sys.executable, "-m", "tsukud.config_check"], env=env, capture_output=True, text=True
    )
    found = json.loads(cp.stdout)
    assert cp.returncode == 0 and found["ok"] is True
    assert found["secrets"]["secrets.github_token"] == {"set": True, "source": "env:GITHUB_TOKEN"}
    assert CANARY not in cp.stdout
