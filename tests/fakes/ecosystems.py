"""Fake package registries on 127.0.0.1: crates.io, npm (+ its downloads API), PyPI,
RubyGems and the Go module proxy, each under its own path prefix of one server.

Shapes follow the real APIs (abridged to the fields discovery reads, plus a few it
ignores). Tests script packages with ``add_crate``/``add_npm``/... and can make one
registry slow (``delay``) or broken (``fail``); ``requests`` records what was asked.

    with FakeEcosystems() as eco:
        eco.add_crate("ripgrep", recent_downloads=5_000_000, versions=40,
                      repository="https://github.com/BurntSushi/ripgrep")
        env = eco.env()   # TSUKU_CRATES_URL=http://127.0.0.1:port/crates, ...
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import unquote, urlsplit

PREFIXES = {
    "crates.io": "/crates",
    "npm": "/npm",
    "npm_downloads": "/npm-api",
    "pypi": "/pypi-org",
    "rubygems": "/rubygems",
    "go": "/goproxy",
}
ENV = {
    "crates.io": "TSUKU_CRATES_URL",
    "npm": "TSUKU_NPM_URL",
    "npm_downloads": "TSUKU_NPM_DOWNLOADS_URL",
    "pypi": "TSUKU_PYPI_URL",
    "rubygems": "TSUKU_RUBYGEMS_URL",
    "go": "TSUKU_GOPROXY_URL",
}


@dataclass
class FakeEcosystems:
    crates: dict[str, dict[str, Any]] = field(default_factory=dict)
    npm: dict[str, dict[str, Any]] = field(default_factory=dict)
    npm_downloads: dict[str, int] = field(default_factory=dict)
    pypi: dict[str, dict[str, Any]] = field(default_factory=dict)
    gems: dict[str, dict[str, Any]] = field(default_factory=dict)
    gem_versions: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    go: dict[str, dict[str, Any]] = field(default_factory=dict)
    go_versions: dict[str, list[str]] = field(default_factory=dict)
    delay: dict[str, float] = field(default_factory=dict)  # builder -> seconds
    fail: dict[str, int] = field(default_factory=dict)  # builder -> HTTP status
    requests: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._lock = threading.Lock()
        self._closing = threading.Event()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self._server.block_on_close = False
        self._thread: threading.Thread | None = None

    # ---- lifecycle ---------------------------------------------------------------------

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def base(self, builder: str) -> str:
        return self.url + PREFIXES[builder]

    def env(self) -> dict[str, str]:
        return {ENV[b]: self.base(b) for b in PREFIXES}

    def urls(self) -> dict[str, str]:
        return {b: self.base(b) for b in PREFIXES}

    def start(self) -> FakeEcosystems:
        if self._thread is None:
            self._thread = threading.Thread(
                target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
            )
            self._thread.start()
        return self

    def close(self) -> None:
        self._closing.set()
        if self._thread is not None:
            self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> FakeEcosystems:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ---- scripting ---------------------------------------------------------------------

    def add_crate(
        self,
        name: str,
        *,
        recent_downloads: int = 0,
        versions: int = 1,
        repository: str | None = None,
        description: str = "",
    ) -> None:
        nums = [f"0.{i}.0" for i in range(versions)]
        self.crates[name] = {
            "crate": {
                "id": name,
                "name": name,
                "description": description,
                "downloads": recent_downloads * 4,
                "recent_downloads": recent_downloads,
                "max_version": nums[-1] if nums else "0.0.0",
                "max_stable_version": nums[-1] if nums else None,
                "repository": repository,
                "homepage": None,
                "documentation": None,
                "created_at": "2020-01-01T00:00:00.000000+00:00",
                "updated_at": "2024-01-01T00:00:00.000000+00:00",
            },
            "versions": [{"id": i, "crate": name, "num": n} for i, n in enumerate(nums)],
            "keywords": [],
            "categories": [],
        }

    def add_npm(
        self,
        name: str,
        *,
        weekly_downloads: int = 0,
        versions: int = 1,
        repository: str | None = None,
        description: str = "",
    ) -> None:
        nums = [f"1.{i}.0" for i in range(versions)]
        doc: dict[str, Any] = {
            "_id": name,
            "name": name,
            "description": description,
            "dist-tags": {"latest": nums[-1] if nums else "0.0.0"},
            "versions": {n: {"name": name, "version": n} for n in nums},
            "time": {n: "2024-01-01T00:00:00.000Z" for n in nums},
        }
        if repository:
            doc["repository"] = {"type": "git", "url": f"git+{repository}.git"}
        self.npm[name] = doc
        self.npm_downloads[name] = weekly_downloads

    def add_pypi(
        self, name: str, *, releases: int = 1, repository: str | None = None, summary: str = ""
    ) -> None:
        nums = [f"0.{i}" for i in range(releases)]
        self.pypi[name] = {
            "info": {
                "name": name,
                "summary": summary,
                "version": nums[-1] if nums else "0",
                "home_page": "",
                "project_urls": {"Source": repository} if repository else None,
            },
            "releases": {n: [] for n in nums},
            "urls": [],
        }

    def add_gem(
        self,
        name: str,
        *,
        downloads: int = 0,
        versions: int = 1,
        source_code_uri: str | None = None,
        info: str = "",
    ) -> None:
        nums = [f"1.{i}.0" for i in range(versions)]
        self.gems[name] = {
            "name": name,
            "downloads": downloads,
            "version": nums[-1] if nums else "0",
            "info": info,
            "source_code_uri": source_code_uri,
            "homepage_uri": None,
        }
        self.gem_versions[name] = [{"number": n, "prerelease": False} for n in reversed(nums)]

    def add_go(self, module: str, *, versions: int = 1, origin: str | None = None) -> None:
        nums = [f"v1.{i}.0" for i in range(versions)]
        latest: dict[str, Any] = {"Version": nums[-1], "Time": "2024-01-01T00:00:00Z"}
        if origin:
            latest["Origin"] = {"VCS": "git", "URL": origin, "Ref": f"refs/tags/{nums[-1]}"}
        self.go[module] = latest
        self.go_versions[module] = nums

    # ---- serving -----------------------------------------------------------------------

    def _route(self, path: str) -> tuple[str | None, int, bytes, str]:
        """(builder, status, body, content type)."""
        for builder, prefix in PREFIXES.items():
            if path.startswith(prefix + "/"):
                rest = unquote(path[len(prefix) :])
                return (builder, *self._answer(builder, rest))
        return None, 404, b"not found", "text/plain"

    def _answer(self, builder: str, rest: str) -> tuple[int, bytes, str]:
        def js(obj: Any) -> tuple[int, bytes, str]:
            return 200, json.dumps(obj).encode(), "application/json"

        missing = (
            404,
            json.dumps({"errors": [{"detail": "Not Found"}]}).encode(),
            "application/json",
        )
        if builder == "crates.io" and rest.startswith("/api/v1/crates/"):
            doc = self.crates.get(rest.removeprefix("/api/v1/crates/"))
            return js(doc) if doc else missing
        if builder == "npm":
            doc = self.npm.get(rest.lstrip("/"))
            return js(doc) if doc else (404, b'{"error":"Not found"}', "application/json")
        if builder == "npm_downloads" and rest.startswith("/downloads/point/last-week/"):
            name = rest.removeprefix("/downloads/point/last-week/")
            if name not in self.npm_downloads:
                return 404, b'{"error":"package not found"}', "application/json"
            return js(
                {
                    "downloads": self.npm_downloads[name],
                    "start": "2024-01-01",
                    "end": "2024-01-07",
                    "package": name,
                }
            )
        if builder == "pypi" and rest.startswith("/pypi/") and rest.endswith("/json"):
            doc = self.pypi.get(rest[len("/pypi/") : -len("/json")])
            return js(doc) if doc else (404, b'{"message": "Not Found"}', "application/json")
        if builder == "rubygems":
            if rest.startswith("/api/v1/gems/") and rest.endswith(".json"):
                doc = self.gems.get(rest[len("/api/v1/gems/") : -len(".json")])
                return js(doc) if doc else (404, b"This rubygem could not be found.", "text/plain")
            if rest.startswith("/api/v1/versions/") and rest.endswith(".json"):
                versions = self.gem_versions.get(rest[len("/api/v1/versions/") : -len(".json")])
                return js(versions) if versions is not None else (404, b"", "text/plain")
        if builder == "go":
            if rest.endswith("/@latest"):
                latest = self.go.get(rest.lstrip("/")[: -len("/@latest")])
                if latest:
                    return js(latest)
                return 404, b"not found: module unknown", "text/plain"
            if rest.endswith("/@v/list"):
                vs = self.go_versions.get(rest.lstrip("/")[: -len("/@v/list")])
                if vs is None:
                    return 404, b"not found", "text/plain"
                return 200, "".join(v + "\n" for v in vs).encode(), "text/plain"
        return missing

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                path = urlsplit(self.path).path
                with fake._lock:
                    fake.requests.append(path)
                builder, status, body, ctype = fake._route(path)
                wait = fake.delay.get(builder or "", 0.0)
                if wait and fake._closing.wait(wait):
                    self.close_connection = True
                    return
                if builder in fake.fail:
                    status, body, ctype = fake.fail[builder], b"upstream error", "text/plain"
                try:
                    self.send_response(status)
                    self.send_header("content-type", ctype)
                    self.send_header("content-length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                except (BrokenPipeError, ConnectionResetError):
                    self.close_connection = True

        return Handler
