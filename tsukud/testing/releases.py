"""Release data for the fake GitHub: small real archives whose "binary" is a script
(or, for the demo's releases, a real tiny program per Linux platform: ``native_program``).

Two sources:

* :func:`recipe_repo` synthesises releases for a tsuku recipe: for each version and each
  standard platform, :mod:`tsukud.testing.asset_names` (written from the recipe format,
  not with the installer's renderer, so a renderer bug cannot rename the fixtures along
  with the requests) says which assets the recipe downloads, and an asset of that name is
  built with the binaries where the recipe expects them (``strip_dirs`` leading
  directories added back, directory-mode trees with a ``lib/``). Each binary is
  ``#!/bin/sh`` printing ``<name> v<version>``, which satisfies every fixture recipe's
  verify pattern. A goreleaser-style ``checksums.txt`` is added to each release.
* :func:`recorded_repo` loads a recorded ``GET /releases`` answer (a JSON file, as
  GitHub sent it) and serves synthetic content under the recorded asset
  names (digests recomputed for our bytes; assets recorded without a digest keep none).

Archives are deterministic (fixed mtimes), so digests are stable between runs.
"""

from __future__ import annotations

import bz2
import functools
import gzip
import hashlib
import io
import json
import lzma
import tarfile
import zipfile
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import zstandard

from tsukud.recipe import STANDARD_PLATFORMS, ArchiveFormat, Platform, Recipe, recipe_to_dict
from tsukud.testing.asset_names import expected_assets, format_of_name

MTIME = 1_700_000_000
Members = Mapping[str, tuple[bytes, int]]  # path -> (content, mode)


def script(name: str, version: str) -> bytes:
    return f'#!/bin/sh\necho "{name} v{version}"\n'.encode()


#: What a release's binary is: (command, version, the one platform its asset is for, or
#: None when the asset serves several) -> its bytes.
Program = Callable[[str, str, "Platform | None"], bytes]


def script_program(command: str, version: str, plat: Platform | None) -> bytes:
    """The default: a ``#!/bin/sh`` script, the same on every platform."""
    return script(command, version)


def native_program(command: str, version: str, plat: Platform | None) -> bytes:
    """A real static executable for a Linux asset of one architecture (the demo's
    releases: what validation says it ran is then true of that build); a script
    elsewhere (darwin, which runs only signed binaries on arm64, or an asset several
    platforms share)."""
    from tsukud.testing import tiny_elf

    if plat is not None and plat.os == "linux" and tiny_elf.supports(plat.arch):
        return tiny_elf.program(plat.arch, f"{command} v{version}")
    return script(command, version)


# ------------------------------------------------------------------------------ archives


def _tar(members: Members, *, dirs: bool = True) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tf:
        seen: set[str] = set()
        for path in sorted(members):
            if dirs:
                parts = path.split("/")[:-1]
                for i in range(1, len(parts) + 1):
                    d = "/".join(parts[:i])
                    if d not in seen:
                        seen.add(d)
                        info = tarfile.TarInfo(d)
                        info.type = tarfile.DIRTYPE
                        info.mode = 0o755
                        info.mtime = MTIME
                        tf.addfile(info)
            data, mode = members[path]
            info = tarfile.TarInfo(path)
            info.size = len(data)
            info.mode = mode
            info.mtime = MTIME
            tf.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def _zip(members: Members) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        for path in sorted(members):
            data, mode = members[path]
            info = zipfile.ZipInfo(path, date_time=(2023, 11, 14, 22, 13, 20))
            info.create_system = 3
            info.external_attr = (0o100000 | mode) << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            zf.writestr(info, data)
    return buf.getvalue()


def compress(fmt: ArchiveFormat, data: bytes) -> bytes:
    if fmt in (ArchiveFormat.TAR_GZ, ArchiveFormat.GZ):
        return gzip.compress(data, mtime=MTIME)
    if fmt in (ArchiveFormat.TAR_XZ, ArchiveFormat.XZ):
        return lzma.compress(data)
    if fmt in (ArchiveFormat.TAR_BZ2, ArchiveFormat.BZ2):
        return bz2.compress(data)
    if fmt in (ArchiveFormat.TAR_ZST, ArchiveFormat.ZST):
        return zstandard.ZstdCompressor().compress(data)
    return data


def archive(fmt: ArchiveFormat, members: Members) -> bytes:
    """An archive of ``fmt`` holding ``members``; RAW and single-file formats take the
    one member's content."""
    fmt = ArchiveFormat(fmt)
    if fmt is ArchiveFormat.ZIP:
        return _zip(members)
    if fmt.is_tar:
        return compress(fmt, _tar(members))
    (data, _mode), *_rest = members.values()
    return compress(fmt, data)


def tar_gz(members: Members) -> bytes:
    return archive(ArchiveFormat.TAR_GZ, members)


def raw_tar(entries: Iterable[tarfile.TarInfo | tuple[tarfile.TarInfo, bytes]]) -> bytes:
    """A tar.gz of hand-made entries (for hostile archives: ``../`` names, links)."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tf:
        for e in entries:
            if isinstance(e, tuple):
                info, data = e
                info.size = len(data)
                tf.addfile(info, io.BytesIO(data))
            else:
                tf.addfile(e)
    return gzip.compress(buf.getvalue(), mtime=MTIME)


# ------------------------------------------------------------------------------ releases


@dataclass
class FakeAsset:
    """``data`` is bytes, a file to serve, or a function building the bytes on demand."""

    name: str
    data: bytes | Path | Callable[[], bytes]
    with_digest: bool = True
    content_type: str = "application/octet-stream"
    _bytes: bytes | None = field(default=None, repr=False)
    _sha: str | None = field(default=None, repr=False)

    def content(self) -> bytes:
        if self._bytes is None:
            if isinstance(self.data, bytes):
                self._bytes = self.data
            elif isinstance(self.data, Path):
                self._bytes = self.data.read_bytes()
            else:
                self._bytes = self.data()
        return self._bytes

    @property
    def size(self) -> int:
        if isinstance(self.data, Path):
            return self.data.stat().st_size
        return len(self.content())

    @property
    def sha256(self) -> str:
        if self._sha is None:
            if isinstance(self.data, Path):
                h = hashlib.sha256()
                with self.data.open("rb") as f:
                    while chunk := f.read(1 << 20):
                        h.update(chunk)
                self._sha = h.hexdigest()
            else:
                self._sha = hashlib.sha256(self.content()).hexdigest()
        return self._sha


@dataclass
class FakeRelease:
    tag: str
    assets: list[FakeAsset] = field(default_factory=list)
    prerelease: bool = False
    draft: bool = False
    name: str | None = None
    created_at: str = "2024-01-01T00:00:00Z"

    def asset(self, name: str) -> FakeAsset | None:
        return next((a for a in self.assets if a.name == name), None)


@dataclass
class FakeRepo:
    full_name: str
    releases: list[FakeRelease] = field(default_factory=list)  # newest first
    extra_tags: list[str] = field(default_factory=list)  # tags without a release
    files: dict[str, bytes] = field(default_factory=dict)  # contents API, at any ref
    description: str | None = None
    homepage: str | None = None
    id: int = 0

    def release(self, tag: str) -> FakeRelease | None:
        return next((r for r in self.releases if r.tag == tag), None)

    def tags(self) -> list[str]:
        return [r.tag for r in self.releases if not r.draft] + self.extra_tags


def checksums_asset(assets: list[FakeAsset], name: str = "checksums.txt") -> FakeAsset:
    def build() -> bytes:
        return "".join(f"{a.sha256}  {a.name}\n" for a in assets).encode()

    return FakeAsset(name, build, content_type="text/plain")


def _members_for(
    tool: str,
    binaries: Iterable[tuple[str, str]],
    strip: int,
    directory: bool,
    version: str,
    made: Callable[[str], bytes] | None = None,
) -> dict[str, tuple[bytes, int]]:
    top = "/".join([f"{tool}-{version}", "dist", "x"][:strip])
    prefix = top + "/" if top else ""
    members: dict[str, tuple[bytes, int]] = {}
    for src, command in binaries:
        content = made(command) if made is not None else script(command, version)
        members[prefix + src] = (content, 0o755)
    members[prefix + "LICENSE"] = (b"MIT License (test fixture)\n", 0o644)
    if directory:
        members[prefix + f"lib/lib{tool}.so"] = (b"\x7fELF not really\n", 0o644)
        members[prefix + "conf/settings.properties"] = (b"key=value\n", 0o644)
    return members


def recipe_assets(
    recipe: Recipe,
    version: str,
    tag: str,
    platforms: Iterable[Platform] = STANDARD_PLATFORMS,
    program: Program = script_program,
) -> list[FakeAsset]:
    """The assets a release of ``recipe`` at ``version`` needs on ``platforms``.

    ``tag`` is accepted for symmetry with the release it goes into: asset names use the
    normalised version, never the raw tag.
    """
    data = recipe_to_dict(recipe)
    tool = recipe.metadata.name
    wanted = [
        (plat, want)
        for plat in platforms
        for want in expected_assets(data, version, plat.os, plat.arch, plat.libc)
    ]
    users: dict[str, set[Platform]] = {}
    for plat, want in wanted:
        users.setdefault(want.name, set()).add(plat)
    assets: dict[str, FakeAsset] = {}
    for plat, want in wanted:
        if want.name in assets:
            continue
        only = plat if len(users[want.name]) == 1 else None

        def made(command: str, only: Platform | None = only) -> bytes:
            return program(command, version, only)

        if want.archive_format == "raw":
            content: bytes | Callable[[], bytes] = made(want.binaries[0][1])
        else:
            members = _members_for(
                tool, want.binaries, want.strip_dirs, want.directory, version, made
            )
            fmt = ArchiveFormat(want.archive_format)
            content = functools.partial(archive, fmt, members)
        assets[want.name] = FakeAsset(want.name, content)
    out = sorted(assets.values(), key=lambda a: a.name)
    return [*out, checksums_asset(out)]


def recipe_repo(
    recipe: Recipe,
    versions: Iterable[str],
    *,
    repo: str | None = None,
    tag_format: str = "v{version}",
    prerelease: Iterable[str] = (),
    draft: Iterable[str] = (),
    program: Program = script_program,
) -> FakeRepo:
    """Releases (newest first) for ``versions`` (oldest first), plus prerelease and
    draft releases newer than all of them, which a "latest" lookup must skip."""
    from tsukud.recipe import version_source

    full_name = repo or version_source(recipe).repo
    releases: list[FakeRelease] = []
    day = 1
    for version in versions:
        tag = tag_format.format(version=version)
        releases.append(
            FakeRelease(
                tag,
                recipe_assets(recipe, version, tag, program=program),
                created_at=f"2024-01-{day:02d}T00:00:00Z",
            )
        )
        day += 1
    for version in prerelease:
        tag = tag_format.format(version=version)
        releases.append(
            FakeRelease(
                tag,
                recipe_assets(recipe, version, tag, program=program),
                prerelease=True,
                created_at=f"2024-01-{day:02d}T00:00:00Z",
            )
        )
        day += 1
    for version in draft:
        tag = tag_format.format(version=version)
        releases.append(
            FakeRelease(
                tag,
                recipe_assets(recipe, version, tag, program=program),
                draft=True,
                created_at=f"2024-01-{day:02d}T00:00:00Z",
            )
        )
        day += 1
    releases.reverse()
    return FakeRepo(
        full_name,
        releases,
        description=recipe.metadata.description,
        homepage=recipe.metadata.homepage,
        files={"README.md": f"# {recipe.metadata.name}\n".encode()},
    )


# ------------------------------------------------------------------------------ recorded


def generic_asset(tool: str, version: str, name: str) -> Callable[[], bytes]:
    """Content for a recorded asset name: an archive holding ``<tool>`` at its root, a
    bare script for names without an archive suffix, text for checksum/signature files."""

    def build() -> bytes:
        lowered = name.lower()
        text_suffixes = (".txt", ".sig", ".minisig", ".asc", ".pem", ".sbom", ".json")
        if lowered.endswith(text_suffixes) or lowered in ("sha256sums", "checksums"):
            return f"signature or checksums for {tool} {version}\n".encode()
        if lowered.endswith((".tar.lz", ".tlz")):
            return b"unsupported archive format\n"
        fmt = ArchiveFormat(format_of_name(name))
        if fmt is ArchiveFormat.RAW:
            return script(tool, version)
        return archive(fmt, {tool: (script(tool, version), 0o755)})

    return build


def recorded_repo(path: Path) -> FakeRepo:
    data = json.loads(path.read_text())
    full_name = data["repo"]
    tool = full_name.split("/")[1]
    releases = []
    for rel in data["releases"]:
        tag = rel["tag_name"]
        version = tag.removeprefix("v")
        assets = [
            FakeAsset(
                a["name"],
                generic_asset(tool, version, a["name"]),
                with_digest=bool(a.get("digest")),
                content_type=a.get("content_type") or "application/octet-stream",
            )
            for a in rel["assets"]
        ]
        releases.append(
            FakeRelease(
                tag,
                assets,
                prerelease=bool(rel.get("prerelease")),
                draft=bool(rel.get("draft")),
                name=rel.get("name"),
                created_at=rel.get("published_at") or "2020-01-01T00:00:00Z",
            )
        )
    return FakeRepo(full_name, releases, description=f"recorded releases of {full_name}")
