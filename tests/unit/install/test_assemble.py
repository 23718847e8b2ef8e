"""The one tool-tree assembler (installs and recipe validation): paths stay inside the
tool, symlinks cannot reach out of the archive, a file listed twice is installed twice,
and a missing binary is reported against the whole unpacked asset."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from tsukud.install.assemble import TreeAssembler, files, listing, resolve_inside, safe_rel
from tsukud.install.errors import BinaryNotInArchive, InstallError
from tsukud.recipe import ArchiveFormat, InstallBinary, RenderedStep


def step(*binaries: tuple[str, str], mode: str = "binaries", strip: int = 0) -> RenderedStep:
    return RenderedStep(
        index=0,
        action="github_archive",
        repo="o/t",
        version="1.0.0",
        tag="v1.0.0",
        asset_name="t-1.0.0.tar.gz",
        url="https://example.invalid/t-1.0.0.tar.gz",
        download_name="t-1.0.0.tar.gz",
        archive_format=ArchiveFormat.TAR_GZ,
        strip_dirs=strip,
        install_mode=mode,
        binaries=tuple(InstallBinary(src, dest) for src, dest in binaries),
    )


def unpacked(tmp_path: Path, entries: dict[str, bytes], executable: bool = True) -> Path:
    root = tmp_path / "x0"
    for rel, data in entries.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(data)
        p.chmod(0o755 if executable else 0o644)
    root.mkdir(exist_ok=True)
    return root


def test_safe_rel_keeps_paths_inside_the_tool() -> None:
    assert safe_rel("./bin//t", "binary") == "bin/t"
    assert safe_rel("share/../bin/t", "binary") == "bin/t"
    for bad in ("/usr/bin/t", "..", "../t", "bin/../../t", "bin/t\x00"):
        with pytest.raises(InstallError) as err:
            safe_rel(bad, "t: steps[0]: binary")
        assert "must be a relative path inside the tool" in err.value.message
        assert err.value.code == "install_failed"


def test_resolve_inside_follows_only_links_that_stay_inside(tmp_path: Path) -> None:
    root = tmp_path / "root"
    (root / "bin").mkdir(parents=True)
    (root / "bin" / "t").write_text("tool")
    os.symlink("bin/t", root / "alias")
    outside = tmp_path / "secret"
    outside.write_text("not yours")
    os.symlink(outside, root / "escape")
    os.symlink("../secret", root / "bin" / "relative-escape")
    real_root = Path(os.path.realpath(root))
    assert resolve_inside(root, "bin/t") == real_root / "bin" / "t"
    assert resolve_inside(root, "alias") == real_root / "bin" / "t"
    assert resolve_inside(root, "escape") is None
    assert resolve_inside(root, "bin/relative-escape") is None
    assert resolve_inside(root, "../secret") is None
    assert resolve_inside(root, "bin") is None  # a directory is not a binary
    assert resolve_inside(root, "missing") is None


def test_binaries_are_moved_into_place_with_their_modes(tmp_path: Path) -> None:
    src = unpacked(tmp_path, {"t": b"tool", "README": b"read me"}, executable=False)
    tree = TreeAssembler(tmp_path / "root", "t")
    tree.add(step(("t", "bin/t"), ("README", "share/README")), src)
    assert tree.finish() == {"t": "bin/t", "README": "share/README"}
    root = tmp_path / "root"
    assert (root / "bin" / "t").read_bytes() == b"tool"
    assert (root / "bin" / "t").stat().st_mode & 0o777 == 0o755  # in bin/: runnable
    assert (root / "share" / "README").stat().st_mode & 0o777 == 0o644
    assert not (src / "t").exists()  # moved, not copied


def test_the_same_file_listed_twice_is_installed_twice(tmp_path: Path) -> None:
    src = unpacked(tmp_path, {"kubectl": b"one binary, two names"})
    tree = TreeAssembler(tmp_path / "root", "k")
    tree.add(step(("kubectl", "bin/kubectl"), ("kubectl", "bin/k"), ("kubectl", "bin/k")), src)
    assert tree.finish() == {"kubectl": "bin/kubectl", "k": "bin/k"}
    first, second = tmp_path / "root" / "bin" / "kubectl", tmp_path / "root" / "bin" / "k"
    assert first.read_bytes() == second.read_bytes() == b"one binary, two names"
    assert first.stat().st_ino != second.stat().st_ino  # a copy, not a second name
    assert second.stat().st_mode & 0o777 == 0o755


def test_a_missing_binary_is_reported_with_the_whole_archive(tmp_path: Path) -> None:
    src = unpacked(tmp_path, {"t": b"tool", "docs/t.1": b"man"})
    tree = TreeAssembler(tmp_path / "root", "t")
    with pytest.raises(BinaryNotInArchive) as err:
        tree.add(step(("t", "bin/t"), ("bin/t", "bin/t2"), strip=1), src)
    exc = err.value
    assert exc.reason == "bin/t is not a file in t-1.0.0.tar.gz (after strip_dirs=1)"
    assert exc.message == f"t: steps[0]: {exc.reason}; it has: docs/t.1, t"
    assert exc.searched == src
    assert (src / "t").exists() and not (tmp_path / "root").exists()  # nothing moved yet
    assert files(src) == (["docs/t.1", "t"], ["docs/t.1", "t"])


def test_an_archive_symlink_cannot_bring_in_a_host_file(tmp_path: Path) -> None:
    secret = tmp_path / "host-secret"
    secret.write_text("host file")
    src = unpacked(tmp_path, {})
    os.symlink(secret, src / "t")
    with pytest.raises(BinaryNotInArchive):
        TreeAssembler(tmp_path / "root", "t").add(step(("t", "bin/t")), src)
    assert secret.read_text() == "host file" and secret.exists()


def test_paths_outside_the_tool_are_refused_before_anything_is_written(tmp_path: Path) -> None:
    src = unpacked(tmp_path, {"t": b"tool"})
    root = tmp_path / "tools" / "root"
    root.parent.mkdir()
    with pytest.raises(InstallError, match=re.escape("binary dest '../../escaped'")):
        TreeAssembler(root, "t").add(step(("t", "../../escaped")), src)
    with pytest.raises(InstallError, match="binary src '/etc/passwd'"):
        TreeAssembler(root, "t").add(step(("/etc/passwd", "bin/t")), src)
    with pytest.raises(InstallError, match=re.escape("binary '../t'")):
        TreeAssembler(root, "t").add(step(("t", "../t"), mode="directory"), src)
    assert not (tmp_path / "escaped").exists() and not root.exists()
    assert (src / "t").read_bytes() == b"tool"


def test_directory_mode_takes_the_whole_tree(tmp_path: Path) -> None:
    src = unpacked(tmp_path, {"bin/t": b"tool", "lib/t.so": b"lib"}, executable=False)
    os.symlink("bin/t", src / "t-link")
    tree = TreeAssembler(tmp_path / "root", "t")
    tree.add(step(("bin/t", "bin/t"), ("t-link", "t-link"), mode="directory"), src)
    root = tmp_path / "root"
    assert not src.exists()  # renamed into place: no second write
    assert tree.finish() == {"t": "bin/t", "t-link": "t-link"}
    assert (root / "lib" / "t.so").read_bytes() == b"lib"
    assert (root / "bin" / "t").stat().st_mode & 0o777 == 0o755
    assert (root / "t-link").is_symlink()  # kept as a link, its target made runnable
    # A second directory step is merged into the same tree.
    more = tmp_path / "x1"
    (more / "share").mkdir(parents=True)
    (more / "share" / "t.txt").write_text("doc")
    tree.add(step(mode="directory"), more)
    assert (root / "share" / "t.txt").read_text() == "doc" and (root / "lib" / "t.so").exists()


def test_directory_mode_binary_must_resolve_inside(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.write_text("x")
    outside.chmod(0o600)
    src = unpacked(tmp_path, {"README": b"r"})
    os.symlink(outside, src / "t")
    with pytest.raises(BinaryNotInArchive) as err:
        TreeAssembler(tmp_path / "root", "t").add(step(("t", "t"), mode="directory"), src)
    assert err.value.reason == "t is not a file in t-1.0.0.tar.gz"
    assert err.value.searched == tmp_path / "root"
    assert outside.stat().st_mode & 0o777 == 0o600  # never made executable


def test_an_empty_recipe_still_gets_a_tree_and_listings_are_capped(tmp_path: Path) -> None:
    tree = TreeAssembler(tmp_path / "root", "t")
    assert tree.finish() == {} and (tmp_path / "root").is_dir()
    assert listing(tmp_path / "root") == "(empty)"
    many = unpacked(tmp_path, {f"f{i:02}": b"" for i in range(35)})
    assert listing(many, limit=3) == "f00, f01, f02, … (32 more)"
