"""A fake crates.io on loopback: the web API, a sparse index and the ``.crate`` files,
serving real crates built here, which the real ``cargo install`` builds and installs.

* ``/api/v1/crates/<name>``: ``crate`` (``max_stable_version``, ``repository``,
  ``recent_downloads``, ...) and ``versions`` (``num``, ``yanked``, ``checksum``,
  ``bin_names``, ``dl_path``), what the version resolver, the recipe builder and
  discovery read;
* ``/index/config.json`` (``dl`` pointing back here) and ``/index/<xx>/<yy>/<name>``
  (one JSON line per version with its ``cksum``), what cargo reads;
* ``/api/v1/crates/<name>/<version>/download``: the ``.crate`` bytes;
* ``/index.git/``: the same index as a git repository over git's "dumb" HTTP protocol
  (plain files, made with the ``git`` CLI), for a cargo older than 1.68, which reads
  no sparse index (Debian bookworm's); cargo fetches it with the git CLI
  (``CARGO_NET_GIT_FETCH_WITH_CLI``), since its libgit2 speaks only the smart protocol.

Anything else is a 404, so unexpected traffic shows in ``requests``.

    with FakeCratesIo() as crates:
        crates.publish(crate("hello-rs", "0.2.0", {"hello-rs": "hello 0.2.0"}))
        env = crates.env()   # TSUKU_CRATES_URL, TSUKU_CRATES_INDEX_URL (sparse)
        env = crates.env(git=True)   # the index as a git repository
"""

from __future__ import annotations

import hashlib
import io
import json
import shutil
import subprocess
import tarfile
import tempfile
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import unquote

from tsukud.testing.http import FakeHTTPServer, RecordedRequest, Reply

_MTIME = 1_700_000_000


@dataclass(frozen=True)
class Crate:
    name: str
    version: str
    data: bytes  # the .crate (a gzipped tar, everything under <name>-<version>/)
    bins: tuple[str, ...]

    @property
    def cksum(self) -> str:
        return hashlib.sha256(self.data).hexdigest()


def _main_rs(text: str) -> str:
    return (
        "fn main() {\n"
        "    let args: Vec<String> = std::env::args().skip(1).collect();\n"
        f'    println!("{{}} {{}}", {json.dumps(text)}, args.join(" "));\n'
        "}\n"
    )


def crate(
    name: str,
    version: str,
    bins: dict[str, str],
    *,
    declared: bool = True,
    build_rs: str | None = None,
) -> Crate:
    """A crate without dependencies whose binaries print the text given for each and
    their arguments. ``declared``: the Cargo.toml lists every ``[[bin]]`` (as cargo
    1.78+ publishes it); otherwise the first binary is ``src/main.rs`` (named after the
    package) and the others are found in ``src/bin/`` by cargo's auto-discovery."""
    names = list(bins)
    if not declared and names[0] != name:
        raise ValueError("auto-discovered: the first binary is named after the package")
    top = f"{name}-{version}"
    toml = f'[package]\nname = "{name}"\nversion = "{version}"\nedition = "2021"\n'
    files: dict[str, str] = {}
    if build_rs is not None:  # cargo runs it before compiling the crate
        toml += 'build = "build.rs"\n'
        files["build.rs"] = build_rs
    if declared:
        toml += "autobins = false\n"
        for b in names:
            toml += f'\n[[bin]]\nname = "{b}"\npath = "src/bin/{b}.rs"\n'
            files[f"src/bin/{b}.rs"] = _main_rs(bins[b])
    else:
        files["src/main.rs"] = _main_rs(bins[names[0]])
        for b in names[1:]:
            files[f"src/bin/{b}.rs"] = _main_rs(bins[b])
    files["Cargo.toml"] = toml
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for path, text in sorted(files.items()):
            data = text.encode()
            info = tarfile.TarInfo(f"{top}/{path}")
            info.size = len(data)
            info.mode = 0o644
            info.mtime = _MTIME
            tar.addfile(info, io.BytesIO(data))
    return Crate(name, version, buf.getvalue(), tuple(names))


def index_path(name: str) -> str:
    """Where the sparse index keeps a crate's file (cargo's layout, lower case)."""
    n = name.lower()
    if len(n) <= 2:
        return f"{len(n)}/{n}"
    if len(n) == 3:
        return f"3/{n[0]}/{n}"
    return f"{n[:2]}/{n[2:4]}/{n}"


@dataclass
class _Published:
    crates: list[Crate] = field(default_factory=list)
    yanked: set[str] = field(default_factory=set)
    repository: str | None = None
    description: str = ""
    recent_downloads: int = 0
    bin_names: bool = True  # whether the API reports them (crates.io analysed it)


class FakeCratesIo(FakeHTTPServer):
    def __init__(self) -> None:
        super().__init__(fallback=self._route, role="crates.io")
        self.published: dict[str, _Published] = {}
        self._git_dir = Path(tempfile.mkdtemp(prefix="tsuku-fake-crates-"))
        self._git_lock = threading.Lock()
        self._git_built: str | None = None  # the index it holds (rebuilt when changed)

    @property
    def index_url(self) -> str:
        """The sparse index, in cargo's syntax."""
        return f"sparse+{self.url}/index/"

    @property
    def git_index_url(self) -> str:
        return f"{self.url}/index.git"

    def env(self, *, git: bool = False) -> dict[str, str]:
        index = self.git_index_url if git else self.index_url
        return {"TSUKU_CRATES_URL": self.url, "TSUKU_CRATES_INDEX_URL": index}

    def close(self) -> None:
        super().close()
        shutil.rmtree(self._git_dir, ignore_errors=True)

    def publish(
        self,
        c: Crate,
        *,
        repository: str | None = None,
        description: str = "",
        recent_downloads: int = 0,
        bin_names: bool = True,
        yanked: bool = False,
    ) -> None:
        entry = self.published.setdefault(c.name, _Published())
        entry.crates.append(c)
        entry.repository = repository or entry.repository
        entry.description = (
            description or entry.description or f"{c.name}: a command-line tool for tests"
        )
        entry.recent_downloads = max(entry.recent_downloads, recent_downloads)
        entry.bin_names = bin_names
        if yanked:
            entry.yanked.add(c.version)

    def paths(self) -> list[str]:
        return [r.route for r in self.requests]

    # ---- documents ---------------------------------------------------------------------

    def api_doc(self, name: str) -> dict[str, Any] | None:
        entry = self.published.get(name)
        if entry is None:
            return None
        live = [c.version for c in entry.crates if c.version not in entry.yanked]
        stable = [v for v in live if "-" not in v]
        key = _semver_key
        return {
            "crate": {
                "id": name,
                "name": name,
                "description": entry.description,
                "downloads": entry.recent_downloads * 4,
                "recent_downloads": entry.recent_downloads,
                "max_version": max(live, key=key) if live else "0.0.0",
                "max_stable_version": max(stable, key=key) if stable else None,
                "newest_version": entry.crates[-1].version,
                "repository": entry.repository,
                "homepage": None,
                "documentation": None,
                "created_at": "2020-01-01T00:00:00.000000+00:00",
                "updated_at": "2024-01-01T00:00:00.000000+00:00",
            },
            "versions": [
                {
                    "id": i,
                    "crate": name,
                    "num": c.version,
                    "yanked": c.version in entry.yanked,
                    "checksum": c.cksum,
                    "crate_size": len(c.data),
                    "dl_path": f"/api/v1/crates/{name}/{c.version}/download",
                    "bin_names": list(c.bins) if entry.bin_names else None,
                    "has_lib": False,
                }
                for i, c in reversed(list(enumerate(entry.crates)))
            ],
            "keywords": [],
            "categories": [],
        }

    def index_file(self, name: str) -> str | None:
        entry = next((e for n, e in self.published.items() if n.lower() == name), None)
        if entry is None:
            return None
        lines: list[dict[str, Any]] = [
            {
                "name": c.name,
                "vers": c.version,
                "deps": [],
                "cksum": c.cksum,
                "features": {},
                "yanked": c.version in entry.yanked,
                "links": None,
                "v": 2,
            }
            for c in entry.crates
        ]
        return "".join(json.dumps(line) + "\n" for line in lines)

    def index_files(self) -> dict[str, str]:
        """Every file of the index: ``config.json`` and one per crate."""
        files = {"config.json": json.dumps({"dl": f"{self.url}/api/v1/crates", "api": self.url})}
        for name in self.published:
            files[index_path(name)] = self.index_file(name.lower()) or ""
        return files

    def _git_repo(self) -> Path:
        """A bare repository with the index as its one commit, ready for dumb HTTP."""
        files = self.index_files()
        state = json.dumps(files, sort_keys=True)
        bare = self._git_dir / "index.git"
        with self._git_lock:
            if self._git_built == state:
                return bare
            shutil.rmtree(self._git_dir / "work", ignore_errors=True)
            shutil.rmtree(bare, ignore_errors=True)
            work = self._git_dir / "work"
            for rel, text in files.items():
                (work / rel).parent.mkdir(parents=True, exist_ok=True)
                (work / rel).write_text(text)
            env = {
                "PATH": "/usr/local/bin:/usr/bin:/bin",
                "HOME": str(self._git_dir),
                "GIT_CONFIG_NOSYSTEM": "1",
                "GIT_AUTHOR_NAME": "fake crates.io",
                "GIT_AUTHOR_EMAIL": "index@127.0.0.1",
                "GIT_COMMITTER_NAME": "fake crates.io",
                "GIT_COMMITTER_EMAIL": "index@127.0.0.1",
            }
            for argv in (
                ["git", "init", "-q", "-b", "master", str(work)],
                ["git", "-C", str(work), "add", "-A"],
                ["git", "-C", str(work), "commit", "-q", "-m", "index"],
                ["git", "clone", "-q", "--bare", str(work), str(bare)],
                ["git", "-C", str(bare), "update-server-info"],
            ):
                subprocess.run(argv, env=env, check=True, capture_output=True)
            self._git_built = state
            return bare

    # ---- serving -----------------------------------------------------------------------

    def _route(self, request: RecordedRequest) -> Reply:
        path = unquote(request.route)
        if path == "/index/config.json":
            return _text(self.index_files()["config.json"])
        if path.startswith("/index.git/"):
            bare = self._git_repo()
            file = (bare / path.removeprefix("/index.git/")).resolve()
            if file.is_relative_to(bare) and file.is_file():
                return Reply(body=file.read_bytes())
            return _not_found()
        if path.startswith("/index/"):
            rest = path.removeprefix("/index/")
            name = rest.rsplit("/", 1)[-1]
            body = self.index_file(name) if index_path(name) == rest else None
            return _not_found() if body is None else _text(body)
        if path.startswith("/api/v1/crates/"):
            parts = path.removeprefix("/api/v1/crates/").split("/")
            if len(parts) == 1:
                doc = self.api_doc(parts[0])
                return Reply(json=doc) if doc else _not_found()
            if len(parts) == 3 and parts[2] == "download":
                entry = self.published.get(parts[0])
                found = [c for c in (entry.crates if entry else []) if c.version == parts[1]]
                if found:
                    return Reply(body=found[0].data, headers={"content-type": "application/gzip"})
        return _not_found()


def _text(body: str) -> Reply:
    return Reply(body=body.encode(), headers={"content-type": "text/plain"})


def _not_found() -> Reply:
    return Reply(404, json={"errors": [{"detail": "Not Found"}]})


def _semver_key(version: str) -> tuple[int, ...]:
    core = version.split("-", 1)[0].split("+", 1)[0]
    return tuple(int(p) if p.isdigit() else 0 for p in core.split("."))
