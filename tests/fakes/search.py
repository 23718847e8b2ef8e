"""Fake web search providers on 127.0.0.1, serving the recorded fixtures
(the shared reference data's ``fixtures/search``, :mod:`tests.shared`) by default:

* DuckDuckGo's HTML endpoint, ``POST /html/`` (form body); ``ddg_statuses`` queues
  statuses to answer first (202 is DuckDuckGo's "rate limited" challenge page);
* Tavily, ``POST /tavily/search`` (JSON body, key in ``Authorization``);
* Brave, ``GET /brave/res/v1/web/search?q=`` (key in ``X-Subscription-Token``).

:func:`ddg_page` builds a page in DuckDuckGo's real markup (``rel`` before ``class``,
``<b>`` inside titles, ``uddg=`` redirect links, an ad block) from plain results, for
tests that need other results than the recordings (a prompt-injection page).

Tavily without a ``Bearer`` key answers 401 and Brave without a subscription token
422, as the real services do, and both record the request as a violation.
"""

from __future__ import annotations

import html
import json
from typing import Any
from urllib.parse import parse_qs, quote, urlsplit

from tests.shared import SEARCH, require
from tsukud.testing.http import FakeHTTPServer, RecordedRequest, Reply

CHALLENGE = (
    b"<html><body><form id='challenge-form' action='/anomaly.js'>"
    b"Unfortunately, bots use DuckDuckGo too.</form></body></html>"
)

TAVILY_401 = Reply(401, json={"detail": {"error": "Unauthorized: missing or invalid API key."}})
BRAVE_422 = Reply(
    422,
    json={
        "type": "ErrorResponse",
        "error": {
            "code": "SUBSCRIPTION_TOKEN_INVALID",
            "detail": "The provided subscription token is invalid.",
            "status": 422,
        },
    },
)


def fixture(name: str) -> bytes:
    return (require(SEARCH) / name).read_bytes()


def ddg_page(results: list[tuple[str, str, str]], *, ad: bool = True, redirect: bool = True) -> str:
    """A DuckDuckGo HTML result page for ``(url, title, snippet)`` triples."""
    blocks = []
    if ad:
        blocks.append(
            '<div class="result results_links results_links_deep result--ad ">'
            '<div class="links_main links_deep result__body"><h2 class="result__title">'
            '<a rel="nofollow" class="result__a" '
            'href="https://duckduckgo.com/y.js?ad_domain=example.com&amp;u3=x">Buy stuff</a></h2>'
            '<a class="result__snippet" href="https://duckduckgo.com/y.js?x">An ad.</a>'
            "</div></div>"
        )
    for i, (url, title, snippet) in enumerate(results):
        href = (
            f"//duckduckgo.com/l/?uddg={quote(url, safe='')}&amp;rut=abc{i}"
            if redirect and i % 2
            else html.escape(url)
        )
        words = html.escape(title).split(" ", 1)
        shown_title = f"<b>{words[0]}</b> {words[1] if len(words) > 1 else ''}".strip()
        blocks.append(
            '<div class="result results_links results_links_deep web-result ">'
            '<div class="links_main links_deep result__body">'
            f'<h2 class="result__title"><a rel="nofollow" class="result__a" href="{href}">'
            f"{shown_title}</a></h2>"
            '<div class="result__extras"><div class="result__extras__url">'
            f'<a class="result__url" href="{href}">{html.escape(url)}</a></div></div>'
            f'<a class="result__snippet" href="{href}">{snippet}</a>'
            '<div class="clear"></div></div></div>'
        )
    return (
        "<!DOCTYPE html><html><head><title>results at DuckDuckGo</title>"
        "<style>.result{color:red}</style><script>var x = 'ignore';</script></head>"
        f'<body><div id="links" class="results">{"".join(blocks)}</div></body></html>'
    )


class FakeSearch(FakeHTTPServer):
    def __init__(self) -> None:
        super().__init__(fallback=self._route, role="search")
        self.ddg_statuses: list[int] = []  # answered (with the challenge page) before a page
        self.ddg_html: bytes = fixture("ddg_success.html")
        self.tavily_body: bytes = fixture("tavily_success.json")
        self.brave_body: bytes = fixture("brave_success.json")
        self.tavily_statuses: list[int] = []
        self.brave_statuses: list[int] = []
        self.delay = 0.0  # seconds every provider holds its answer (a search in flight)

    def env(self) -> dict[str, str]:
        return {
            "TSUKU_DDG_URL": f"{self.url}/html/",
            "TSUKU_TAVILY_URL": f"{self.url}/tavily/search",
            "TSUKU_BRAVE_URL": f"{self.url}/brave/res/v1/web/search",
        }

    def searches(self, kind: str) -> list[RecordedRequest]:
        prefix = {"ddg": "/html/", "tavily": "/tavily/", "brave": "/brave/"}[kind]
        return [r for r in self.requests if r.path.startswith(prefix)]

    @staticmethod
    def query_of(request: RecordedRequest) -> str:
        if request.method == "POST" and request.path.startswith("/html/"):
            return parse_qs(request.body.decode()).get("q", [""])[0]
        if request.method == "POST":
            body: Any = json.loads(request.body or b"{}")
            return str(body.get("query", ""))
        return parse_qs(urlsplit(request.path).query).get("q", [""])[0]

    def _route(self, request: RecordedRequest) -> Reply:
        path = urlsplit(request.path).path
        if path == "/html/" and request.method == "POST":
            if self.ddg_statuses:
                status = self.ddg_statuses.pop(0)
                return Reply(status, body=CHALLENGE, headers={"content-type": "text/html"})
            return Reply(
                body=self.ddg_html,
                headers={"content-type": "text/html; charset=UTF-8"},
                delay=self.delay,
            )
        if path == "/tavily/search" and request.method == "POST":
            scheme, _, key = request.headers.get("authorization", "").partition(" ")
            if scheme.lower() != "bearer" or not key.strip():
                return self.reject(request, "Tavily needs Authorization: Bearer <key>", TAVILY_401)
            if self.tavily_statuses:
                return Reply(self.tavily_statuses.pop(0), json={"detail": {"error": "busy"}})
            return Reply(
                body=self.tavily_body,
                headers={"content-type": "application/json"},
                delay=self.delay,
            )
        if path == "/brave/res/v1/web/search" and request.method == "GET":
            if not request.headers.get("x-subscription-token", "").strip():
                return self.reject(request, "Brave needs X-Subscription-Token", BRAVE_422)
            if self.brave_statuses:
                return Reply(self.brave_statuses.pop(0), json={"type": "ErrorResponse"})
            return Reply(
                body=self.brave_body, headers={"content-type": "application/json"}, delay=self.delay
            )
        return Reply(404, body=b"not found")
