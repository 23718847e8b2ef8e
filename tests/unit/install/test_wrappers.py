"""An ecosystem tool's command wrapper (``install/ecosystem/wrappers.py``): run by a
real shell, it puts its toolchain's directories first on PATH and execs the command
with the arguments as given; ``verify`` re-checks both the wrapper and what it runs."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from tsukud.install.checks import integrity_problems, sha256_file
from tsukud.install.ecosystem.wrappers import WRAPPER_DIR, wrap_commands
from tsukud.install.layout import replace_symlink
from tsukud.registries.ecosystems import ECOSYSTEMS


def _tool(root: Path) -> dict[str, dict[str, str]]:
    """A tool whose command runs ``node`` by name (as ``#!/usr/bin/env node`` does)."""
    cmd = root / "node_modules" / ".bin" / "greet"
    cmd.parent.mkdir(parents=True)
    cmd.write_text('#!/bin/sh\nexec node "$@"\n')
    cmd.chmod(0o755)
    return {"greet": {"path": "node_modules/.bin/greet", "sha256": sha256_file(cmd)}}


def _node(where: Path, says: str) -> Path:
    where.mkdir(parents=True)
    node = where / "node"
    node.write_text(f'#!/bin/sh\necho {says}; for a in "$@"; do echo "[$a]"; done\n')
    node.chmod(0o755)
    return where


def test_the_wrapper_runs_the_command_with_its_toolchain_first(tmp_path: Path) -> None:
    # Paths a shell would split or expand if they were not quoted.
    root = tmp_path / "tools" / "greet 1.0 'x' $HOME"
    binaries = _tool(root)
    chain = _node(tmp_path / "tools" / "nodejs $(id)" / "bin", "toolchain")
    users = _node(tmp_path / "user-bin", "user")
    wrapped = wrap_commands(root, binaries, [chain])

    assert wrapped["greet"]["path"] == f"{WRAPPER_DIR}/greet"
    assert wrapped["greet"]["wraps"] == binaries["greet"]
    out = subprocess.run(
        [str(root / wrapped["greet"]["path"]), "a b", "$HOME", ""],
        capture_output=True,
        text=True,
        check=True,
        env={"PATH": f"{users}:/usr/bin:/bin"},
    ).stdout
    assert out.split("\n") == ["toolchain", "[a b]", "[$HOME]", "[]", ""]


def test_verify_checks_what_the_wrapper_runs_and_skips_a_hidden_tools_links(
    tmp_path: Path,
) -> None:
    home = tmp_path / "home"
    root = home / "tools" / "greet-1.0.0"
    wrapped = wrap_commands(root, _tool(root), [tmp_path / "chain"])
    (home / "bin").mkdir(parents=True)
    replace_symlink(home / "bin" / "greet", root / wrapped["greet"]["path"])
    assert integrity_problems(home, root, wrapped) == []

    # The wrapped command changed: verify says so, though the wrapper did not.
    (root / "node_modules" / ".bin" / "greet").write_text("#!/bin/sh\necho changed\n")
    problems = integrity_problems(home, root, wrapped)
    assert len(problems) == 1 and "node_modules/.bin/greet changed since install" in problems[0]

    # A hidden toolchain has no links in bin/, and that is no problem; a linked one must.
    os.unlink(home / "bin" / "greet")
    chain = home / "tools" / "nodejs-1.0.0"
    _node(chain / "bin", "toolchain")
    node = {"node": {"path": "bin/node", "sha256": sha256_file(chain / "bin" / "node")}}
    assert integrity_problems(home, chain, node, linked=False) == []
    assert [p for p in integrity_problems(home, chain, node) if "does not point" in p]


def test_the_toolchains_tools_run_on_are_tsukus_runtime_dependencies() -> None:
    """tsuku's actions: npm_install, pipx_install and gem_install need their toolchain
    at run time (wrapped, and a runtime dependency); cargo_install and go_install only
    to build."""
    runtime = {e.toolchain.recipe: e.toolchain.runtime for e in ECOSYSTEMS}
    assert runtime == {
        "nodejs": True,
        "python-standalone": True,
        "ruby": True,
        "rust": False,
        "go": False,
    }
