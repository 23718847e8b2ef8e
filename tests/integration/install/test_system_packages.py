"""System packages on the host: a recipe's ``apt_install`` (the host family's action)
runs only after the person at a terminal read the exact command and said yes.

The real client on a pseudo-terminal (``PtyRun``) and on pipes, a real daemon, a real
download. The package manager is the user's environment, so the test gives the user
one: ``apt-get``/``dpkg-query`` (or the host family's equivalents) and ``sudo`` on the
caller's PATH are small scripts that record their argv in the test's directory and
remember what they installed. They are not our code: what they prove is which command
our code ran, and whether it ran at all.

* shown, then yes: the command runs with exactly the argv shown, once;
* ``--yes`` alone at a terminal: stopped (exit 12), the command in the message, the
  fake never ran (``--yes`` never counts as the person's yes);
* no terminal: stopped the same way;
* packages already installed: nothing is asked, even under ``--yes``;
* ``require_command``: a command missing from the caller's PATH stops the install with
  a hint naming it.
"""

from __future__ import annotations

import json
import os
import re
import shlex
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import Tsuku
from tests.integration.install.conftest import installed
from tests.integration.install.test_install_terminal import PtyRun
from tests.integration.install.test_recipe_errors import local_recipe
from tests.integration.install.test_url_actions import HOST, kubectl_recipe, script
from tsukud.recipe.system import SYSTEM_MANAGERS, install_argv
from tsukud.testing.download_host import FakeDownloadHost

PACKAGE = "libtsuku-fixture1"
FAMILY = HOST.linux_family
ACTION = next((m.action for m in SYSTEM_MANAGERS.values() if m.family == FAMILY), None)

# One script plays the user's package manager: an install records its argv and
# remembers the package; a query answers from what was installed (dpkg-query's words).
FAKE_MANAGER = """#!/bin/sh
state="{state}"
case " $* " in
  *" install "*|*" add "*|*" -S "*)
    printf '%s\\n' "$(basename "$0") $*" >> "$state/calls"
    touch "$state/installed"
    exit 0 ;;
esac
if [ -e "$state/installed" ]; then
  printf 'install ok installed'
  exit 0
fi
exit 1
"""
FAKE_SUDO = """#!/bin/sh
printf '%s\\n' "sudo $*" >> "{state}/sudo"
exec "$@"
"""
PROGRAMS = ("apt-get", "dpkg-query", "apk", "dnf", "rpm", "pacman", "zypper")


@pytest.fixture
def machine(inst: Tsuku, tmp_path: Path) -> Iterator[tuple[Path, dict[str, str]]]:
    """The download host with kubectl, the recipe with a system package step, and the
    caller's PATH with the fake package manager first."""
    assert ACTION is not None, f"this host's Linux family ({FAMILY}) has no package action"
    state = tmp_path / "state"
    bindir = tmp_path / "bin"
    state.mkdir()
    bindir.mkdir()
    for name in PROGRAMS:
        (bindir / name).write_text(FAKE_MANAGER.format(state=state))
        (bindir / name).chmod(0o755)
    (bindir / "sudo").write_text(FAKE_SUDO.format(state=state))
    (bindir / "sudo").chmod(0o755)
    with FakeDownloadHost() as fake:
        fake.add_json("/release/stable.json", {"version": "v1.30.2"})
        fake.add(
            f"/release/v1.30.2/bin/{HOST.os}/{HOST.arch}/kubectl",
            script("Client Version: v1.30.2"),
        )
        steps = (
            f'[[steps]]\naction = "{ACTION}"\npackages = ["{PACKAGE}"]\n\n'
            '[[steps]]\naction = "require_command"\ncommand = "sh"\n\n'
        )
        text = kubectl_recipe(fake).replace("[[steps]]\n", steps + "[[steps]]\n", 1)
        local_recipe(inst, "kubectl", text)
        yield state, {"PATH": f"{bindir}{os.pathsep}{os.environ['PATH']}"}


def _command() -> str:
    assert ACTION is not None
    return shlex.join(install_argv(ACTION, (PACKAGE,), as_root=os.geteuid() == 0))


def _ran(state: Path) -> list[str]:
    calls = state / "calls"
    return calls.read_text().splitlines() if calls.exists() else []


def _pty(inst: Tsuku, env: dict[str, str], *args: str) -> PtyRun:
    return PtyRun(inst, "install", "kubectl", *args, TERM="dumb", **env)


def test_shown_then_yes_runs_exactly_the_command_shown(
    inst: Tsuku, machine: tuple[Path, dict[str, str]]
) -> None:
    state, env = machine
    # The plan shows the step beforehand, as tsuku plans it, with the command beside it.
    plan = json.loads(inst.ctl("plan", "kubectl", "--json", check=True, shell_env=env).stdout)
    first = plan["steps"][0]
    assert (first["action"], first["params"]) == (ACTION, {"packages": [PACKAGE]})
    assert (first["evaluable"], first["deterministic"]) == (False, False)
    assert plan["steps"][1]["action"] == "require_command"
    assert plan["platform"]["linux_family"] == FAMILY
    assert first["command"] == shlex.join(install_argv(ACTION, (PACKAGE,), as_root=False))
    shown = inst.ctl("plan", "kubectl", check=True, shell_env=env).stdout
    assert re.search(rf"{ACTION} +{re.escape(first['command'])}\n", shown), shown
    text = inst.ctl("plan", "kubectl", "--platform", "linux/amd64/alpine", check=True).stdout
    assert "apk_install" not in text and "sudo" not in text  # the recipe names apt only
    other = inst.ctl("plan", "kubectl", "--platform", "linux/amd64/nixos")
    assert other.returncode == 2 and "linux/amd64/debian" in other.stderr
    assert _ran(state) == []
    run = _pty(inst, env)
    try:
        run.read_until(r"Run this command\? \[y/N\] ")
        assert _ran(state) == []  # nothing before the yes
        assert f"    {_command()}\n" in run.text.replace("\r\n", "\n")
        run.type(b"y\n")
        status = run.wait()
    finally:
        run.kill()
    assert status == 0, run.text
    # What ran is, word for word, what was shown (sudo, when present, ran it).
    shown = _command().split()
    if shown[0] == "sudo":
        assert (state / "sudo").read_text().splitlines() == [_command()]
        shown = shown[1:]
    assert _ran(state) == [" ".join(shown)]
    assert "kubectl" in installed(inst)


def test_yes_alone_stops_with_the_command_and_runs_nothing(
    inst: Tsuku, machine: tuple[Path, dict[str, str]]
) -> None:
    """At a terminal, where a person could have been asked: ``--yes`` is not that yes."""
    state, env = machine
    run = _pty(inst, env, "--yes")
    try:
        status = run.wait()
    finally:
        run.kill()
    text = run.text.replace("\r\n", "\n")
    assert status == 12, text
    assert f"    {_command()}\n" in text
    assert "--yes does not accept a command run as root" in text
    assert "Run that command yourself, then `tsukuctl install kubectl` again" in text
    assert "Run this command?" not in text  # stopped, not asked
    assert _ran(state) == [] and not (state / "sudo").exists()
    assert "kubectl" not in installed(inst)


def test_no_terminal_stops_once_installed_nothing_is_asked_and_a_missing_command_is_named(
    inst: Tsuku, machine: tuple[Path, dict[str, str]]
) -> None:
    state, env = machine
    cp = inst.ctl("install", "kubectl", shell_env=env)
    assert cp.returncode == 12, cp.stderr
    assert _command() in cp.stderr and "nobody could be asked" in cp.stderr
    assert _ran(state) == []
    # The person runs it themselves; the install then asks nothing, even under --yes.
    (state / "installed").touch()
    cp = inst.ctl("install", "kubectl", "--yes", shell_env=env)
    assert cp.returncode == 0, cp.stderr
    assert _ran(state) == []
    assert "kubectl" in installed(inst)

    # require_command: a command missing from the caller's PATH is named, with the fix.
    recipe = inst.home / "recipes" / "kubectl.toml"
    recipe.write_text(recipe.read_text().replace('command = "sh"', 'command = "tsuku-no-such"'))
    cp = inst.ctl("install", "kubectl", "--yes", "--force", shell_env=env)
    assert cp.returncode == 8, cp.stderr
    assert "needs the command tsuku-no-such, which is not on your PATH" in cp.stderr
    assert "Install tsuku-no-such" in cp.stderr


def test_a_generated_recipe_never_validated_never_gets_the_question(
    inst: Tsuku, machine: tuple[Path, dict[str, str]]
) -> None:
    """As its run_command: refused at a terminal too, before anything is asked."""
    state, env = machine
    recipe = inst.home / "recipes" / "kubectl.toml"
    recipe.write_text(
        recipe.read_text().replace(
            'name = "kubectl"\n',
            'name = "kubectl"\ngenerated_by = "claude-sonnet-4-5"\nllm_validation = "skipped"\n',
        )
    )
    run = _pty(inst, env)
    try:
        status = run.wait()
    finally:
        run.kill()
    assert status == 14, run.text
    assert "not validated, so its system packages are not installed" in run.text
    assert "Run this command?" not in run.text
    assert _ran(state) == []
