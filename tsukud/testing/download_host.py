"""A plain download host, as the registry's URL recipes use (dl.k8s.io,
releases.hashicorp.com, get.helm.sh): files at fixed paths, a ``.sha256`` beside each
one unless told otherwise, and JSON documents for ``http_json`` version sources.

It refuses what such hosts refuse: anything but ``GET``/``HEAD`` (405) and a request
with credentials (a download host has no use for them, and sending one is a leak).
Like a CDN it serves byte ranges (``Range: bytes=N-``, guarded by ``If-Range`` with
the file's ETag) unless built with ``ranges=False``; :meth:`FakeDownloadHost.cut_once`
breaks the next download of a file part-way, as a flaky network does, and
:meth:`FakeDownloadHost.stall_once` makes it hang part-way (a connection that stays open
and sends nothing more, which only the client's read timeout ends).
"""

from __future__ import annotations

import hashlib
import re
from typing import Any

from tsukud.testing.http import FakeHTTPServer, RecordedRequest, Reply

_RANGE = re.compile(r"^bytes=(\d+)-$")


class FakeDownloadHost(FakeHTTPServer):
    def __init__(self, *, ranges: bool = True) -> None:
        super().__init__(self._route, role="download-host")
        self.files: dict[str, bytes] = {}
        self.documents: dict[str, Any] = {}
        self.ranges = ranges
        self.rate: float | None = None  # bytes per second for files (a slow link)
        self._cuts: dict[str, int] = {}
        self._stalls: dict[str, int] = {}

    def stall_once(self, path: str, after: int) -> None:
        """The next download of ``path`` sends ``after`` bytes of its body, then nothing
        more while the connection stays open."""
        self._stalls[path] = after

    def cut_once(self, path: str, after: int) -> None:
        """The next download of ``path`` stops after ``after`` bytes of its body (the
        connection closes; ``content-length`` promised the rest)."""
        self._cuts[path] = after

    def add(self, path: str, data: bytes, *, sha256_file: bool = True) -> str:
        """Serve ``data`` at ``path`` (and its checksum at ``path + ".sha256"``, one
        hash as dl.k8s.io writes it); returns the file's URL."""
        self.files[path] = data
        if sha256_file:
            self.files[path + ".sha256"] = hashlib.sha256(data).hexdigest().encode() + b"\n"
        return self.url + path

    def add_json(self, path: str, document: Any) -> str:
        self.documents[path] = document
        return self.url + path

    def fetched(self) -> list[str]:
        return [r.route for r in self.requests]

    def _route(self, request: RecordedRequest) -> Reply:
        if request.method not in ("GET", "HEAD"):
            return self.reject(request, "a download host serves GET only", Reply(405))
        if "authorization" in request.headers:
            return self.reject(
                request, "credentials sent to a download host", Reply(400, body=b"bad request")
            )
        if request.route in self.documents:
            return Reply(json=self.documents[request.route])
        data = self.files.get(request.route)
        if data is None:
            return Reply(404, body=b"Not Found")
        headers = {"content-type": "application/octet-stream"}
        status = 200
        if self.ranges:
            etag = f'"{hashlib.sha256(data).hexdigest()[:16]}"'
            headers.update({"accept-ranges": "bytes", "etag": etag})
            wanted = _RANGE.match(request.headers.get("range", ""))
            guard = request.headers.get("if-range")
            if wanted and (guard is None or guard == etag) and int(wanted[1]) < len(data):
                start = int(wanted[1])
                headers["content-range"] = f"bytes {start}-{len(data) - 1}/{len(data)}"
                status, data = 206, data[start:]
        cut = self._cuts.pop(request.route, None)
        stall = self._stalls.pop(request.route, None)
        return Reply(
            status, body=data, headers=headers, cut_after=cut, stall_after=stall, rate=self.rate
        )
