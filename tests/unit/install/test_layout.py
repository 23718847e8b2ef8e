"""Crash repair: whatever an interrupted install or removal left, reconcile() brings the
tree back to what the ledger records."""

from __future__ import annotations

import os
from pathlib import Path

from tsukud.install.layout import cleanup_staging, reconcile, replace_symlink


def tool(home: Path, dirname: str, *bins: str) -> Path:
    d = home / "tools" / dirname
    (d / "bin").mkdir(parents=True)
    for b in bins:
        (d / "bin" / b).write_text("#!/bin/sh\n")
    return d


def record(home: Path, dirname: str, *bins: str) -> dict[str, object]:
    return {
        "version": dirname.rsplit("-", 1)[1],
        "install_dir": str(home / "tools" / dirname),
        "binaries": {b: {"path": f"bin/{b}", "sha256": "0" * 64} for b in bins},
    }


def test_staging_trash_and_old_copies(tmp_path: Path) -> None:
    home = tmp_path
    tool(home, "age-1.2.1", "age")
    (home / "tools" / ".staging-stern-1.31.0-abcd" / "downloads").mkdir(parents=True)
    (home / "tools" / ".trash-1234").mkdir()
    # A same-version reinstall crashed after moving the old copy aside:
    old = home / "tools" / ".old-k9s-2.5.0.beef"
    (old / "bin").mkdir(parents=True)
    # ...and one crashed after the new copy was in place (the .old one is obsolete):
    tool(home, "kind-2.5.0", "kind")
    (home / "tools" / ".old-kind-2.5.0.cafe").mkdir()
    report = cleanup_staging(home)
    names = sorted(p.name for p in (home / "tools").iterdir())
    assert names == ["age-1.2.1", "k9s-2.5.0", "kind-2.5.0"]
    assert str(home / "tools" / "k9s-2.5.0") in report.restored


def test_reconcile_matches_the_ledger(tmp_path: Path) -> None:
    home = tmp_path
    bin_dir = home / "bin"
    bin_dir.mkdir()
    tool(home, "age-1.2.1", "age", "age-keygen")
    tool(home, "age-1.1.1", "age", "age-keygen")  # crash: new version never committed
    tool(home, "stern-1.32.0", "stern")  # crash before install.completed was durable
    replace_symlink(bin_dir / "age", home / "tools" / "age-1.1.1" / "bin" / "age")
    replace_symlink(bin_dir / "stern", home / "tools" / "stern-1.32.0" / "bin" / "stern")
    os.symlink(home / "tools" / "gone-1.0" / "bin" / "gone", bin_dir / "gone")  # dangling
    os.symlink("/usr/bin/env", bin_dir / "mine")  # not ours: left alone
    (bin_dir / "script").write_text("user file")  # not ours: left alone
    installed = {"age": record(home, "age-1.2.1", "age", "age-keygen")}

    report = reconcile(home, installed)

    assert sorted(p.name for p in (home / "tools").iterdir()) == ["age-1.2.1"]
    assert sorted(p.name for p in bin_dir.iterdir()) == ["age", "age-keygen", "mine", "script"]
    assert os.readlink(bin_dir / "age") == str(home / "tools" / "age-1.2.1" / "bin" / "age")
    assert os.readlink(bin_dir / "age-keygen").endswith("age-1.2.1/bin/age-keygen")
    assert os.readlink(bin_dir / "mine") == "/usr/bin/env"
    assert report
    # Idempotent.
    assert not reconcile(home, installed)


def test_shell_start_up_no_installed_tool_lists_is_removed(tmp_path: Path) -> None:
    """A crash after the person's yes wrote a fragment and before the install was
    recorded: the fragment would run in every new shell for a tool that is not there."""
    shell_d = tmp_path / "share" / "shell.d"
    shell_d.mkdir(parents=True)
    for name in ("nvm@0.40.1.bash", "nvm@0.40.1.zsh", "orphan@1.0.bash"):
        (shell_d / name).write_text("export X=1\n")
    tool(tmp_path, "nvm-0.40.1", "nvm")
    nvm = {
        **record(tmp_path, "nvm-0.40.1", "nvm"),
        "shell_init": ["share/shell.d/nvm@0.40.1.bash", "share/shell.d/nvm@0.40.1.zsh"],
    }
    report = reconcile(tmp_path, {"nvm": nvm})
    assert sorted(p.name for p in shell_d.iterdir()) == ["nvm@0.40.1.bash", "nvm@0.40.1.zsh"]
    assert report.removed == [str(shell_d / "orphan@1.0.bash")]


def test_reconcile_on_an_empty_home(tmp_path: Path) -> None:
    assert not reconcile(tmp_path, {})


def test_reconcile_never_links_a_hidden_toolchain(tmp_path: Path) -> None:
    """A toolchain installed for another tool (``hidden``) has no bin/ links; start-up
    repair must not add them (they would shadow the user's node and npm), nor delete
    its directory."""
    home = tmp_path
    tool(home, "nodejs-22.1.0", "node", "npm")
    tool(home, "age-1.2.1", "age")
    hidden = {**record(home, "nodejs-22.1.0", "node", "npm"), "hidden": True}
    reconcile(home, {"nodejs": hidden, "age": record(home, "age-1.2.1", "age")})
    assert sorted(p.name for p in (home / "bin").iterdir()) == ["age"]
    assert (home / "tools" / "nodejs-22.1.0" / "bin" / "node").is_file()
