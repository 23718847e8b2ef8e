"""A fake GitHub on 127.0.0.1, as strict as the real one: the REST API, release
downloads through a separate asset host, and a tsuku registry.

Three :class:`~tsukud.testing.http.FakeHTTPServer` instances (so a real tsukud
subprocess can talk to them) sharing one state and one request journal:

* ``api_url`` (``api.github.com``): ``/repos/{o}/{r}/releases`` (paginated, ``Link``
  headers), ``/releases/latest``, ``/releases/tags/{tag}``, ``/tags``, ``/repos/{o}/{r}``,
  ``/contents/{path}``; renamed repositories answer 301 to ``/repositories/{id}/...``
  like GitHub. Every JSON answer has an ``ETag`` and ``If-None-Match`` gets a 304.
* ``web_url`` (``github.com``): ``/{o}/{r}/releases/download/{tag}/{name}`` 302s to the
  asset host; the same server serves a registry at ``registry_url``
  (``/registry/recipes/{l}/{name}.toml``) and its manifest at ``manifest_url``.
* ``assets_url`` (``release-assets.githubusercontent.com``): signed ``/cdn/...`` URLs
  serving the bytes, optionally throttled (``download_rate``) or stalled
  (``stall_after``).

GitHub's rules, as the real service applies them (a refusal is also recorded as a
violation, see :mod:`tsukud.testing.http`):

* An ``Authorization`` with a token not in ``tokens`` answers 401 "Bad credentials"; a
  request without ``User-Agent`` answers 403.
* Primary rate limit per identity and window: ``limits`` (anonymous 60, a token 5000
  per hour), ``x-ratelimit-*`` on every API answer, 403 (``rate_limit_status``) with
  GitHub's body once used up. Every answer costs one, except a 304, which is free for
  authenticated requests only. ``rate_limit_remaining = n`` leaves every identity ``n``;
  ``= None`` starts a new window.
* ``secondary_retry_after = s`` answers every API request 403 with the documented
  secondary-rate-limit message and ``retry-after: s``.
* The asset host refuses (400, S3's words) a request carrying ``Authorization``: a
  client that forwards the GitHub token across the redirect leaks it to a CDN.

Per-test overrides (:meth:`FakeGitHub.override`) answer matching requests with a fixed
status/body after the credential checks; ``requests`` logs everything received (role
``api``, ``web`` or ``assets``, method, path, headers).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import re
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote, unquote

from tsukud.testing.http import FakeGroup, FakeHTTPServer, RecordedRequest, Reply
from tsukud.testing.releases import FakeAsset, FakeRelease, FakeRepo

RATE_LIMIT_BODY = {
    "message": "API rate limit exceeded for 127.0.0.1. (But here's the good news: "
    "Authenticated requests get a higher rate limit. Check out the documentation for "
    "more details.)",
    "documentation_url": "https://docs.github.com/rest/overview/resources-in-the-rest-api#rate-limiting",
}
TOKEN_RATE_LIMIT_BODY = {
    "message": "API rate limit exceeded for user ID 1.",
    "documentation_url": "https://docs.github.com/rest/overview/rate-limits-for-the-rest-api",
}
SECONDARY_RATE_LIMIT_BODY = {
    "message": "You have exceeded a secondary rate limit. Please wait a few minutes before "
    "you try again. If you reach out to GitHub Support for help, please include the "
    "request ID 0000:0000:0000000:0000000:00000000.",
    "documentation_url": "https://docs.github.com/free-pro-team@latest/rest/overview/"
    "rate-limits-for-the-rest-api#about-secondary-rate-limits",
}
BAD_CREDENTIALS = {
    "message": "Bad credentials",
    "documentation_url": "https://docs.github.com/rest",
    "status": "401",
}
NO_USER_AGENT = (
    b"Request forbidden by administrative rules. Please make sure your request has a "
    b"User-Agent header (https://docs.github.com/en/rest/overview/resources-in-the-rest-api"
    b"#user-agent-required). Check https://developer.github.com for other possible causes.\n"
)
NOT_FOUND = {
    "message": "Not Found",
    "documentation_url": "https://docs.github.com/rest",
    "status": "404",
}
S3_TWO_AUTHS = (
    b'<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>InvalidArgument</Code>'
    b"<Message>Only one auth mechanism allowed; only the X-Amz-Algorithm query parameter, "
    b"Signature query string parameter or the Authorization header should be specified"
    b"</Message><ArgumentName>Authorization</ArgumentName></Error>"
)
S3_DENIED = (
    b'<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>AccessDenied</Code>'
    b"<Message>Request has expired or the signature does not match</Message></Error>"
)
ANONYMOUS = ""  # the identity of requests without a token
WINDOW = 3600.0  # seconds of a primary rate-limit window

Req = RecordedRequest  # the journal's entries (``role`` says which host got them)


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


def _json(status: int, obj: Any, headers: dict[str, str] | None = None) -> Reply:
    h = {"content-type": "application/json; charset=utf-8", **(headers or {})}
    return Reply(status, body=json.dumps(obj).encode(), headers=h)


def _text(status: int, body: bytes, content_type: str = "text/plain") -> Reply:
    return Reply(status, body=body, headers={"content-type": content_type})


class FakeGitHub(FakeGroup):
    def __init__(self, *, tokens: set[str] | None = None) -> None:
        self.repos: dict[str, FakeRepo] = {}
        self.aliases: dict[str, str] = {}  # old full name (lower) -> canonical full name
        self.recipes: dict[str, str] = {}  # registry: name -> TOML text
        self.manifest_extra: dict[str, dict[str, Any]] = {}  # name -> extra manifest fields
        self.overrides: list[Override] = []
        self.requests: list[Req] = []
        self.tokens: set[str] = set(tokens or ())  # tokens GitHub accepts
        self.limits = {"anonymous": 60, "authenticated": 5000}  # per identity and hour
        self.rate_limit_status = 403
        self.secondary_retry_after: int | None = None  # seconds; None: no secondary limit
        self.download_rate: float | None = None  # bytes/s for asset answers
        self.stall_after: int | None = None  # the asset host sends this many bytes, then hangs
        self.cdn_replacements: dict[str, bytes] = {}  # asset name -> bytes served instead
        self._used: dict[str, int] = {}  # identity -> requests counted in this window
        self._window_start = time.time()
        self._secret = b"fake-github-asset-signing"
        self._lock = threading.Lock()
        self._api = FakeHTTPServer(self._api_answer, role="api", journal=self.requests)
        self._web = FakeHTTPServer(self._web_answer, role="web", journal=self.requests)
        self._assets = FakeHTTPServer(self._assets_answer, role="assets", journal=self.requests)
        self._servers = (self._api, self._web, self._assets)

    # ---- lifecycle -------------------------------------------------------------------

    @property
    def api_url(self) -> str:
        return self._api.url

    @property
    def web_url(self) -> str:
        return self._web.url

    @property
    def assets_url(self) -> str:
        return self._assets.url

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

    # ---- strictness (start, close, violations: FakeGroup) -----------------------------

    def reset_quota(self) -> None:
        """Start a new primary rate-limit window (an hour has passed)."""
        with self._lock:
            self._used.clear()
            self._window_start = time.time()

    @property
    def rate_limit_remaining(self) -> int:
        """What anonymous requests have left in this window."""
        with self._lock:
            return self._limit(ANONYMOUS) - self._used.get(ANONYMOUS, 0)

    @rate_limit_remaining.setter
    def rate_limit_remaining(self, remaining: int | None) -> None:
        if remaining is None:
            self.reset_quota()
            return
        with self._lock:
            for identity in (ANONYMOUS, *self.tokens):
                self._used[identity] = self._limit(identity) - remaining

    def quota_used(self, token: str = ANONYMOUS) -> int:
        """Requests counted against ``token`` (anonymous by default) in this window."""
        with self._lock:
            return self._used.get(token, 0)

    def _limit(self, identity: str) -> int:
        return self.limits["authenticated" if identity else "anonymous"]

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

    def add_token(self, token: str) -> str:
        """Make GitHub accept ``token`` (any other ``Authorization`` answers 401)."""
        with self._lock:
            self.tokens.add(token)
        return token

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

    # ---- API routes --------------------------------------------------------------------

    def _page(self, items: list[Any], base: str, query: dict[str, list[str]]) -> Reply:
        per_page = min(100, int(query.get("per_page", ["30"])[0]))
        page = max(1, int(query.get("page", ["1"])[0]))
        chunk = items[(page - 1) * per_page : page * per_page]
        last = max(1, -(-len(items) // per_page))
        links = []
        if page < last:
            links.append(f'<{base}?per_page={per_page}&page={page + 1}>; rel="next"')
            links.append(f'<{base}?per_page={per_page}&page={last}>; rel="last"')
        return _json(200, chunk, {"link": ", ".join(links)} if links else {})

    def _api_route(self, path: str, query: dict[str, list[str]]) -> Reply:
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
    ) -> Reply:
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

    def _contents(self, repo: FakeRepo, path: str) -> Reply:
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

    # ---- release downloads -----------------------------------------------------------

    def _signature(self, path: str) -> str:
        return hmac.new(self._secret, path.encode(), hashlib.sha256).hexdigest()[:32]

    def _web_route(self, path: str) -> Reply:
        if path == "/registry/recipes.json":
            return _json(200, self._manifest())
        m = re.match(r"^/registry/recipes/([^/]+)/([^/]+)\.toml$", path)
        if m:
            name = unquote(m.group(2))
            text = self.recipes.get(name)
            if text is None or m.group(1) != name[0]:
                return _text(404, b"404: Not Found")
            return _text(200, text.encode(), "text/plain; charset=utf-8")
        m = re.match(r"^/([^/]+)/([^/]+)/releases/download/([^/]+)/([^/]+)$", path)
        if not m:
            return _text(404, b"Not Found")
        full = f"{m.group(1)}/{m.group(2)}".lower()
        if full in self.aliases:
            canonical = self.aliases[full]
            location = f"/{canonical}/releases/download/{m.group(3)}/{m.group(4)}"
            return Reply(301, headers={"location": location})
        repo = self.repos.get(full)
        rel = repo.release(unquote(m.group(3))) if repo else None
        asset = rel.asset(unquote(m.group(4))) if rel else None
        if repo is None or rel is None or asset is None:
            return _text(404, b"Not Found")
        cdn = f"/cdn/{repo.full_name}/{m.group(3)}/{m.group(4)}"
        location = f"{self.assets_url}{cdn}?sig={self._signature(cdn)}"
        return Reply(302, headers={"location": location})

    def _assets_route(self, request: RecordedRequest) -> Reply:
        path = request.route
        m = re.match(r"^/cdn/([^/]+)/([^/]+)/([^/]+)/([^/]+)$", path)
        if not m:
            return _text(404, b"Not Found")
        if request.query.get("sig", [""])[0] != self._signature(path):
            return self._assets.reject(
                request,
                "the asset URL's signature is missing or wrong (only GitHub's redirect has it)",
                _text(403, S3_DENIED, "application/xml"),
            )
        repo = self.repos.get(f"{m.group(1)}/{m.group(2)}".lower())
        rel = repo.release(unquote(m.group(3))) if repo else None
        asset = rel.asset(unquote(m.group(4))) if rel else None
        if asset is None:
            return _text(404, b"Not Found")
        headers = {
            "content-type": "application/octet-stream",
            "content-disposition": f"attachment; filename={asset.name}",
        }
        replaced = self.cdn_replacements.get(asset.name)
        file = asset.data if replaced is None and isinstance(asset.data, Path) else None
        body = b"" if file is not None else replaced if replaced is not None else asset.content()
        return Reply(
            200,
            body=body,
            headers=headers,
            file=file,
            rate=self.download_rate,
            stall_after=self.stall_after,
        )

    # ---- answering ---------------------------------------------------------------------

    def _override(self, role: str, request: RecordedRequest) -> Reply | None:
        with self._lock:
            for o in self.overrides:
                if (o.role is None or o.role == role) and o.pattern.search(request.path):
                    if o.times is not None and o.used >= o.times:
                        continue
                    o.used += 1
                    return Reply(o.status, body=o.body, headers=dict(o.headers), delay=o.delay)
        return None

    def _identity(self, request: RecordedRequest) -> str | None:
        """The token a request authenticates with, ``ANONYMOUS``, or None when GitHub
        would not accept its ``Authorization``."""
        auth = request.headers.get("authorization")
        if auth is None:
            return ANONYMOUS
        scheme, _, token = auth.strip().partition(" ")
        if scheme.lower() in ("bearer", "token") and token.strip() in self.tokens:
            return token.strip()
        return None

    def _rate_headers(self, identity: str) -> dict[str, str]:
        used = self._used.get(identity, 0)
        limit = self._limit(identity)
        return {
            "x-ratelimit-limit": str(limit),
            "x-ratelimit-remaining": str(max(0, limit - used)),
            "x-ratelimit-reset": str(int(self._window_start + WINDOW)),
            "x-ratelimit-used": str(used),
            "x-ratelimit-resource": "core",
        }

    def _api_answer(self, request: RecordedRequest) -> Reply:
        identity = self._identity(request)
        if identity is None:
            return self._api.reject(
                request,
                "Authorization carries a token GitHub does not know (401 Bad credentials)",
                _json(401, BAD_CREDENTIALS),
            )
        if "user-agent" not in request.headers:
            return self._api.reject(
                request, "no User-Agent header (GitHub requires one)", _text(403, NO_USER_AGENT)
            )
        override = self._override("api", request)
        if override is not None:
            return override
        with self._lock:
            if self.secondary_retry_after is not None:
                headers = {
                    **self._rate_headers(identity),
                    "retry-after": str(self.secondary_retry_after),
                }
                return _json(403, SECONDARY_RATE_LIMIT_BODY, headers)
            if self._used.get(identity, 0) >= self._limit(identity):
                body = TOKEN_RATE_LIMIT_BODY if identity else RATE_LIMIT_BODY
                return _json(self.rate_limit_status, body, self._rate_headers(identity))
        answer = self._api_route(request.route, request.query)
        etag = '"' + hashlib.sha256(answer.body).hexdigest()[:20] + '"'
        cost = 1
        if answer.status == 200:
            answer.headers["etag"] = etag
            if request.headers.get("if-none-match") == etag:
                # GitHub waives conditional requests answered 304 for authorised
                # requests only.
                answer = Reply(304, headers={"etag": etag})
                cost = 0 if identity else 1
        with self._lock:
            self._used[identity] = self._used.get(identity, 0) + cost
            answer.headers.update(self._rate_headers(identity))
        return answer

    def _web_answer(self, request: RecordedRequest) -> Reply:
        return self._override("web", request) or self._web_route(request.route)

    def _assets_answer(self, request: RecordedRequest) -> Reply:
        if "authorization" in request.headers:
            return self._assets.reject(
                request,
                "the asset host got an Authorization header: the GitHub token was forwarded "
                "across the redirect (S3 refuses a second auth mechanism)",
                _text(400, S3_TWO_AUTHS, "application/xml"),
            )
        return self._override("assets", request) or self._assets_route(request)
