"""A tool's archive must not put look-alikes of system commands first on PATH.

The attack (issue 33): a recipe for ``foo`` whose archive also holds ``sudo`` and
``git``; linked into ``$TSUKU_HOME/bin`` (first on PATH once the hook is installed), the
next ``sudo`` asks for the password in the attacker's script. Through the real daemon
and client, with the caller's PATH as the request carries it (a directory of this
test's own "system" commands, so the machine's PATH does not decide anything):

* ``--yes`` refuses a binary that would shadow a command on that PATH, naming it;
* without ``--yes`` a person on a terminal is asked, the question naming the path it
  would hide; no means nothing installed, yes installs it; no terminal: exit 12;
* ``sudo`` (a name that guards credentials) is refused with ``--yes``, without it, on a
  terminal, and whether or not the system has one, unless the recipe is ``sudo``'s own;
* the tool's own binary installs, though the system has a command of that name;
* create never proposes a guarded name for another tool (here a package's ``bin``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import Tsuku
from tests.fakes.ecosystems import FakeEcosystems
from tests.fakes.github import FakeGitHub
from tests.integration.install.conftest import events, installed, tree
from tests.integration.install.test_install_terminal import PtyRun
from tests.integration.install.test_recipe_errors import local_recipe
from tsukud.testing.packages import npm_tarball
from tsukud.testing.releases import FakeAsset, FakeRelease, FakeRepo, tar_gz


def _script(text: str) -> tuple[bytes, int]:
    return f"#!/bin/sh\necho '{text}'\n".encode(), 0o755


def publish(world: FakeGitHub, repo: str, names: list[str]) -> None:
    """``repo``'s release v1.0.0: an archive holding each of ``names``."""
    members = {n: _script(f"{n} from {repo} 1.0.0") for n in names}
    asset = FakeAsset("bundle-1.0.0.tar.gz", tar_gz(members))
    world.add_repo(FakeRepo(repo, [FakeRelease("v1.0.0", [asset])]))


def recipe(name: str, repo: str, binaries: list[str]) -> str:
    return (
        f'[metadata]\nname = "{name}"\n\n[[steps]]\naction = "github_archive"\n'
        f'repo = "{repo}"\nasset_pattern = "bundle-{{version}}.tar.gz"\n'
        f"binaries = {json.dumps(binaries)}\n"
    )


def bundle(t: Tsuku, world: FakeGitHub, repo: str, binaries: list[str], tool: str = "foo") -> None:
    """``tool``'s local recipe, linking each of ``binaries`` from ``repo``'s archive."""
    publish(world, repo, binaries)
    local_recipe(t, tool, recipe(tool, repo, binaries))


def on_a_terminal(t: Tsuku, env: dict[str, str], answer: bytes | None = None) -> tuple[int, str]:
    """``install foo`` on a terminal; ``answer``: what the person types at the shadowing
    question (None: no question is awaited). Its exit status and all it wrote."""
    run = PtyRun(t, "install", "foo", TERM="dumb", **env)
    try:
        if answer is not None:
            run.read_until(r"Install them anyway\? \[y/N\] ")
            run.type(answer)
        status = run.wait()
    finally:
        run.kill()
    return status, run.text


def last_failure(t: Tsuku) -> dict[str, Any]:
    """The payload of the newest ``install.failed`` event."""
    return [e for e in events(t) if e["type"] == "install.failed"][-1]["payload"]


@pytest.fixture
def system(tmp_path: Path) -> Path:
    """The caller's "system" commands: a ``git`` and a ``foo`` (no ``sudo``)."""
    d = tmp_path / "sysbin"
    d.mkdir()
    for name in ("git", "foo"):
        (d / name).write_text("#!/bin/sh\necho system\n")
        (d / name).chmod(0o755)
    return d


def caller_path(t: Tsuku, system: Path) -> dict[str, str]:
    """The PATH of the caller's shell: tsuku's own bin first (as the hook puts it), then
    the system's. tsuku's own links are never "the system's"."""
    return {"PATH": f"{t.home / 'bin'}:{system}"}


def test_yes_refuses_a_binary_that_shadows_a_command_on_the_callers_path(
    inst: Tsuku, world: FakeGitHub, system: Path
) -> None:
    bundle(inst, world, "acme/foo-shadow", ["foo", "git"])
    cp = inst.ctl("install", "foo", "--yes", shell_env=caller_path(inst, system))
    assert cp.returncode == 14, cp.stderr
    assert f"git  would run instead of {system / 'git'}" in cp.stderr, cp.stderr
    assert "--yes does not accept that" in cp.stderr
    assert "hint:" in cp.stderr and "without --yes" in cp.stderr
    assert installed(inst) == {} and tree(inst.home) == []
    assert last_failure(inst)["error_code"] == "command_shadowing_refused"
    # Without a terminal and without --yes: the question cannot be put; exit 12.
    cp = inst.ctl("install", "foo", shell_env=caller_path(inst, system))
    assert cp.returncode == 12, cp.stderr
    assert str(system / "git") in cp.stderr and "--yes does not cover it" in cp.stderr
    assert installed(inst) == {}
    # A caller whose PATH has no git: nothing is shadowed, the install goes ahead.
    cp = inst.ctl("install", "foo", "--yes", shell_env={"PATH": str(inst.home / "bin")})
    assert cp.returncode == 0, cp.stderr
    assert sorted(installed(inst)["foo"]["binaries"]) == ["foo", "git"]


def test_a_person_is_asked_naming_the_command_it_would_hide(
    inst: Tsuku, world: FakeGitHub, system: Path
) -> None:
    bundle(inst, world, "acme/foo-ask", ["foo", "git"])
    env = caller_path(inst, system)
    status, text = on_a_terminal(inst, env, b"n\n")
    assert f"git  would run instead of {system / 'git'}" in text, text
    assert status == 13, text
    assert installed(inst) == {} and not (inst.home / "bin" / "git").exists()

    status, text = on_a_terminal(inst, env, b"y\n")
    assert status == 0, text
    assert sorted(installed(inst)["foo"]["binaries"]) == ["foo", "git"]
    granted = [e for e in events(inst, "confirmation.") if e["type"] == "confirmation.granted"]
    assert granted[-1]["payload"]["kind"] == "shadowing"
    assert granted[-1]["payload"]["option"]["shadows"] == {"git": str(system / "git")}
    # A reinstall of the same tool does not ask again for what was accepted.
    cp = inst.ctl("install", "foo", "--force", "--yes", shell_env=env)
    assert cp.returncode == 0, cp.stderr


def test_sudo_is_refused_for_another_tool_yes_or_no(
    inst: Tsuku, world: FakeGitHub, system: Path
) -> None:
    bundle(inst, world, "acme/foo-sudo", ["foo", "sudo"])
    env = caller_path(inst, system)  # no sudo on it: a guarded name is refused anyway
    cp = inst.ctl("install", "foo", "--yes", shell_env=env)
    assert cp.returncode == 14, cp.stderr
    assert "sudo guards credentials or privileges" in cp.stderr, cp.stderr
    assert "hint:" in cp.stderr
    # On a terminal, without --yes: refused, never asked.
    status, text = on_a_terminal(inst, env)
    assert status == 14, text
    assert "[y/N]" not in text and "sudo guards credentials" in text
    assert installed(inst) == {} and not (inst.home / "bin" / "sudo").exists()
    assert last_failure(inst)["error_code"] == "guarded_command_refused"


def test_a_tools_own_binary_installs_though_the_system_has_one(
    inst: Tsuku, world: FakeGitHub, system: Path
) -> None:
    # foo is on the caller's PATH: the recipe for foo may still install foo.
    bundle(inst, world, "acme/foo-own", ["foo"])
    env = caller_path(inst, system)
    cp = inst.ctl("install", "foo", "--yes", shell_env=env)
    assert cp.returncode == 0, cp.stderr
    assert installed(inst)["foo"]["binaries"] == ["foo"]
    # And the recipe named sudo installs sudo (it is that command's own recipe).
    bundle(inst, world, "acme/sudo-own", ["sudo"], tool="sudo")
    cp = inst.ctl("install", "sudo", "--yes", shell_env=env)
    assert cp.returncode == 0, cp.stderr
    assert (inst.home / "bin" / "sudo").is_symlink()


def test_create_never_proposes_a_guarded_command(eco_inst: Tsuku, eco: FakeEcosystems) -> None:
    """A package whose ``bin`` holds ``sudo`` beside its own command: create refuses it
    before validating anything (nothing runs, nothing is written)."""
    eco.publish_npm(npm_tarball("foo", "1.0.0", {"foo": "foo 1.0.0", "sudo": "gotcha"}))
    cp = eco_inst.ctl("create", "foo", "--from", "npm:foo", "--yes", "--skip-validation")
    assert cp.returncode == 1, cp.stderr
    assert "[guarded_command] binary 'sudo'" in cp.stderr, cp.stderr
    assert "nothing was written" in cp.stderr
    assert not (eco_inst.home / "recipes" / "foo.toml").exists()
    failed = [e for e in events(eco_inst, "generation.") if e["type"] == "generation.failed"]
    assert failed, "the run's end is recorded"
