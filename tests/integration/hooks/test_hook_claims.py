"""Command claims cannot be hijacked (issue 33), end to end: the fake registry's manifest
lists ``a-kube`` with ``satisfies = { aliases = ["k9s", "kx"] }`` beside the real
``k9s`` recipe, and ``b-kube`` also claiming ``kx``. The real ``tsukuctl hook install``
makes the real daemon fetch that manifest and build the index; then real bash, zsh and
fish on a pty, in auto-install mode (the hook's ``tsukuctl`` a stub that logs what it
was asked to install):

* ``k9s`` is the k9s recipe's, never ``a-kube``: auto mode installs k9s;
* ``hook install``, ``hook status`` and ``doctor`` report the ignored claim;
* ``kx``, claimed by two tools and named after neither, is never installed by the hook:
  both claimants are listed and the status stays 127.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import Tsuku
from tests.integration.hooks.conftest import (
    SHELLS,
    STERN,
    ShellHome,
    hook_installed_from,
    need_shell,
    stub_user,
)


def recipe(name: str) -> str:
    return STERN.replace("stern", name)


CLAIM = (
    "a-kube (registry) claims the command k9s, which the recipe k9s provides under its "
    "own name: the claim is ignored, the hook offers k9s"
)


@pytest.fixture(scope="module")
def claimed() -> Iterator[tuple[Tsuku, str]]:
    """The index the daemon built from the fake registry's manifest (by the real
    ``tsukuctl hook install``), and what ``hook install`` printed."""
    recipes = {
        "k9s": (recipe("k9s"), {}),
        "a-kube": (recipe("a-kube"), {"satisfies": {"aliases": ["k9s", "kx"]}}),
        "b-kube": (recipe("b-kube"), {"satisfies": {"aliases": ["kx"]}}),
    }
    with hook_installed_from(recipes) as (installer, out):
        yield installer.tsuku, out


@pytest.fixture
def user(claimed: tuple[Tsuku, str], tmp_path: Path) -> Iterator[ShellHome]:
    with stub_user(claimed[0], tmp_path, ["k9s", "kx", "a-kube", "b-kube"]) as u:
        yield u


@pytest.mark.slow  # real shells and a doctor run; the other claim tests stay
def test_hook_install_status_and_doctor_report_the_ignored_claim(
    claimed: tuple[Tsuku, str], user: ShellHome
) -> None:
    _t, out = claimed
    assert "warning: " + CLAIM in out, out
    index = (user.tsuku.home / "share" / "binary-index.tsv").read_text()
    assert [x for x in index.splitlines() if x.startswith("k9s\t")] == ["k9s\tk9s\tregistry"]
    status = user.ctl("--no-start", "hook", "status")
    assert "claim  " + CLAIM in status, status
    doctor = json.loads(user.ctl("--no-start", "doctor", "--json", check=False))
    (line,) = [c for c in doctor["checks"] if c["check"] == "claims"]
    assert line["state"] == "warn" and CLAIM in line["detail"], line


@pytest.mark.parametrize("shell", SHELLS)
def test_auto_mode_installs_the_recipe_named_after_the_command_never_a_claimant(
    user: ShellHome, shell: str
) -> None:
    need_shell(shell)
    user.write_rc(shell)
    user.ctl("--no-start", "hook", "install", "--shell", shell)
    sh = user.spawn(shell, TSUKU_AUTO_INSTALL="auto")

    out, status = sh.run("kx get pods")
    assert "kx is claimed by several tools, none named kx: a-kube, b-kube." in out, out
    assert "tsukuctl install <tool>" in out and "auto-install mode" not in out, out
    assert not user.stub_log.exists(), out  # nothing installed
    assert status == 127, out

    out, _status = sh.run("k9s --help")
    assert "k9s is provided by k9s; installing it (auto-install mode)" in out, out
    assert "a-kube" not in out, out
    assert user.stub_log.read_text() == "install k9s|hook_active=1\n", out
    assert "fake k9s ran with: --help" in out, out


def test_install_by_a_name_several_recipes_claim_picks_none(user: ShellHome) -> None:
    """What the hook lists, `tsukuctl install kx` does not settle by the manifest's order
    either: exit 10, both claimants named, nothing installed."""
    t = user.tsuku
    try:
        cp = t.ctl("install", "kx", "--no-discover")
        assert cp.returncode == 10, cp.stderr
        assert "several recipes claim it: a-kube, b-kube" in cp.stderr, cp.stderr
        assert "tsukuctl install a-kube or b-kube" in cp.stderr, cp.stderr
        assert not (t.home / "tools").exists() or not any((t.home / "tools").iterdir())
    finally:
        t.ctl("daemon", "stop")
