"""A strict fake of Homebrew's formulae JSON API and its bottle registry (ghcr.io),
serving bottles a test builds (``bottle_tarball``).

Three loopback origins, as in the real world:

* the **formulae API**: ``/api/formula/<name>.json`` (404 for an unknown formula);
* the **registry**: ``/token?service=ghcr.io&scope=repository:homebrew/core/<image>:pull``
  issues a token valid for that image only; ``/v2/homebrew/core/<image>/manifests/<tag>``
  (the OCI image index; the index Accept header is required),
  ``.../manifests/sha256:<hex>`` (a platform manifest; its Accept required),
  ``.../tags/list`` and ``.../blobs/sha256:<hex>`` (a 307 to the storage origin).
  Without a valid bearer: 401 with ``WWW-Authenticate`` pointing at the fake realm;
  an unknown tag, digest or blob: 404 with the OCI error body;
* the **blob storage**: ``/ghcr1/blobs/sha256:<hex>?se=…&sig=…``; a request carrying
  ``Authorization`` (the registry's token leaked across hosts) is refused.

Every refusal the product should never provoke is recorded as a violation.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import re
import secrets
import tarfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs, urlsplit

from tsukud.recipe.homebrew import (
    BOTTLE_DIGEST,
    INDEX_MEDIA_TYPE,
    MANIFEST_MEDIA_TYPE,
    REF_NAME,
    image_name,
    oci_tag,
    pkg_version,
    repository,
)
from tsukud.testing.http import FakeGroup, FakeHTTPServer, RecordedRequest, Reply

_V2 = re.compile(r"^/v2/homebrew/core/(?P<image>.+)/(?P<kind>manifests|blobs|tags)/(?P<ref>.+)$")
_PLATFORMS = {
    "x86_64_linux": {"architecture": "amd64", "os": "linux", "os.version": "Ubuntu 22.04"},
    "arm64_linux": {"architecture": "arm64", "os": "linux", "os.version": "Ubuntu 22.04"},
}


@dataclass(frozen=True)
class Member:
    """One entry of a bottle tarball under ``<formula>/<pkg_version>/``."""

    data: bytes = b""
    mode: int = 0o444  # bottles ship read-only files
    link: str | None = None  # a symlink's target (data ignored)


def bottle_tarball(formula: str, pkg: str, members: Mapping[str, bytes | Member]) -> bytes:
    """A gzip'd tar laid out as ``brew bottle`` writes it: ``<formula>/<pkg>/<path>``;
    the same members always give the same bytes (and digest)."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for rel, value in sorted(members.items()):
            member = value if isinstance(value, Member) else Member(value)
            info = tarfile.TarInfo(f"{formula}/{pkg}/{rel}")
            info.mtime = 0
            if member.link is not None:
                info.type = tarfile.SYMTYPE
                info.linkname = member.link
                tar.addfile(info)
                continue
            info.size = len(member.data)
            info.mode = member.mode
            tar.addfile(info, io.BytesIO(member.data))
    return gzip.compress(buf.getvalue(), mtime=0)


def _path_exec_files(tarball: bytes) -> list[str]:
    """What ``brew bottle`` records as ``sh.brew.path_exec_files``: the executables in
    the keg's ``bin/`` and ``sbin/`` (none for bytes that are not a bottle)."""
    try:
        with tarfile.open(fileobj=io.BytesIO(tarball), mode="r:gz") as tar:
            members = tar.getmembers()
    except (tarfile.TarError, OSError):
        return []
    out = []
    for m in members:
        parts = m.name.split("/", 3)
        if len(parts) == 4 and parts[2] in ("bin", "sbin") and m.isfile() and m.mode & 0o111:
            out.append(f"{parts[2]}/{parts[3]}")
    return sorted(out)


@dataclass
class _Image:
    indexes: dict[str, bytes] = field(default_factory=dict)  # tag → index JSON
    manifests: dict[str, bytes] = field(default_factory=dict)  # "sha256:…" → manifest


def _digest(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def _oci_error(status: int, code: str, message: str) -> Reply:
    return Reply(status, json={"errors": [{"code": code, "message": message, "detail": None}]})


class FakeHomebrew(FakeGroup):
    def __init__(self) -> None:
        self.api = FakeHTTPServer(self._api_route, role="formulae-api")
        self.registry = FakeHTTPServer(self._registry_route, role="ghcr")
        self.storage = FakeHTTPServer(self._storage_route, role="blob-storage")
        self._servers = (self.api, self.registry, self.storage)
        self.formulae: dict[str, dict[str, Any]] = {}
        self.images: dict[str, _Image] = {}
        self.blobs: dict[str, bytes] = {}  # hex → bytes as stored (and digested)
        self.served: dict[str, bytes] = {}  # hex → bytes sent instead (a tampered blob)
        self.tokens: dict[str, str] = {}  # token → image it may pull
        self._signatures: dict[str, str] = {}

    # ---- lifecycle ---------------------------------------------------------------------

    def env(self) -> dict[str, str]:
        return {
            "TSUKU_HOMEBREW_API_URL": self.api.url,
            "TSUKU_HOMEBREW_REGISTRY_URL": self.registry.url,
        }

    # ---- content -----------------------------------------------------------------------

    def publish(
        self,
        formula: str,
        version: str,
        bottles: Mapping[str, bytes],
        *,
        revision: int = 0,
        rebuild: int = 0,
        dependencies: Sequence[str] = (),
        current: bool = True,
    ) -> str:
        """Push ``bottles`` (bottle tag → tarball) of ``formula`` at ``version`` as one
        image tag, and (``current``) make it the formula's version in the JSON API.
        Returns the registry tag."""
        pkg = pkg_version(version, revision)
        tag = oci_tag(pkg, rebuild)
        image = self.images.setdefault(image_name(formula), _Image())
        entries = []
        files: dict[str, Any] = {}
        for bottle_tag, tarball in sorted(bottles.items()):
            blob = hashlib.sha256(tarball).hexdigest()
            self.blobs[blob] = tarball
            config = json.dumps({"architecture": "amd64", "os": "linux"}).encode()
            self.blobs[hashlib.sha256(config).hexdigest()] = config
            manifest = json.dumps(
                {
                    "schemaVersion": 2,
                    "mediaType": MANIFEST_MEDIA_TYPE,
                    "config": {
                        "mediaType": "application/vnd.oci.image.config.v1+json",
                        "digest": _digest(config),
                        "size": len(config),
                    },
                    "layers": [
                        {
                            "mediaType": "application/vnd.oci.image.layer.v1.tar+gzip",
                            "digest": "sha256:" + blob,
                            "size": len(tarball),
                        }
                    ],
                },
                indent=1,
            ).encode()
            image.manifests[_digest(manifest)] = manifest
            ref = f"{pkg}.{bottle_tag}" + (f".{rebuild}" if rebuild else "")
            exec_files = _path_exec_files(tarball)
            entry: dict[str, Any] = {
                "mediaType": MANIFEST_MEDIA_TYPE,
                "digest": _digest(manifest),
                "size": len(manifest),
                "annotations": {
                    REF_NAME: ref,
                    BOTTLE_DIGEST: blob,
                    "sh.brew.bottle.size": str(len(tarball)),
                },
            }
            if exec_files:
                entry["annotations"]["sh.brew.path_exec_files"] = ",".join(exec_files)
            if bottle_tag in _PLATFORMS:
                entry["platform"] = _PLATFORMS[bottle_tag]
            entries.append(entry)
            files[bottle_tag] = {
                "cellar": ":any",
                "url": f"{self.registry.url}/v2/{repository(formula)}/blobs/sha256:{blob}",
                "sha256": blob,
            }
        image.indexes[tag] = json.dumps(
            {
                "schemaVersion": 2,
                "mediaType": INDEX_MEDIA_TYPE,
                "manifests": entries,
                "annotations": {REF_NAME: tag, "org.opencontainers.image.version": pkg},
            }
        ).encode()
        if current:
            self.formulae[formula] = {
                "name": formula,
                "full_name": formula,
                "tap": "homebrew/core",
                "versions": {"stable": version, "head": None, "bottle": True},
                "revision": revision,
                "version_scheme": 0,
                "bottle": {
                    "stable": {
                        "rebuild": rebuild,
                        "root_url": f"{self.registry.url}/v2/homebrew/core",
                        "files": files,
                    }
                },
                "dependencies": list(dependencies),
                "build_dependencies": [],
                "uses_from_macos": [],
                "keg_only": False,
                "variations": {},
            }
        return tag

    def tamper(self, sha256: str, data: bytes) -> None:
        """Serve ``data`` for the blob ``sha256`` (whose digest stays published)."""
        self.served[sha256] = data

    def blob_requests(self) -> list[RecordedRequest]:
        return [r for r in self.storage.requests if r.route.startswith("/ghcr1/blobs/")]

    # ---- routes ------------------------------------------------------------------------

    def _api_route(self, request: RecordedRequest) -> Reply:
        if request.method != "GET":
            return self.api.reject(request, "the formulae API serves GET only", Reply(405))
        m = re.fullmatch(r"/api/formula/(.+)\.json", request.route)
        if m is None or m.group(1) not in self.formulae:
            return Reply(404, body=b"404: Not Found")
        return Reply(json=self.formulae[m.group(1)])

    def _registry_route(self, request: RecordedRequest) -> Reply:
        if request.route == "/token":
            return self._token(request)
        m = _V2.match(request.route)
        if m is None:
            return _oci_error(404, "NAME_UNKNOWN", "repository name not known to registry")
        image, kind, ref = m.group("image"), m.group("kind"), m.group("ref")
        auth = request.headers.get("authorization", "")
        granted = (
            self.tokens.get(auth.removeprefix("Bearer ")) if auth.startswith("Bearer ") else None
        )
        if granted != image:
            scope = f"repository:homebrew/core/{image}:pull"
            reply = _oci_error(401, "UNAUTHORIZED", "authentication required")
            reply.headers["WWW-Authenticate"] = (
                f'Bearer realm="{self.registry.url}/token",service="ghcr.io",scope="{scope}"'
            )
            return self.registry.reject(request, "no valid bearer token for " + image, reply)
        found = self.images.get(image)
        if kind == "tags":
            if ref != "list" or found is None:
                return _oci_error(404, "NAME_UNKNOWN", "repository name not known to registry")
            return Reply(json={"name": f"homebrew/core/{image}", "tags": sorted(found.indexes)})
        if kind == "blobs":
            return self._blob(ref)
        accept = request.headers.get("accept", "")
        if ref.startswith("sha256:"):
            if MANIFEST_MEDIA_TYPE not in accept:
                return self.registry.reject(
                    request, "a manifest GET without the OCI manifest Accept", Reply(406)
                )
            body = found.manifests.get(ref) if found else None
            media = MANIFEST_MEDIA_TYPE
        else:
            if INDEX_MEDIA_TYPE not in accept:
                return self.registry.reject(
                    request, "an index GET without the OCI index Accept", Reply(406)
                )
            body = found.indexes.get(ref) if found else None
            media = INDEX_MEDIA_TYPE
        if body is None:
            return _oci_error(404, "MANIFEST_UNKNOWN", "manifest unknown")
        return Reply(
            body=body, headers={"content-type": media, "docker-content-digest": _digest(body)}
        )

    def _token(self, request: RecordedRequest) -> Reply:
        query = request.query
        scope = (query.get("scope") or [""])[0]
        m = re.fullmatch(r"repository:homebrew/core/(.+):pull", scope)
        if (query.get("service") or [""])[0] != "ghcr.io" or m is None:
            return self.registry.reject(
                request,
                "token request with a wrong service or scope",
                _oci_error(400, "DENIED", "invalid scope or service"),
            )
        token = secrets.token_urlsafe(16)
        self.tokens[token] = m.group(1)
        return Reply(json={"token": token})

    def _blob(self, ref: str) -> Reply:
        hex_part = ref.removeprefix("sha256:")
        if not ref.startswith("sha256:") or hex_part not in self.blobs:
            return _oci_error(404, "BLOB_UNKNOWN", "blob unknown to registry")
        sig = secrets.token_hex(8)
        self._signatures[hex_part] = sig
        location = f"{self.storage.url}/ghcr1/blobs/sha256:{hex_part}?se=2099-01-01&sig={sig}"
        return Reply(307, headers={"Location": location})

    def _storage_route(self, request: RecordedRequest) -> Reply:
        if "authorization" in request.headers:
            return self.storage.reject(
                request, "the registry's token was sent to the blob storage host", Reply(400)
            )
        hex_part = request.route.removeprefix("/ghcr1/blobs/sha256:")
        sig = parse_qs(urlsplit(request.path).query).get("sig", [""])[0]
        if hex_part not in self.blobs or self._signatures.get(hex_part) != sig:
            return self.storage.reject(request, "an unsigned or unknown blob URL", Reply(403))
        data = self.served.get(hex_part, self.blobs[hex_part])
        return Reply(body=data, headers={"content-type": "application/octet-stream"})
