"""A fake GitHub on 127.0.0.1: the REST API, release downloads and a tsuku registry.

Two stdlib ``ThreadingHTTPServer`` instances in background threads (so a real tsukud
subprocess can talk to them), sharing one state:

* ``api_url``: ``/repos/{o}/{r}/releases`` (paginated, ``Link`` headers),
  ``/releases/latest``, ``/releases/tags/{tag}``, ``/tags``, ``/repos/{o}/{r}``,
  ``/contents/{path}``; renamed repositories answer 301 to ``/repositories/{id}/...``
  like GitHub. Every JSON answer has an ``ETag``; ``If-None-Match`` gets a 304 that does
  not count against the rate limit. ``x-ratelimit-*`` headers on every answer; with
  ``rate_limit_remaining`` at 0 the API answers 403 with GitHub's rate-limit body.
* ``web_url`` (``github.com``): ``/{o}/{r}/releases/download/{tag}/{name}`` 302s to
  ``/cdn/...`` (the objects.githubusercontent.com hop), which serves the bytes,
  optionally throttled (``download_rate``) or stalled (``stall_after``). The same server
  serves a registry at ``registry_url`` (``/registry/recipes/{l}/{name}.toml``) and its
  manifest at ``manifest_url``.

Per-test overrides (:meth:`FakeGitHub.override`) answer matching requests with a fixed
status/body; ``requests`` logs everything received (role, method, path, headers).
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
import socket
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, quote, unquote, urlsplit

from tsukud.testing.releases import FakeAsset, FakeRelease, FakeRepo

RATE_LIMIT_BODY = {
    "message": "API rate limit exceeded for 127.0.0.1. (But here's the good news: "
    "Authenticated requests get a higher rate limit. Check out the documentation for "
    "more details.)",
    "documentation_url": "https://docs.github.com/rest/overview/resources-in-the-rest-api#rate-limiting",
}
NOT_FOUND = {
    "message": "Not Found",
    "documentation_url": "https://docs.github.com/rest",
    "status": "404",
}


@dataclass(frozen=True)
class Req:
    role: str  # api | web
    method: str
    path: str
    headers: dict[str, str]  # lower-cased names


@dataclass
class Override:
    pattern: re.Pattern[str]
    status: int = 200
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)
    role: str | None = None
    times: int | None = None  # None: forever
    delay: float = 0.0
    used: int = 0


@dataclass
class _Answer:
    status: int
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)
    file: Path | None = None
    throttle: float | None = None  # bytes per second
    stall_after: int | None = None


def _json(status: int, obj: Any, headers: dict[str, str] | None = None) -> _Answer:
    h = {"content-type": "application/json; charset=utf-8", **(headers or {})}
    return _Answer(status, json.dumps(obj).encode(), h)


class FakeGitHub:
    def __init__(self) -> None:
        self.repos: dict[str, FakeRepo] = {}
        self.aliases: dict[str, str] = {}  # old full name (lower) -> canonical full name
        self.recipes: dict[str, str] = {}  # registry: name -> TOML text
        self.manifest_extra: dict[str, dict[str, Any]] = {}  # name -> extra manifest fields
        self.overrides: list[Override] = []
        self.requests: list[Req] = []
        self.rate_limit_remaining: int | None = None  # None: unlimited
        self.rate_limit_status = 403
        self.download_rate: float | None = None  # bytes/s for CDN answers
        self.stall_after: int | None = None  # CDN sends this many bytes, then hangs
        self.cdn_replacements: dict[str, bytes] = {}  # asset name -> bytes served instead
        self._lock = threading.Lock()
        self._closing = threading.Event()
        self._api = self._server("api")
        self._web = self._server("web")
        self._threads: list[threading.Thread] = []

    # ---- lifecycle -------------------------------------------------------------------

    def _server(self, role: str) -> ThreadingHTTPServer:
        server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler(role))
        server.daemon_threads = True
        server.block_on_close = False
        return server

    @property
    def api_url(self) -> str:
        return f"http://127.0.0.1:{self._api.server_address[1]}"

    @property
    def web_url(self) -> str:
        return f"http://127.0.0.1:{self._web.server_address[1]}"

    @property
    def registry_url(self) -> str:
        return f"{self.web_url}/registry"

    @property
    def manifest_url(self) -> str:
        return f"{self.web_url}/registry/recipes.json"

    def env(self) -> dict[str, str]:
        """Environment pointing tsukud at this fake."""
        return {
            "TSUKU_GITHUB_API_URL": self.api_url,
            "TSUKU_GITHUB_URL": self.web_url,
            "TSUKU_REGISTRY_URL": self.registry_url,
            "TSUKU_MANIFEST_URL": self.manifest_url,
        }

    def start(self) -> FakeGitHub:
        if not self._threads:
            for server in (self._api, self._web):
                t = threading.Thread(
                    target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
                )
                t.start()
                self._threads.append(t)
        return self

    def close(self) -> None:
        self._closing.set()
        for server in (self._api, self._web):
            if self._threads:
                server.shutdown()
            server.server_close()

    def __enter__(self) -> FakeGitHub:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ---- scripting -------------------------------------------------------------------

    def add_repo(self, repo: FakeRepo, *, aliases: tuple[str, ...] = ()) -> FakeRepo:
        with self._lock:
            repo.id = repo.id or 1000 + len(self.repos)
            self.repos[repo.full_name.lower()] = repo
            for old in aliases:
                self.aliases[old.lower()] = repo.full_name
        return repo

    def add_recipe(self, name: str, text: str, **manifest: Any) -> None:
        with self._lock:
            self.recipes[name] = text
            if manifest:
                self.manifest_extra[name] = manifest

    def override(
        self,
        pattern: str,
        *,
        status: int = 200,
        json_body: Any = None,
        body: bytes = b"",
        headers: dict[str, str] | None = None,
        role: str | None = None,
        times: int | None = None,
        delay: float = 0.0,
    ) -> Override:
        """Answer requests whose path matches ``pattern`` (``re.search``) with this."""
        h = dict(headers or {})
        if json_body is not None:
            body = json.dumps(json_body).encode()
            h.setdefault("content-type", "application/json")
        o = Override(re.compile(pattern), status, body, h, role, times, delay)
        with self._lock:
            self.overrides.append(o)
        return o

    def clear_overrides(self) -> None:
        with self._lock:
            self.overrides.clear()

    def requests_to(self, fragment: str, role: str | None = None) -> list[Req]:
        with self._lock:
            return [
                r for r in self.requests if fragment in r.path and (role is None or r.role == role)
            ]

    def release_asset(self, repo: str, tag: str, name: str) -> FakeAsset:
        rel = self.repos[repo.lower()].release(tag)
        assert rel is not None, f"no release {tag} in {repo}"
        asset = rel.asset(name)
        assert asset is not None, f"no asset {name} in {repo} {tag}"
        return asset

    # ---- shapes ----------------------------------------------------------------------

    def _asset_json(self, repo: FakeRepo, rel: FakeRelease, a: FakeAsset, i: int) -> dict[str, Any]:
        tag = quote(rel.tag, safe="")
        dl = f"{self.web_url}/{repo.full_name}/releases/download/{tag}/{quote(a.name)}"
        return {
            "url": f"{self.api_url}/repos/{repo.full_name}/releases/assets/{i}",
            "browser_download_url": dl,
            "id": i,
            "node_id": f"RA_{i}",
            "name": a.name,
            "label": "",
            "state": "uploaded",
            "content_type": a.content_type,
            "size": a.size,
            "digest": f"sha256:{a.sha256}" if a.with_digest else None,
            "download_count": 0,
            "created_at": rel.created_at,
            "updated_at": rel.created_at,
        }

    def _release_json(self, repo: FakeRepo, rel: FakeRelease) -> dict[str, Any]:
        rid = abs(hash((repo.full_name, rel.tag))) % 10_000_000
        return {
            "url": f"{self.api_url}/repos/{repo.full_name}/releases/{rid}",
            "html_url": f"{self.web_url}/{repo.full_name}/releases/tag/{rel.tag}",
            "id": rid,
            "tag_name": rel.tag,
            "name": rel.name or rel.tag,
            "draft": rel.draft,
            "prerelease": rel.prerelease,
            "immutable": False,
            "created_at": rel.created_at,
            "published_at": None if rel.draft else rel.created_at,
            "assets": [
                self._asset_json(repo, rel, a, rid * 1000 + i) for i, a in enumerate(rel.assets)
            ],
        }

    # ---- routing ---------------------------------------------------------------------

    def _rate_headers(self) -> dict[str, str]:
        remaining = 5000 if self.rate_limit_remaining is None else self.rate_limit_remaining
        return {
            "x-ratelimit-limit": "60" if self.rate_limit_remaining is not None else "5000",
            "x-ratelimit-remaining": str(remaining),
            "x-ratelimit-reset": str(int(time.time()) + 3600),
            "x-ratelimit-used": "0",
            "x-ratelimit-resource": "core",
        }

    def _page(self, items: list[Any], base: str, query: dict[str, list[str]]) -> _Answer:
        per_page = min(100, int(query.get("per_page", ["30"])[0]))
        page = max(1, int(query.get("page", ["1"])[0]))
        chunk = items[(page - 1) * per_page : page * per_page]
        last = max(1, -(-len(items) // per_page))
        links = []
        if page < last:
            links.append(f'<{base}?per_page={per_page}&page={page + 1}>; rel="next"')
            links.append(f'<{base}?per_page={per_page}&page={last}>; rel="last"')
        return _json(200, chunk, {"link": ", ".join(links)} if links else {})

    def _api_route(self, path: str, query: dict[str, list[str]]) -> _Answer:
        m = re.match(r"^/repositories/(\d+)(/.*)?$", path)
        if m:
            repo = next((r for r in self.repos.values() if r.id == int(m.group(1))), None)
            if repo is None:
                return _json(404, NOT_FOUND)
            return self._repo_route(repo, m.group(2) or "", query, f"/repositories/{repo.id}")
        m = re.match(r"^/repos/([^/]+)/([^/]+)(/.*)?$", path)
        if not m:
            return _json(404, NOT_FOUND)
        full = f"{unquote(m.group(1))}/{unquote(m.group(2))}".lower()
        rest = m.group(3) or ""
        if full in self.aliases:
            canonical = self.repos[self.aliases[full].lower()]
            q = "&".join(f"{k}={v[0]}" for k, v in query.items())
            location = f"{self.api_url}/repositories/{canonical.id}{rest}" + (f"?{q}" if q else "")
            return _json(
                301,
                {"message": "Moved Permanently", "url": location},
                {"location": location},
            )
        repo = self.repos.get(full)
        if repo is None:
            return _json(404, NOT_FOUND)
        return self._repo_route(repo, rest, query, f"/repos/{repo.full_name}")

    def _repo_route(
        self, repo: FakeRepo, rest: str, query: dict[str, list[str]], base: str
    ) -> _Answer:
        if rest in ("", "/"):
            owner, name = repo.full_name.split("/")
            return _json(
                200,
                {
                    "id": repo.id,
                    "name": name,
                    "full_name": repo.full_name,
                    "owner": {"login": owner, "type": "Organization"},
                    "private": False,
                    "description": repo.description,
                    "homepage": repo.homepage,
                    "html_url": f"{self.web_url}/{repo.full_name}",
                    "default_branch": "main",
                    "archived": False,
                    "fork": False,
                    "stargazers_count": 42,
                    "language": "Go",
                    "topics": ["cli"],
                    "license": {"spdx_id": "MIT", "name": "MIT License"},
                },
            )
        if rest == "/releases":
            rels = [self._release_json(repo, r) for r in repo.releases]
            return self._page(rels, f"{self.api_url}{base}/releases", query)
        if rest == "/releases/latest":
            for r in repo.releases:
                if not r.draft and not r.prerelease:
                    return _json(200, self._release_json(repo, r))
            return _json(404, NOT_FOUND)
        m = re.match(r"^/releases/tags/(.+)$", rest)
        if m:
            rel = repo.release(unquote(m.group(1)))
            if rel is None or rel.draft:
                return _json(404, NOT_FOUND)
            return _json(200, self._release_json(repo, rel))
        if rest == "/tags":
            tags = [
                {
                    "name": t,
                    "commit": {"sha": hashlib.sha1(t.encode(), usedforsecurity=False).hexdigest()},
                }
                for t in repo.tags()
            ]
            return self._page(tags, f"{self.api_url}{base}/tags", query)
        m = re.match(r"^/contents/(.*)$", rest)
        if m:
            return self._contents(repo, unquote(m.group(1)).strip("/"))
        return _json(404, NOT_FOUND)

    def _contents(self, repo: FakeRepo, path: str) -> _Answer:
        if path in repo.files:
            data = repo.files[path]
            return _json(
                200,
                {
                    "type": "file",
                    "encoding": "base64",
                    "size": len(data),
                    "name": path.rsplit("/", 1)[-1],
                    "path": path,
                    "content": base64.encodebytes(data).decode(),
                    "sha": hashlib.sha1(data, usedforsecurity=False).hexdigest(),  # git blob ids
                },
            )
        prefix = path + "/" if path else ""
        children: dict[str, str] = {}
        for f in repo.files:
            if f.startswith(prefix):
                head, sep, _tail = f[len(prefix) :].partition("/")
                children[head] = "dir" if sep else "file"
        if children:
            return _json(
                200,
                [
                    {
                        "name": n,
                        "path": prefix + n,
                        "type": t,
                        "size": len(repo.files.get(prefix + n, b"")),
                    }
                    for n, t in sorted(children.items())
                ],
            )
        return _json(404, NOT_FOUND)

    def _manifest(self) -> dict[str, Any]:
        from tsukud.recipe import parse_recipe

        recipes = []
        for name, text in sorted(self.recipes.items()):
            meta = parse_recipe(text).metadata
            entry: dict[str, Any] = {
                "name": name,
                "description": meta.description or "",
                "homepage": meta.homepage or "",
                "dependencies": [],
                "runtime_dependencies": [],
            }
            if meta.satisfies:
                entry["satisfies"] = {k: list(v) for k, v in meta.satisfies.items()}
            entry.update(self.manifest_extra.get(name, {}))
            recipes.append(entry)
        return {"schema_version": "1", "generated_at": "2026-11-22T00:00:00Z", "recipes": recipes}

    def _web_route(self, path: str) -> _Answer:
        if path == "/registry/recipes.json":
            return _json(200, self._manifest())
        m = re.match(r"^/registry/recipes/([^/]+)/([^/]+)\.toml$", path)
        if m:
            name = unquote(m.group(2))
            text = self.recipes.get(name)
            if text is None or m.group(1) != name[0]:
                return _Answer(404, b"404: Not Found", {"content-type": "text/plain"})
            return _Answer(200, text.encode(), {"content-type": "text/plain; charset=utf-8"})
        m = re.match(r"^/([^/]+)/([^/]+)/releases/download/([^/]+)/([^/]+)$", path)
        if m:
            full = f"{m.group(1)}/{m.group(2)}".lower()
            if full in self.aliases:
                canonical = self.aliases[full]
                return _Answer(
                    301,
                    b"",
                    {"location": f"/{canonical}/releases/download/{m.group(3)}/{m.group(4)}"},
                )
            repo = self.repos.get(full)
            rel = repo.release(unquote(m.group(3))) if repo else None
            asset = rel.asset(unquote(m.group(4))) if rel else None
            if repo is None or rel is None or asset is None:
                return _Answer(404, b"Not Found", {"content-type": "text/plain"})
            token = hashlib.sha256(path.encode()).hexdigest()[:16]
            location = f"/cdn/{repo.full_name}/{m.group(3)}/{m.group(4)}?sig={token}"
            return _Answer(302, b"", {"location": location})
        m = re.match(r"^/cdn/([^/]+)/([^/]+)/([^/]+)/([^/]+)$", path)
        if m:
            repo = self.repos.get(f"{m.group(1)}/{m.group(2)}".lower())
            rel = repo.release(unquote(m.group(3))) if repo else None
            asset = rel.asset(unquote(m.group(4))) if rel else None
            if asset is None:
                return _Answer(404, b"Not Found")
            headers = {
                "content-type": "application/octet-stream",
                "content-disposition": f"attachment; filename={asset.name}",
            }
            replaced = self.cdn_replacements.get(asset.name)
            if replaced is not None:
                return _Answer(
                    200,
                    replaced,
                    headers,
                    throttle=self.download_rate,
                    stall_after=self.stall_after,
                )
            if isinstance(asset.data, Path):
                return _Answer(
                    200,
                    b"",
                    headers,
                    file=asset.data,
                    throttle=self.download_rate,
                    stall_after=self.stall_after,
                )
            return _Answer(
                200,
                asset.content(),
                headers,
                throttle=self.download_rate,
                stall_after=self.stall_after,
            )
        return _Answer(404, b"Not Found")

    def _answer(self, role: str, req: Req) -> _Answer:
        with self._lock:
            override = None
            for o in self.overrides:
                if (o.role is None or o.role == role) and o.pattern.search(req.path):
                    if o.times is not None and o.used >= o.times:
                        continue
                    o.used += 1
                    override = o
                    break
        if override is not None:
            if override.delay and self._closing.wait(override.delay):
                return _Answer(503, b"closing")
            return _Answer(override.status, override.body, dict(override.headers))
        parts = urlsplit(req.path)
        query = parse_qs(parts.query)
        if role == "web":
            return self._web_route(parts.path)
        if self.rate_limit_remaining is not None and self.rate_limit_remaining <= 0:
            headers = {**self._rate_headers(), "x-ratelimit-remaining": "0"}
            return _json(self.rate_limit_status, RATE_LIMIT_BODY, headers)
        answer = self._api_route(parts.path, query)
        etag = '"' + hashlib.sha256(answer.body).hexdigest()[:20] + '"'
        if answer.status == 200:
            answer.headers["etag"] = etag
            if req.headers.get("if-none-match") == etag:
                return _Answer(304, b"", {"etag": etag, **self._rate_headers()})
        if self.rate_limit_remaining is not None:
            self.rate_limit_remaining -= 1
        answer.headers.update(self._rate_headers())
        return answer

    def _handler(self, role: str) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def setup(self) -> None:
                super().setup()
                self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                req = Req(role, "GET", self.path, {k.lower(): v for k, v in self.headers.items()})
                with fake._lock:
                    fake.requests.append(req)
                answer = fake._answer(role, req)
                try:
                    self._send(answer)
                except (BrokenPipeError, ConnectionResetError):
                    self.close_connection = True

            def _send(self, a: _Answer) -> None:
                size = a.file.stat().st_size if a.file is not None else len(a.body)
                self.send_response(a.status)
                for k, v in a.headers.items():
                    self.send_header(k, v)
                self.send_header("content-length", str(size))
                self.end_headers()
                if a.file is not None and a.throttle is None and a.stall_after is None:
                    self.wfile.flush()
                    with a.file.open("rb") as f:
                        self.connection.sendfile(f)
                    return
                data = a.file.read_bytes() if a.file is not None else a.body
                if a.throttle is None and a.stall_after is None:
                    self.wfile.write(data)
                    return
                self._trickle(data, a.throttle, a.stall_after)

            def _trickle(self, data: bytes, rate: float | None, stall_after: int | None) -> None:
                chunk = 16 * 1024
                sent = 0
                while sent < len(data):
                    if stall_after is not None and sent >= stall_after:
                        fake._closing.wait(3600)  # hang until the fake closes
                        self.close_connection = True
                        return
                    size = chunk if stall_after is None else min(chunk, stall_after - sent)
                    piece = data[sent : sent + size]
                    self.wfile.write(piece)
                    self.wfile.flush()
                    sent += len(piece)
                    if rate and fake._closing.wait(len(piece) / rate):
                        return

        return Handler
