"""The tools the model may call while writing a recipe: ``fetch_file`` and
``inspect_archive`` (``extract_pattern``, the answer, is judged by the conversation).

Both take arguments chosen by a model that has read text written by strangers, so
neither builds a request from them before they pass its rules (docs/create.md):
``fetch_file`` reads one text file of *this* repository at the release tag through the
contents API (path rules and results in :mod:`tsukud.create.paths`); ``inspect_archive``
accepts only the exact name of an asset of the release being analysed, so no URL the
model writes is ever fetched. Archives are listed while they stream (tar) or from
memory (zip, bare executables) under a size cap, and never unpacked to disk.

Every call, whatever its outcome, becomes a ``tool.called`` event (name, path or
asset, duration_ms, ok, bytes, error_type) and a :class:`ToolCallRecord` kept for
``--collect-tool-stats``. Results are structured JSON: ``{"ok": true, ...}`` or
``{"ok": false, "error_type", "message"}``.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import msgspec

from tsukud.binfmt import BinaryInfo
from tsukud.create import paths
from tsukud.create.assets import filter_release, strip_invisible, unsafe_name_reason
from tsukud.create.prompts import FETCH_FILE, INSPECT_ARCHIVE
from tsukud.errors import TsukuError
from tsukud.events.catalogue import ToolCalled
from tsukud.progress import Emit

if TYPE_CHECKING:
    from pathlib import Path

    from tsukud.github.client import GitHub
    from tsukud.github.client import Release as ApiRelease
    from tsukud.install.extract import ArchiveEntry
    from tsukud.net.http import Http
    from tsukud.recipe.release import Release


MAX_INSPECT_BYTES = 256 * 1024 * 1024  # streamed (tar): nothing is kept
MAX_INSPECT_MEMORY = 64 * 1024 * 1024  # zip and bare files are read into memory
MAX_LISTED = 200
MAX_ENTRY_NAME = 256

# error_type values of inspect_archive (fetch_file's are in tsukud.create.paths)
UNKNOWN_ASSET = "unknown_asset"
UNSUPPORTED_FORMAT = "unsupported_format"
TOO_LARGE = "archive_too_large"
DOWNLOAD_ERROR = "download_error"
CORRUPT = "corrupt_archive"
CHECKSUM = "checksum_mismatch"
BAD_ARGUMENTS = "bad_arguments"


ToolCallRecord = ToolCalled  # one tool call as logged: the ``tool.called`` payload

MAX_PROBED_FILES = 20  # executables whose header a payload probe reads, at most


class Payload(msgspec.Struct, frozen=True, kw_only=True):
    """What an asset's executable is built for (``info``, read from ``path`` inside
    it), or why that could not be found out (``error``)."""

    info: BinaryInfo | None = None
    path: str | None = None
    error: str | None = None


def tool_error(error_type: str, message: str) -> dict[str, Any]:
    return {"ok": False, "error_type": error_type, "message": message}


def _clean_entry_name(name: str) -> str:
    text = strip_invisible(name).replace("\n", " ").replace("\t", " ")
    return text if len(text) <= MAX_ENTRY_NAME else text[: MAX_ENTRY_NAME - 1] + "…"


def listing_result(asset: str, fmt: str, entries: list[ArchiveEntry]) -> dict[str, Any]:
    """The ``inspect_archive`` success payload: executables first, capped, with the
    archive's single top-level directory (what ``strip_dirs: 1`` removes) if any."""
    files = [e for e in entries if e.kind != "dir"]
    ordered = sorted(files, key=lambda e: (not e.is_executable, e.name))
    shown = ordered[:MAX_LISTED]
    tops = {e.name.lstrip("./").split("/", 1)[0] for e in entries if e.name.strip("./")}
    nested = all("/" in e.name.lstrip("./").rstrip("/") for e in files) and bool(files)
    top = next(iter(tops)) if len(tops) == 1 and nested else None
    return {
        "ok": True,
        "asset": asset,
        "format": fmt,
        "entry_count": len(entries),
        "shown": len(shown),
        "top_level_dir": _clean_entry_name(top) if top else None,
        "executables": [_clean_entry_name(e.name) for e in files if e.is_executable][:50],
        "entries": [
            {
                "path": _clean_entry_name(e.name),
                "type": e.kind,
                "size": e.size,
                "mode": f"{e.mode:04o}",
                "executable": e.is_executable,
                **({"magic": e.magic} if e.magic else {}),
                **({"link_target": _clean_entry_name(e.link_target)} if e.link_target else {}),
            }
            for e in shown
        ],
    }


class RepoTools:
    """The handlers for one create run: one repository at one release tag."""

    def __init__(
        self,
        *,
        github: GitHub,
        http: Http,
        repo: str,
        release: Release,
        api_release: ApiRelease | None,
        github_url: str,
        emit: Emit,
        workdir: Path | None = None,
    ) -> None:
        self.github = github
        self.http = http
        self.repo = repo
        self.release = release
        self.api_release = api_release
        self.github_url = github_url
        self.emit = emit
        self.workdir = workdir
        self.records: list[ToolCallRecord] = []
        self._payloads: dict[str, Payload] = {}

    @property
    def tag(self) -> str:
        return self.release.tag

    async def record(self, record: ToolCallRecord) -> None:
        self.records.append(record)
        await self.emit("tool.called", msgspec.to_builtins(record))

    async def call(self, name: str, arguments: Mapping[str, Any]) -> dict[str, Any]:
        """Run ``fetch_file`` or ``inspect_archive``; the result as a JSON-ready dict."""
        if name == FETCH_FILE:
            return msgspec.to_builtins(await self.fetch_file(arguments.get("path")))  # type: ignore[no-any-return]
        if name == INSPECT_ARCHIVE:
            return await self.inspect_archive(arguments.get("asset_name"))
        started = time.monotonic()
        result = tool_error(
            "unknown_tool",
            f"There is no tool named {name[:60]!r}: use fetch_file, inspect_archive or "
            "extract_pattern.",
        )
        await self.record(
            ToolCallRecord(
                name=name[:60], ok=False, duration_ms=_ms(started), error_type="unknown_tool"
            )
        )
        return result

    # ---- fetch_file ------------------------------------------------------------------

    async def fetch_file(self, raw: Any) -> paths.FetchResult:
        started = time.monotonic()
        result = await self._fetch_file(raw)
        shown = raw.strip() if isinstance(raw, str) else None
        if shown is not None and paths.validate_path(shown) != shown:
            shown = None  # never log what failed the path rules
        await self.record(
            ToolCallRecord(
                name=FETCH_FILE,
                ok=isinstance(result, paths.FetchOk),
                duration_ms=_ms(started),
                path=shown,
                bytes=result.bytes if isinstance(result, paths.FetchOk) else None,
                error_type=result.error_type if isinstance(result, paths.FetchError) else None,
            )
        )
        return result

    async def _fetch_file(self, raw: Any) -> paths.FetchResult:
        from tsukud.github.client import GitHubFileNotFound, GitHubRateLimited

        if not isinstance(raw, str):
            return paths.path_error("path must be a string, e.g. 'docs/install.md'.")
        checked = paths.validate_path(raw)
        if isinstance(checked, paths.FetchError):
            return checked
        try:
            got = await self.github.contents(self.repo, checked, ref=self.tag)
        except GitHubFileNotFound:
            return paths.file_not_found(checked)
        except GitHubRateLimited:
            return paths.api_error("GitHub's API rate limit is reached; decide without this file")
        except TsukuError as exc:
            return paths.api_error(exc.message)
        if isinstance(got, list):
            return paths.not_a_file(checked)
        text: str | None = None
        binary = False
        if got.content is not None:
            try:
                text = strip_invisible(got.content.decode("utf-8"))
            except UnicodeDecodeError:
                binary = True
        meta: dict[str, object] = {"type": got.type, "size": got.size}
        result = paths.from_contents(checked, meta, text)
        if binary and isinstance(result, paths.FetchError) and result.error_type == paths.API_ERROR:
            return paths.api_error(f"{checked} is not a text file (not valid UTF-8)")
        return result

    # ---- inspect_archive --------------------------------------------------------------

    async def inspect_archive(self, raw: Any) -> dict[str, Any]:
        started = time.monotonic()
        size: list[int] = []
        result = await self._inspect(raw, size)
        name = raw.strip() if isinstance(raw, str) else None
        await self.record(
            ToolCallRecord(
                name=INSPECT_ARCHIVE,
                ok=bool(result.get("ok")),
                duration_ms=_ms(started),
                asset=name if name and name in self.release.assets else None,
                bytes=size[0] if size else None,
                error_type=None if result.get("ok") else str(result.get("error_type")),
            )
        )
        return result

    def _asset_list(self) -> str:
        kept = filter_release(self.release).kept
        return ", ".join(kept[:30]) + (f", … ({len(kept) - 30} more)" if len(kept) > 30 else "")

    async def _inspect(self, raw: Any, size: list[int]) -> dict[str, Any]:
        from tsukud.install.download import ChecksumMismatch, DownloadError, check_sha256
        from tsukud.install.extract import ExtractError
        from tsukud.net.http import HttpError, ResponseTooLarge
        from tsukud.recipe import ArchiveFormat, RecipeError, detect_format

        if not isinstance(raw, str) or not raw.strip():
            return tool_error(BAD_ARGUMENTS, "asset_name must be an asset file name.")
        name = raw.strip()
        if unsafe_name_reason(name) is not None or name not in self.release.assets:
            return tool_error(
                UNKNOWN_ASSET,
                f"asset_name must be the exact name of an asset of release {self.tag} "
                "(no URLs, no other releases). Its assets: " + self._asset_list(),
            )
        try:
            fmt = detect_format(name)
        except RecipeError as exc:
            return tool_error(UNSUPPORTED_FORMAT, exc.message)
        try:
            entries, got_size, sha = await self._list(name, fmt)
        except ResponseTooLarge:
            limit = MAX_INSPECT_BYTES if fmt.is_tar else MAX_INSPECT_MEMORY
            return tool_error(
                TOO_LARGE,
                f"{name} is larger than {limit // (1024 * 1024)} MB; decide from the asset "
                "names or inspect a smaller asset of the same build.",
            )
        except ExtractError as exc:
            return tool_error(CORRUPT, exc.message)
        except (DownloadError, HttpError) as exc:
            return tool_error(DOWNLOAD_ERROR, f"Failed to download {name}: {exc.message}")
        size.append(got_size)
        expected = self.release.digests.get(name)
        if expected:
            try:
                check_sha256(name, sha, expected, "GitHub's asset digest")
            except ChecksumMismatch as exc:
                return tool_error(CHECKSUM, exc.message)
        kind = "raw" if fmt is ArchiveFormat.RAW else fmt.value
        return listing_result(name, kind, entries)

    async def _list(self, name: str, fmt: Any) -> tuple[list[ArchiveEntry], int, str]:
        """Stream ``name`` and list it; returns (entries, bytes, sha256)."""
        import trio

        from tsukud.install.download import Unpacked, download_streaming
        from tsukud.install.extract import ExtractLimits, list_entries
        from tsukud.recipe import release_url

        url = release_url(self.repo, self.tag, name, self.github_url)
        if fmt.is_tar and self.workdir is not None:
            self.workdir.mkdir(parents=True, exist_ok=True)
            link = self.workdir / f"inspect-{hashlib.sha256(name.encode()).hexdigest()[:12]}"
            limits = ExtractLimits(ratio_floor_bytes=ExtractLimits().max_total_bytes)
            result, unpacked = await download_streaming(
                self.http,
                url,
                link,
                lambda p, _n: list_entries(p, fmt, limits, name=name),
                max_bytes=MAX_INSPECT_BYTES,
            )
            got: Unpacked[list[ArchiveEntry]] = unpacked
            if got.error is not None:
                raise got.error
            return got.value or [], result.size, result.sha256
        chunks: list[bytes] = []
        digest = hashlib.sha256()
        async with self.http.stream(url, max_bytes=MAX_INSPECT_MEMORY) as resp:
            async for chunk in resp.chunks():
                digest.update(chunk)
                chunks.append(chunk)
        data = b"".join(chunks)
        entries = await trio.to_thread.run_sync(lambda: list_entries(data, fmt, name=name))
        return entries, len(data), digest.hexdigest()

    # ---- payload probe (the pipeline's, not the model's) ------------------------------

    async def payload(self, name: str, binary: str | None = None) -> Payload:
        """The header of the executable in asset ``name`` (the one named ``binary``
        when there is one, else the first ELF/Mach-O): what a name without an OS is
        really built for. Downloaded as ``inspect_archive`` downloads (an asset of this
        release only, size-capped, digest-checked), unpacked with the installer's
        limits into a scratch directory that is removed at once; one download per
        asset for the run."""
        if name not in self._payloads:
            self._payloads[name] = await self._payload(name, binary)
        return self._payloads[name]

    async def _payload(self, name: str, binary: str | None) -> Payload:
        import tempfile
        from pathlib import Path

        import trio

        from tsukud.install.download import check_sha256, download
        from tsukud.install.extract import extract
        from tsukud.recipe import RecipeError, detect_format, release_url

        if unsafe_name_reason(name) is not None or name not in self.release.assets:
            return Payload(error=f"{name!r} is not an asset of release {self.tag}")
        try:
            fmt = detect_format(name)
        except RecipeError as exc:
            return Payload(error=exc.message)
        if self.workdir is not None:
            self.workdir.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(prefix="payload-", dir=self.workdir) as scratch:
            archive = Path(scratch) / name
            try:
                url = release_url(self.repo, self.tag, name, self.github_url)
                got = await download(self.http, url, archive, max_bytes=MAX_INSPECT_MEMORY)
                expected = self.release.digests.get(name)
                if expected:
                    check_sha256(name, got.sha256, expected, "GitHub's asset digest")
                report = await trio.to_thread.run_sync(
                    lambda: extract(archive, Path(scratch) / "x", fmt)
                )
            except TsukuError as exc:
                return Payload(error=exc.message)
            root = Path(scratch) / "x"
            return await trio.to_thread.run_sync(
                lambda: _read_payload(root, report.executables or report.files, binary)
            )


def _read_payload(root: Path, files: tuple[str, ...], binary: str | None) -> Payload:
    """The first ELF/Mach-O among ``files`` (the one named ``binary`` first)."""
    from tsukud.binfmt import HEAD_BYTES, inspect

    named = [f for f in files if binary and f.rpartition("/")[2] == binary]
    rest = [f for f in files if f not in named]
    for rel in (named + rest)[:MAX_PROBED_FILES]:
        path = root / rel
        if path.is_symlink() or not path.is_file():
            continue
        with path.open("rb") as f:
            info = inspect(f.read(HEAD_BYTES))
        if info.kind in ("elf", "macho") or (rel in named and info.kind == "script"):
            return Payload(info=info, path=rel)
    return Payload(error="no ELF or Mach-O executable in it")


def _ms(started: float) -> int:
    return round((time.monotonic() - started) * 1000)


def result_text(result: Mapping[str, Any]) -> str:
    """The tool result as the model reads it: compact JSON."""
    return msgspec.json.encode(result).decode()


__all__ = [
    "Emit",
    "Payload",
    "RepoTools",
    "ToolCallRecord",
    "listing_result",
    "result_text",
    "tool_error",
]
