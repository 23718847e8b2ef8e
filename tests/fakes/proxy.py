"""A forwarding HTTP proxy on 127.0.0.1 that records what passes through it.

A plain ``http`` target is asked in absolute form (``GET http://host:port/path``); the
proxy records the request (its ``path`` is that absolute URL) and forwards it, headers
and body, to the target with ``http.client`` (never through another proxy), answering
with the target's status, headers and body. ``CONNECT`` (an ``https`` target) is
recorded and refused with 403: the tests' targets speak plain http, and a refused
tunnel is enough to show that a request chose the proxy.
"""

from __future__ import annotations

import http.client
from http.server import BaseHTTPRequestHandler
from typing import Any
from urllib.parse import urlsplit

from tsukud.testing.http import FakeHTTPServer, RecordedRequest, Reply

# Hop-by-hop headers (RFC 9110 7.6.1) and what the proxy itself consumes.
_HOP = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-connection",
        "proxy-authorization",
        "proxy-authenticate",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
        "content-length",
    }
)


class ForwardingProxy(FakeHTTPServer):
    def __init__(self) -> None:
        super().__init__(fallback=self._forward, role="proxy")

    def urls(self) -> list[str]:
        """The absolute URLs asked through the proxy (``CONNECT host:port`` as such)."""
        return [r.path if r.method != "CONNECT" else f"CONNECT {r.path}" for r in self.requests]

    def _forward(self, request: RecordedRequest) -> Reply:
        if request.method == "CONNECT":
            return Reply(403, body=b"tunnels are not offered here")
        target = urlsplit(request.path)
        if target.scheme != "http" or not target.hostname:
            return Reply(400, body=b"an absolute http:// URL is expected")
        conn = http.client.HTTPConnection(target.hostname, target.port or 80, timeout=30)
        try:
            path = target.path + (f"?{target.query}" if target.query else "")
            headers = {k: v for k, v in request.headers.items() if k not in _HOP}
            conn.request(request.method, path or "/", body=request.body or None, headers=headers)
            resp = conn.getresponse()
            body = resp.read()
            kept = {k.lower(): v for k, v in resp.getheaders() if k.lower() not in _HOP}
            return Reply(resp.status, body=body, headers=kept)
        finally:
            conn.close()

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        handler: Any = super()._handler_class()
        handler.do_CONNECT = handler._serve
        return handler  # type: ignore[no-any-return]
