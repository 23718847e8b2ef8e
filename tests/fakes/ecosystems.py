"""Fake package registries on 127.0.0.1: crates.io, npm (+ its downloads API), PyPI,
RubyGems and the Go module proxy, each under its own path prefix of one server.

Shapes follow the real APIs (abridged to the fields discovery reads, plus a few it
ignores). Tests script packages with ``add_crate``/``add_npm``/... and can make one
registry slow (``delay``, or ``file_delay`` for its package files) or broken
(``fail``); ``requests`` records what was asked.
Built on :class:`~tsukud.testing.http.FakeHTTPServer`; crates.io refuses (and records
as a violation) requests without an identifying ``User-Agent``, as the real one does.

Real packages (``tsukud.testing.packages``) are published with ``publish_npm`` and
``publish_wheel``: the npm registry then serves the packument with ``dist.tarball``,
``integrity`` and ``shasum`` for the exact bytes, and the tarball; PyPI serves the JSON
API, the Simple index (PEP 503 HTML or PEP 691 JSON, by the ``Accept`` header, 406 for
neither, a 301 to the normalised name and the trailing ``/``) and the wheel. The real
``npm`` and ``pip`` install from it; anything not published is a 404.

    with FakeEcosystems() as eco:
        eco.add_crate("ripgrep", recent_downloads=5_000_000, versions=40,
                      repository="https://github.com/BurntSushi/ripgrep")
        env = eco.env()   # TSUKU_CRATES_URL=http://127.0.0.1:port/crates, ...
"""

from __future__ import annotations

import hashlib
import json
from typing import Any
from urllib.parse import unquote

from tsukud.registries import pypi as pypi_names
from tsukud.testing.http import FakeHTTPServer, RecordedRequest, Reply
from tsukud.testing.packages import NpmTarball, Sdist, Wheel

PREFIXES = {
    "crates.io": "/crates",
    "npm": "/npm",
    "npm_downloads": "/npm-api",
    "pypi": "/pypi-org",
    "rubygems": "/rubygems",
    "go": "/goproxy",
}
CRATES_NO_USER_AGENT = (
    "We require that all requests include a `User-Agent` header.  To allow us to determine "
    "the impact your bot has on our service, we ask that your user agent actually identify "
    "your bot, and not just report the HTTP client library you're using.  Including contact "
    "information will also reduce the chance that you will be blocked."
)
ENV = {
    "crates.io": "TSUKU_CRATES_URL",
    "npm": "TSUKU_NPM_URL",
    "npm_downloads": "TSUKU_NPM_DOWNLOADS_URL",
    "pypi": "TSUKU_PYPI_URL",
    "rubygems": "TSUKU_RUBYGEMS_URL",
    "go": "TSUKU_GOPROXY_URL",
}


class FakeEcosystems(FakeHTTPServer):
    def __init__(self) -> None:
        super().__init__(fallback=self._route, role="ecosystems")
        self.crates: dict[str, dict[str, Any]] = {}
        self.npm: dict[str, dict[str, Any]] = {}
        self.npm_downloads: dict[str, int] = {}
        self.pypi: dict[str, dict[str, Any]] = {}
        self.gems: dict[str, dict[str, Any]] = {}
        self.gem_versions: dict[str, list[dict[str, Any]]] = {}
        self.go: dict[str, dict[str, Any]] = {}
        self.go_versions: dict[str, list[str]] = {}
        self.npm_files: dict[str, bytes] = {}  # "/<name>/-/<file>.tgz" -> bytes
        self.pypi_files: dict[str, bytes] = {}  # wheel file name -> bytes
        self.delay: dict[str, float] = {}  # builder -> seconds
        # builder -> seconds for its package files alone (npm tarballs): the metadata
        # answers at once, an install (or create's validation) waits on the download.
        self.file_delay: dict[str, float] = {}
        self.fail: dict[str, int] = {}  # builder -> HTTP status

    def base(self, builder: str) -> str:
        return self.url + PREFIXES[builder]

    def env(self) -> dict[str, str]:
        return {ENV[b]: self.base(b) for b in PREFIXES}

    def urls(self) -> dict[str, str]:
        return {b: self.base(b) for b in PREFIXES}

    def paths(self) -> list[str]:
        """The paths asked for, in order."""
        return [r.route for r in self.requests]

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
        bin: bool = True,  # npm's own name: the package installs a command
        maintainers: tuple[str, ...] = ("someone",),
        created: str = "2024-01-01T00:00:00.000Z",
    ) -> None:
        nums = [f"1.{i}.0" for i in range(versions)]
        command = {"bin": {name: "bin/cli.js"}} if bin else {}
        doc: dict[str, Any] = {
            "_id": name,
            "name": name,
            "description": description,
            "dist-tags": {"latest": nums[-1] if nums else "0.0.0"},
            "versions": {n: {"name": name, "version": n, **command} for n in nums},
            "time": {
                "created": created,
                "modified": "2024-01-01T00:00:00.000Z",
                **{n: "2024-01-01T00:00:00.000Z" for n in nums},
            },
            "maintainers": [{"name": m, "email": f"{m}@example.invalid"} for m in maintainers],
        }
        if repository:
            doc["repository"] = {"type": "git", "url": f"git+{repository}.git"}
        self.npm[name] = doc
        self.npm_downloads[name] = weekly_downloads

    def add_pypi(
        self, name: str, *, releases: int = 1, repository: str | None = None, summary: str = ""
    ) -> None:
        nums = [f"0.{i}" for i in range(releases)]
        self.pypi[pypi_names.normalize(name)] = {
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

    def publish_npm(self, tarball: NpmTarball, *, latest: bool = True) -> None:
        """Serve a real tarball: its version in the packument (``dist`` pointing back
        here, with the digests npm checks) and the bytes at ``dist.tarball``."""
        name = tarball.name
        doc = self.npm.setdefault(
            name,
            {"_id": name, "name": name, "dist-tags": {}, "versions": {}, "time": {}},
        )
        path = f"/{name}/-/{tarball.file_name}"
        doc["versions"][tarball.version] = {
            **tarball.manifest,
            "_id": f"{name}@{tarball.version}",
            "dist": {
                "tarball": self.base("npm") + path,
                "integrity": tarball.integrity,
                "shasum": tarball.shasum,
                "fileCount": 2,
            },
        }
        doc["time"][tarball.version] = "2024-01-01T00:00:00.000Z"
        doc["description"] = tarball.manifest.get("description", "")
        if latest or "latest" not in doc["dist-tags"]:
            doc["dist-tags"]["latest"] = tarball.version
        self.npm_files[path] = tarball.data
        self.npm_downloads.setdefault(name, 0)

    def publish_wheel(self, wheel: Wheel, *, latest: bool = True, summary: str = "") -> None:
        """Serve a real wheel: a release in the JSON API and the Simple index, and the
        file under ``/packages/``."""
        self._publish_file(
            wheel.project, wheel.version, wheel.file_name, wheel.data, "bdist_wheel",
            latest=latest, summary=summary,
        )  # fmt: skip

    def publish_sdist(self, package: Sdist, *, latest: bool = True) -> None:
        """Serve a source package beside (or instead of) the release's wheels."""
        self._publish_file(
            package.project, package.version, package.file_name, package.data, "sdist",
            latest=latest,
        )  # fmt: skip

    def _publish_file(
        self,
        project: str,
        version: str,
        file_name: str,
        data: bytes,
        packagetype: str,
        *,
        latest: bool,
        summary: str = "",
    ) -> None:
        key = pypi_names.normalize(project)
        doc = self.pypi.setdefault(
            key,
            {
                "info": {
                    "name": project,
                    "summary": summary,
                    "version": version,
                    "home_page": "",
                    "project_urls": None,
                },
                "releases": {},
                "urls": [],
            },
        )
        entry = {
            "filename": file_name,
            "url": f"{self.base('pypi')}/packages/{file_name}",
            "packagetype": packagetype,
            "digests": {"sha256": hashlib.sha256(data).hexdigest()},
            "requires_python": None,
            "yanked": False,
            "size": len(data),
            "upload_time_iso_8601": "2024-01-01T00:00:00.000000Z",
        }
        files = doc["releases"].setdefault(version, [])
        files.append(entry)
        if latest:
            doc["info"]["version"] = version
            doc["urls"] = list(files)
        self.pypi_files[file_name] = data

    # ---- serving -----------------------------------------------------------------------

    def _route(self, request: RecordedRequest) -> Reply:
        builder = next((b for b, p in PREFIXES.items() if request.route.startswith(p + "/")), None)
        if builder is None:
            return Reply(404, body=b"not found", headers={"content-type": "text/plain"})
        if builder == "crates.io" and not _identifies_itself(request.headers.get("user-agent")):
            return self.reject(
                request,
                "crates.io refuses API requests without an identifying User-Agent",
                Reply(403, json={"errors": [{"detail": CRATES_NO_USER_AGENT}]}),
            )
        rest = unquote(request.route[len(PREFIXES[builder]) :])
        if builder == "pypi" and rest.startswith(("/simple/", "/packages/")):
            if builder in self.fail:
                return Reply(self.fail[builder], body=b"upstream error")
            return self._pypi_files(rest, request.headers.get("accept") or "")
        status, body, ctype = self._answer(builder, rest)
        if builder in self.fail:
            status, body, ctype = self.fail[builder], b"upstream error", "text/plain"
        delay = self.delay.get(builder, 0.0)
        if builder == "npm" and "/-/" in rest:
            delay = self.file_delay.get(builder, delay)
        return Reply(status, body=body, headers={"content-type": ctype}, delay=delay)

    def _pypi_files(self, rest: str, accept: str) -> Reply:
        if rest.startswith("/packages/"):
            data = self.pypi_files.get(rest.removeprefix("/packages/"))
            if data is None:
                return Reply(404, body=b"Not Found", headers={"content-type": "text/plain"})
            return Reply(200, body=data, headers={"content-type": "application/octet-stream"})
        name = rest.removeprefix("/simple/")
        if name and (not name.endswith("/") or pypi_names.normalize(name[:-1]) != name[:-1]):
            target = f"{self.base('pypi')}/simple/{pypi_names.normalize(name.rstrip('/'))}/"
            return Reply(301, headers={"location": target})
        wants_json = _simple_json_wanted(accept)
        if wants_json is None:
            return Reply(406, body=b"Not Acceptable", headers={"content-type": "text/plain"})
        if not name:
            projects = sorted(self.pypi)
            if wants_json:
                body = {"meta": {"api-version": "1.0"}, "projects": [{"name": n} for n in projects]}
                return Reply(200, json=body, headers={"content-type": _SIMPLE_JSON})
            links = "".join(f'<a href="{n}/">{n}</a>\n' for n in projects)
            return _html(f"<!DOCTYPE html><html><body>\n{links}</body></html>\n")
        doc = self.pypi.get(name[:-1])
        files = [f for fs in (doc or {}).get("releases", {}).values() for f in fs]
        if doc is None or not files:
            return Reply(404, body=b"Not Found", headers={"content-type": "text/plain"})
        if wants_json:
            body = {
                "meta": {"api-version": "1.0"},
                "name": name[:-1],
                "files": [
                    {
                        "filename": f["filename"],
                        "url": f"../../packages/{f['filename']}",
                        "hashes": {"sha256": f["digests"]["sha256"]},
                        "requires-python": f["requires_python"],
                        "yanked": f["yanked"],
                    }
                    for f in files
                ],
            }
            return Reply(200, json=body, headers={"content-type": _SIMPLE_JSON})
        anchors = "".join(
            f'<a href="../../packages/{f["filename"]}#sha256={f["digests"]["sha256"]}">'
            f"{f['filename']}</a><br/>\n"
            for f in files
        )
        return _html(f"<!DOCTYPE html><html><body>\n{anchors}</body></html>\n")

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
        if builder == "npm" and "/-/" in rest:
            data = self.npm_files.get(rest)
            return (200, data, "application/octet-stream") if data else missing
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
        if builder == "pypi" and rest.count("/") == 4 and rest.startswith("/pypi/"):
            _, _, project, version, tail = rest.split("/")
            doc = self.pypi.get(pypi_names.normalize(project))
            files = (doc or {}).get("releases", {}).get(version)
            if tail != "json" or doc is None or files is None:
                return 404, b'{"message": "Not Found"}', "application/json"
            return js({**doc, "info": {**doc["info"], "version": version}, "urls": files})
        if builder == "pypi" and rest.startswith("/pypi/") and rest.endswith("/json"):
            doc = self.pypi.get(pypi_names.normalize(rest[len("/pypi/") : -len("/json")]))
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


_SIMPLE_JSON = "application/vnd.pypi.simple.v1+json"
_SIMPLE_HTML = ("application/vnd.pypi.simple.v1+html", "text/html", "*/*")


def _simple_json_wanted(accept: str) -> bool | None:
    """PEP 691 negotiation: True for JSON, False for HTML, None when the client takes
    neither (PyPI answers 406). Without q-values the first listed type wins, as pip
    lists its preference first."""
    if not accept.strip():
        return False
    for part in accept.split(","):
        media = part.split(";")[0].strip().lower()
        if media == _SIMPLE_JSON:
            return True
        if media in _SIMPLE_HTML:
            return False
    return None


def _identifies_itself(user_agent: str | None) -> bool:
    """crates.io wants a User-Agent naming the client, not just its HTTP library."""
    if not user_agent:
        return False
    bare = ("python-httpx/", "python-requests/", "python-urllib/", "curl/")
    return not user_agent.lower().startswith(bare)


def _html(text: str) -> Reply:
    return Reply(200, body=text.encode(), headers={"content-type": "text/html; charset=utf-8"})
