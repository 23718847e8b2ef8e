"""The shared HTTP client layer (httpx2 on trio).

Every outbound request of the daemon goes through :class:`Http`:

* **URL policy, at every hop.** ``https`` only; plain ``http`` only to loopback hosts
  (tests, local mirrors). Hosts that are IP literals or resolve to private, loopback,
  link-local or metadata addresses are refused unless the host is one of the configured
  endpoints (``allowed_hosts``): a redirect from a public server cannot reach into the
  local network. Redirects are followed here, by hand, with a hop limit, so each hop is
  checked again.
* **Credentials** are given per origin and sent only to that origin: a redirect from the
  GitHub API to a CDN drops the ``Authorization`` header. They are never logged.
* **Timeouts**: connect and read (stall) timeouts on every request, plus a total deadline
  for API calls (downloads are bounded by the stall timeout and their size cap).
* **Size caps**: API/JSON bodies are capped (10 MB default) as the bytes arrive;
  downloads have their own cap, checked against ``content-length`` and the bytes read.
* **Cache**: GETs asked to be cached are kept for ``cache_ttl`` seconds (5 min), then
  revalidated with ``If-None-Match``/``If-Modified-Since``; a 304 refreshes the entry.
* **Rate limits**: a 403/429 carrying ``x-ratelimit-remaining: 0`` or ``retry-after``
  marks the origin busy until the announced time (the GitHub API's limit does not stop
  downloads from its asset host). Short waits (``max_wait``) are slept and the request
  retried once; longer ones raise :class:`HttpRateLimited` at once, also for later
  requests to that origin, without spending the quota.
* **Per-host limits** (``tsukud.net.hosts``): each request holds one of its host's
  slots while it runs (``net.per_host_concurrency``), and with
  ``net.per_host_interval_ms`` set no two start closer together, so a batch of
  thousands does not crowd a registry into 429s. A host marked busy by a short
  ``retry-after`` makes later requests to it wait that out (up to ``max_wait``)
  instead of failing.
* **Transient failures** (5xx, a refused or reset connection, a timeout) of idempotent
  requests are tried again with growing, jittered waits, bounded in count and time
  (``tsukud.net.retry``); short rate-limit waits count as tries too. The error of the
  last try says how many were made. Opening a download is retried here; a body that
  breaks later is resumed by the downloader (``tsukud.install.download``).
* **Proxies** are chosen per request (``tsukud.net.proxy``: the settings in force, so a
  caller's ``HTTPS_PROXY`` counts for its request), one connection pool per proxy. The
  URL policy above is about the target, and still applies through a proxy.

It imports httpx2 at module level: import this module inside functions so the daemon
starts without it.
"""

from __future__ import annotations

import contextlib
import email.utils
import ipaddress
import json
import random
import time
from collections import OrderedDict
from collections.abc import AsyncIterator, Awaitable, Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import urljoin, urlsplit

import httpx2
import trio

from tsukud import log
from tsukud.clock import Clock, SystemClock
from tsukud.errors import TsukuError
from tsukud.net import notices
from tsukud.net.hosts import HostGate, HostLimits
from tsukud.net.proxy import Proxies, proxy_for
from tsukud.net.reach import Place, as_data, described, hint_for, offline_hint, places_in
from tsukud.net.retry import (
    TRANSIENT_STATUSES,
    RetryPolicy,
    may_retry,
    next_delay,
    unreachable,
)

if TYPE_CHECKING:
    from tsukud.config import Config

MB = 1024 * 1024
API_MAX_BYTES = 10 * MB
USER_AGENT = "tsuku/0.1 (+https://github.com/tsukumogami/tsuku)"
_REDIRECTS = (301, 302, 303, 307, 308)
_LOOPBACK_NAMES = frozenset({"localhost", "localhost.localdomain", "ip6-localhost"})
MAX_PROXIES = 8  # connection pools kept for distinct proxy URLs
_METADATA_NETS = (ipaddress.ip_network("169.254.0.0/16"), ipaddress.ip_network("fd00:ec2::/32"))


# ------------------------------------------------------------------------------ errors


class HttpError(TsukuError):
    """A request failed: connection, timeout, protocol or an unexpected status.

    ``never_sent`` is true only when the failure proves no byte of the request left
    (refused by the URL policy, a name that does not resolve, no connection made): a
    paid API cannot have billed it. Anything later may have reached the server."""

    code = "network_error"
    never_sent: bool = False


class TransientHttpError(HttpError):
    """A failure that may pass on its own (refused or reset connection, a timeout):
    worth another try for an idempotent request."""


class HttpUnreachable(HttpError):
    """The host cannot be reached in a way another try would not change (its name does
    not resolve, no route to the network, nothing listening on a loopback port:
    ``tsukud.net.retry.unreachable``): failed at once, not retried, with a hint for a
    person who may be offline. Nothing was sent. A later request may succeed (the
    catalogue calls it retryable): the network comes back."""

    code = "network_unreachable"
    never_sent = True

    def at(
        self, endpoint: str, base: str, setting: str = "", *, doing: str = "", instead: str = ""
    ) -> HttpUnreachable:
        """This failure as the service a caller was trying to reach: ``endpoint`` in a
        person's words ("recipe registry") at ``base``, the URL ``setting`` configures
        (none: the URL came from elsewhere, a recipe).

        The one way a wrapper (the recipe registry's client, GitHub's, an ecosystem's
        registry, an LLM provider's) reports that its service is out of reach: the code,
        exit code and retryability stay this error's, so "no network" reads the same
        from every command, and the wrapper adds what it was doing (``doing``) and which
        setting points where (the hint names it with its variable, since a person
        offline or behind a firewall fixes that, or waits). ``instead``: a way to do
        without the service, said after the fix. An unreachable proxy keeps its own hint
        (the proxy settings are the fix), and an error already placed keeps its
        service: the innermost wrapper knows best which one it was."""
        if "places" in self.data:
            message = f"{doing}: {self.message}" if doing else self.message
            return HttpUnreachable(message, hint=self.hint, **self.data)
        place = Place(endpoint, base, setting)
        hint = self.hint
        if "proxy" not in self.data:
            hint = hint_for([place]) + (f" {instead}" if instead else "")
        message = f"{described(place)} cannot be reached: {self.message}"
        return HttpUnreachable(
            f"{doing}: {message}" if doing else message,
            hint=hint,
            **{**self.data, "places": as_data([place])},
        )


def all_out_of_reach(failures: Sequence[TsukuError], doing: str) -> HttpUnreachable:
    """Every service a command asked was out of reach (each failure placed): one error
    naming them all with their settings. Search and discovery ask several services; when
    none answers, the network is the cause, not a tool that does not exist."""
    places = [p for e in failures for p in places_in(e.data)]
    return HttpUnreachable(
        f"{doing}: " + "; ".join(e.message for e in failures),
        hint=hint_for(places),
        places=as_data(dict.fromkeys(places)),
    )


class HttpStatusError(HttpError):
    code = "http_status"

    def __init__(self, message: str, *, status: int, url: str, **data: Any) -> None:
        super().__init__(message, status=status, url=url, **data)
        self.status = status
        self.url = url


class BlockedURL(HttpError):
    """The URL policy refused a request (scheme, or a private address)."""

    code = "url_refused"
    never_sent = True


class ResponseTooLarge(HttpError):
    code = "response_too_large"


class TooManyRedirects(HttpError):
    code = "too_many_redirects"


class HttpRateLimited(HttpError):
    """The server asked us to slow down (403/429 with rate-limit headers, or 429/503
    with ``retry-after``) for longer than we are willing to wait."""

    code = "http_rate_limited"

    def __init__(
        self,
        message: str,
        *,
        url: str,
        retry_at: float | None,
        status: int | None = None,
        hint: str | None = None,
        **data: Any,
    ) -> None:
        if retry_at is not None:
            data["retry_at"] = _iso(retry_at)
        super().__init__(message, hint=hint, url=url, status=status, **data)
        self.url = url
        self.retry_at = retry_at
        self.status = status


def _iso(epoch: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(epoch))


# ------------------------------------------------------------------------------ values


@dataclass(frozen=True)
class Settings:
    connect_timeout: float = 10.0
    read_timeout: float = 30.0
    total_timeout: float = 60.0  # API calls; downloads rely on the read (stall) timeout
    max_redirects: int = 8
    api_max_bytes: int = API_MAX_BYTES
    cache_ttl: float = 300.0
    cache_max_entries: int = 256
    cache_max_bytes: int = 32 * MB
    max_wait: float = 5.0  # longest retry-after we sleep through
    dns_ttl: float = 60.0
    retry: RetryPolicy = field(default_factory=RetryPolicy)


@dataclass(frozen=True)
class Response:
    status: int
    headers: Mapping[str, str]  # lower-cased names
    body: bytes
    url: str  # the final URL, after redirects
    from_cache: bool = False
    revalidated: bool = False

    def json(self) -> Any:
        try:
            return json.loads(self.body)
        except ValueError as exc:
            raise HttpError(f"{self.url}: response is not valid JSON ({exc})") from None

    @property
    def ok(self) -> bool:
        return 200 <= self.status < 300


@dataclass
class _CacheEntry:
    stored: float
    response: Response
    etag: str | None
    last_modified: str | None


@dataclass
class Stream:
    """A response whose body is read incrementally (downloads)."""

    status: int
    headers: Mapping[str, str]
    url: str
    content_length: int | None
    _raw: httpx2.Response
    _max_bytes: int
    _received: int = field(default=0)

    async def chunks(self, chunk_size: int | None = None) -> AsyncIterator[bytes]:
        """The body as it arrives (in the network's pieces unless ``chunk_size`` asks
        for re-chunking, which copies); raises :class:`ResponseTooLarge` past the cap."""
        try:
            async for chunk in self._raw.aiter_raw(chunk_size):
                self._received += len(chunk)
                if self._received > self._max_bytes:
                    raise ResponseTooLarge(
                        f"{_display(self.url)}: larger than the {self._max_bytes}-byte limit",
                        url=_display(self.url),
                        limit=self._max_bytes,
                    )
                yield chunk
        except httpx2.HTTPError as exc:
            raise _transport_error(exc, self.url) from None
        if self.content_length is not None and self._received != self.content_length:
            raise TransientHttpError(
                f"{_display(self.url)}: connection closed after {self._received} of "
                f"{self.content_length} bytes"
            )


# ------------------------------------------------------------------------------ helpers


def _display(url: str) -> str:
    """The URL without query or fragment: what may appear in messages and logs."""
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}{parts.path}"


def origin(url: str) -> str:
    parts = urlsplit(url)
    port = parts.port or (443 if parts.scheme == "https" else 80)
    return f"{parts.scheme}://{(parts.hostname or '').lower()}:{port}"


def _headers(h: httpx2.Headers) -> dict[str, str]:
    out: dict[str, str] = {}
    for k, v in h.multi_items():
        k = k.lower()
        out[k] = f"{out[k]}, {v}" if k in out else v
    return out


def _ip(host: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        return ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return None


def _is_public(addr: ipaddress.IPv4Address | ipaddress.IPv6Address) -> bool:
    if isinstance(addr, ipaddress.IPv6Address) and addr.ipv4_mapped is not None:
        addr = addr.ipv4_mapped
    if any(addr in net for net in _METADATA_NETS):
        return False
    return addr.is_global and not addr.is_multicast


def is_loopback_host(host: str) -> bool:
    host = host.lower().rstrip(".")
    if host in _LOOPBACK_NAMES:
        return True
    addr = _ip(host)
    return addr is not None and addr.is_loopback


def host_of(url: str) -> str:
    return (urlsplit(url).hostname or "").lower()


def retry_after_seconds(headers: Mapping[str, str], now: float) -> float | None:
    """``retry-after`` (seconds or an HTTP date) or, with ``x-ratelimit-remaining: 0``,
    the wait until ``x-ratelimit-reset`` (epoch seconds). ``None`` if neither applies."""
    value = headers.get("retry-after")
    if value:
        value = value.strip()
        if value.isdigit():
            return float(value)
        with contextlib.suppress(TypeError, ValueError):
            when = email.utils.parsedate_to_datetime(value)
            return max(0.0, when.timestamp() - now)
    if headers.get("x-ratelimit-remaining", "").strip() == "0":
        reset = headers.get("x-ratelimit-reset", "").strip()
        if reset.isdigit():
            return max(0.0, float(reset) - now)
        return 60.0
    return None


Resolver = Callable[[str, int], Awaitable[Sequence[str]]]
"""A host and port to the addresses they resolve to (injected: tests use no real DNS)."""


async def system_resolve(host: str, port: int) -> list[str]:
    """The system resolver's addresses for ``host`` (raises ``OSError`` when it fails)."""
    infos = await trio.socket.getaddrinfo(host, port, type=trio.socket.SOCK_STREAM)
    return [str(info[4][0]) for info in infos]


#: What h11 says when a response's head passes its limit (``max_incomplete_event_size``,
#: 16 KiB by default), and that limit.
_OVERSIZED_HEAD = "Receive buffer too long"
HEAD_LIMIT_BYTES = 16 * 1024

#: Transport failures that happen before a byte of the request is written.
_BEFORE_SENDING = (
    httpx2.ConnectError,
    httpx2.ConnectTimeout,
    httpx2.PoolTimeout,
    httpx2.ProxyError,
)


def _transport_error(exc: httpx2.HTTPError, url: str, proxy: str | None = None) -> HttpError:
    error = _transport_error_for(exc, url, proxy)
    error.never_sent = isinstance(exc, _BEFORE_SENDING)
    return error


def _transport_error_for(exc: httpx2.HTTPError, url: str, proxy: str | None) -> HttpError:
    shown = _display(url)
    if proxy is not None and isinstance(exc, httpx2.ProxyError | httpx2.ConnectError):
        # A proxy that refused the tunnel will refuse it again; one not reachable may
        # not, unless no retry can reach it (nothing listening on a loopback proxy).
        error: type[HttpError] = TransientHttpError
        if isinstance(exc, httpx2.ProxyError):
            error = HttpError
        elif unreachable(exc, loopback=is_loopback_host(host_of(proxy))) is not None:
            error = HttpUnreachable
        through = origin(proxy)  # never its credentials
        return error(
            f"{shown}: through the proxy {through}: {exc or type(exc).__name__}",
            url=shown,
            proxy=through,
            hint="Check the proxy settings (HTTPS_PROXY, HTTP_PROXY, ALL_PROXY, NO_PROXY: "
            "`tsukuctl status` shows where each came from).",
        )
    if isinstance(exc, httpx2.TimeoutException):
        kind = "connect" if isinstance(exc, httpx2.ConnectTimeout) else "read"
        return TransientHttpError(f"{shown}: {kind} timed out", url=shown)
    if isinstance(exc, httpx2.ConnectError):
        why = unreachable(exc, loopback=is_loopback_host(host_of(url)))
        if why is not None:
            return _unreachable(
                f"{shown}: cannot connect: {why}; not tried again", host_of(url), url=shown
            )
        return TransientHttpError(
            f"{shown}: cannot connect ({exc or type(exc).__name__})", url=shown
        )
    if isinstance(exc, httpx2.RemoteProtocolError) and _OVERSIZED_HEAD in str(exc):
        # h11 stops reading a response head past its limit; the same server sends the
        # same head again, so trying again only multiplies the wait.
        return HttpError(
            f"{shown}: the response's status line and headers are larger than "
            f"{HEAD_LIMIT_BYTES // 1024} KiB; refused without trying again",
            url=shown,
            hint="No server tsuku talks to sends headers this large: the server (or a "
            "proxy in between) is misconfigured or hostile.",
        )
    if isinstance(exc, httpx2.NetworkError | httpx2.RemoteProtocolError):
        return TransientHttpError(f"{shown}: {type(exc).__name__}: {exc}", url=shown)
    return HttpError(f"{shown}: {type(exc).__name__}: {exc}", url=shown)


def _unreachable(message: str, host: str, **data: Any) -> HttpUnreachable:
    fix = (
        "set the URL's setting to a server you can reach (`tsukuctl config list` shows "
        "them, e.g. github.api_url, registry.url)"
    )
    return HttpUnreachable(message, host=host, **data, hint=offline_hint(host, fix))


T = TypeVar("T")


class _TryAgain(Exception):
    """An attempt's outcome that another try may change: ``error`` if it was the last
    try, ``wait`` the seconds the server asked for, ``blocked`` the origin it marked
    busy (freed for the next try)."""

    def __init__(
        self, error: HttpError, wait: float | None = None, blocked: str | None = None
    ) -> None:
        super().__init__(error.message)
        self.error = error
        self.wait = wait
        self.blocked = blocked


def gave_up(error: HttpError, tries: int) -> HttpError:
    """``error``, saying how many tries were made when there were several."""
    if tries > 1:
        error.message = f"{error.message} (gave up after {tries} tries)"
        error.args = (error.message,)
        error.data["tries"] = tries
    return error


# ------------------------------------------------------------------------------ client


class Http:
    """One per daemon (built by ``tsukud.services``): connection pooling, cache and rate-limit
    memory are shared by every feature."""

    def __init__(
        self,
        *,
        settings: Settings | None = None,
        allowed_hosts: Callable[[], Collection[str]] = frozenset,
        credentials: Callable[[], Mapping[str, str]] = dict,
        clock: Clock | None = None,
        resolve: Resolver | None = None,
        client: httpx2.AsyncClient | None = None,
        rng: random.Random | None = None,
        proxies: Callable[[], Proxies] = Proxies,
        host_limits: Callable[[], HostLimits] = HostLimits,
    ) -> None:
        self.settings = settings or Settings()
        self._rng = rng or random.Random()  # noqa: S311 - jitter, not secrets; tests seed it
        self._allowed_hosts = allowed_hosts
        self._credentials = credentials
        self._clock = clock or SystemClock()
        self._resolve = resolve or system_resolve
        self._proxies = proxies
        self.hosts = HostGate(host_limits, self._clock)
        self._client = client or self._new_client(None)
        # proxy URL -> its connection pool, the most recently used last
        self._proxied: OrderedDict[str, httpx2.AsyncClient] = OrderedDict()
        self._cache: OrderedDict[tuple[str, str, bool], _CacheEntry] = OrderedDict()
        self._cache_bytes = 0
        # origin -> (until, status, what the refusal said: repeated to later callers)
        self._blocked: dict[str, tuple[float, int | None, dict[str, Any]]] = {}
        self._dns: dict[tuple[str, int], tuple[float, bool]] = {}
        self.stats = {"requests": 0, "cache_hits": 0, "revalidated": 0}

    def _new_client(self, proxy: str | None) -> httpx2.AsyncClient:
        s = self.settings
        return httpx2.AsyncClient(
            timeout=httpx2.Timeout(
                s.read_timeout, connect=s.connect_timeout, pool=s.connect_timeout
            ),
            follow_redirects=False,
            # The proxies come from the settings (per request: ``tsukud.net.proxy``),
            # never from the daemon's own environment behind their back; no netrc.
            trust_env=False,
            proxy=proxy,
            limits=httpx2.Limits(max_connections=32, max_keepalive_connections=16),
        )

    async def _client_for(self, proxy: str | None) -> httpx2.AsyncClient:
        """The connection pool for ``proxy`` (None: direct), kept for the next request
        through it; past :data:`MAX_PROXIES` the least recently used one is closed."""
        if proxy is None:
            return self._client
        client = self._proxied.get(proxy)
        if client is not None:
            self._proxied.move_to_end(proxy)
            return client
        client = self._proxied[proxy] = self._new_client(proxy)
        if len(self._proxied) > MAX_PROXIES:
            _url, oldest = self._proxied.popitem(last=False)
            with trio.CancelScope(shield=True):
                await oldest.aclose()
        return client

    async def aclose(self) -> None:
        await self._client.aclose()
        while self._proxied:
            await self._proxied.popitem()[1].aclose()

    # ---- policy ------------------------------------------------------------------------

    async def check_url(self, url: str, *, proxied: bool = False) -> None:
        """Refuse URLs the policy does not allow (see the module docstring).

        Through a proxy (``proxied``) the same rules hold for the target; only a name
        the daemon cannot resolve itself is left to the proxy, which resolves it (a
        network where only the proxy sees the outside). A name that resolves here to
        a private address is still refused."""
        parts = urlsplit(url)
        host = (parts.hostname or "").lower().rstrip(".")
        shown = _display(url)
        if parts.scheme not in ("https", "http") or not host:
            raise BlockedURL(f"refusing {shown}: not an http(s) URL", url=shown)
        if parts.username or parts.password:
            raise BlockedURL(f"refusing {shown}: credentials in URLs are not allowed", url=shown)
        loopback = is_loopback_host(host)
        if parts.scheme == "http" and not loopback:
            raise BlockedURL(
                f"refusing {shown}: plain http is only allowed to loopback addresses", url=shown
            )
        allowed = {h.lower().rstrip(".") for h in self._allowed_hosts()}
        if host in allowed:
            return
        addr = _ip(host)
        if addr is not None:
            if not _is_public(addr):
                raise BlockedURL(
                    f"refusing {shown}: {host} is a private or local address", url=shown
                )
            return
        if loopback or not await self._resolves_public(host, parts.port or 443, proxied):
            raise BlockedURL(
                f"refusing {shown}: {host} resolves to a private or local address", url=shown
            )

    async def _resolves_public(self, host: str, port: int, proxied: bool = False) -> bool:
        now = self._clock.now()
        cached = self._dns.get((host, port))
        if cached is not None and cached[0] > now:
            return cached[1]
        try:
            addresses = await self._resolve(host, port)
        except OSError as exc:
            if proxied:
                return True  # the proxy resolves it (see check_url); not cached
            raise _unreachable(f"cannot resolve {host}: {exc}", host) from None
        public = bool(addresses) and all(
            (a := _ip(address.split("%", 1)[0])) is not None and _is_public(a)
            for address in addresses
        )
        self._dns[(host, port)] = (now + self.settings.dns_ttl, public)
        return public

    def _request_headers(self, url: str, extra: Mapping[str, str] | None) -> dict[str, str]:
        headers = {"user-agent": USER_AGENT}
        if extra:
            headers.update({k.lower(): v for k, v in extra.items()})
        auth = self._credentials().get(origin(url))
        if auth:
            headers["authorization"] = auth
        return headers

    def _limit_key(self, url: str) -> str:
        """Whose rate limit an answer from ``url`` speaks of: the origin's, per identity.
        A quota used up anonymously must not block a request that now carries a token
        (the caller exported one, as the hint said), nor one token's another's."""
        key = origin(url)
        auth = self._credentials().get(key)
        if not auth:
            return key
        import hashlib

        return f"{key} as {hashlib.sha256(auth.encode()).hexdigest()[:16]}"

    async def _wait_if_briefly_blocked(self, url: str) -> None:
        """A host that asked for a short pause (``retry-after`` up to ``max_wait``) is
        given it by every request, not only the one that was told: concurrent requests
        wait it out rather than fail (``_check_blocked`` refuses the long ones)."""
        blocked = self._blocked.get(self._limit_key(url))
        if blocked is None:
            return
        wait = blocked[0] - self._clock.now()
        if 0 < wait <= self.settings.max_wait:
            await trio.sleep(wait)

    def _check_blocked(self, url: str) -> None:
        key = self._limit_key(url)
        blocked = self._blocked.get(key)
        if blocked is None:
            return
        until, status, detail = blocked
        if until <= self._clock.now():
            del self._blocked[key]
            return
        raise HttpRateLimited(
            f"{host_of(url)} is rate limiting requests until {_iso(until)}",
            url=_display(url),
            retry_at=until,
            status=status,
            **detail,
        )

    def _note_rate_limit(
        self, url: str, status: int, headers: Mapping[str, str], body: bytes = b""
    ) -> float | None:
        """The seconds to wait if this response is a rate-limit answer, else None.
        What the server said (its message, ``retry-after``, ``x-ratelimit-*``) is kept
        for the errors of requests refused locally until then."""
        limited = status == 429 or (
            status == 403
            and (
                headers.get("x-ratelimit-remaining", "").strip() == "0" or "retry-after" in headers
            )
        )
        if status == 503 and "retry-after" in headers:
            limited = True
        if not limited:
            return None
        now = self._clock.now()
        wait = retry_after_seconds(headers, now)
        if wait is None:
            wait = 60.0 if status != 503 else 5.0
        detail: dict[str, Any] = {
            "body": body[:500].decode("utf-8", "replace"),
            "headers": {k: v for k, v in headers.items() if k.startswith("x-ratelimit-")},
        }
        retry_after = headers.get("retry-after", "").strip()
        if retry_after.isdigit():
            detail["retry_after"] = int(retry_after)
        self._blocked[self._limit_key(url)] = (now + wait, status, detail)
        return wait

    # ---- requests ----------------------------------------------------------------------

    async def _open(
        self, method: str, url: str, headers: Mapping[str, str] | None
    ) -> httpx2.Response:
        """One hop: policy check, then send with a streamed body (through the proxy
        the settings name for this URL, if any)."""
        proxy = proxy_for(url, self._proxies())
        await self.check_url(url, proxied=proxy is not None)
        await self._wait_if_briefly_blocked(url)
        self._check_blocked(url)
        client = await self._client_for(proxy)
        request = client.build_request(method, url, headers=self._request_headers(url, headers))
        self.stats["requests"] += 1
        try:
            return await client.send(request, stream=True)
        except httpx2.HTTPError as exc:
            raise _transport_error(exc, url, proxy) from None

    async def _follow(
        self, method: str, url: str, headers: Mapping[str, str] | None
    ) -> tuple[httpx2.Response, str]:
        """Send, following redirects by hand so every hop passes :meth:`check_url`."""
        current = url
        for _hop in range(self.settings.max_redirects + 1):
            resp = await self._open(method, current, headers)
            location = resp.headers.get("location")
            if resp.status_code not in _REDIRECTS or not location:
                return resp, current
            await resp.aclose()
            nxt = urljoin(current, location)
            log.get().debug("http.redirect", frm=_display(current), to=_display(nxt))
            if resp.status_code == 303:
                method = "GET"
            if headers and "authorization" in headers and origin(nxt) != origin(url):
                # A caller's credentials (a registry's bearer) are for its origin only:
                # ghcr sends blobs on to a signed storage URL on another host.
                headers = {k: v for k, v in headers.items() if k != "authorization"}
            current = nxt
        raise TooManyRedirects(
            f"{_display(url)}: more than {self.settings.max_redirects} redirects",
            url=_display(url),
        )

    async def get(
        self,
        url: str,
        *,
        headers: Mapping[str, str] | None = None,
        max_bytes: int | None = None,
        cache: bool = False,
        accept_status: Collection[int] = (),
        retry: bool = True,
    ) -> Response:
        """GET a (small) body. Non-2xx statuses raise :class:`HttpStatusError` unless
        listed in ``accept_status``; a 304 never reaches the caller when ``cache``.
        ``retry=False`` is for callers with a retry policy of their own."""
        limit = self.settings.api_max_bytes if max_bytes is None else max_bytes
        key = (url, (headers or {}).get("accept", ""), origin(url) in self._credentials())
        entry = self._cache.get(key) if cache else None
        now = self._clock.now()
        if entry is not None and now - entry.stored < self.settings.cache_ttl:
            self._cache.move_to_end(key)
            self.stats["cache_hits"] += 1
            return _replace(entry.response, from_cache=True)
        send_headers = dict(headers or {})
        if entry is not None:
            if entry.etag:
                send_headers["if-none-match"] = entry.etag
            if entry.last_modified:
                send_headers["if-modified-since"] = entry.last_modified
        response = await self._retrying(
            url,
            lambda: self._get_once(url, send_headers, limit, accept_status),
            self._policy("GET", retry=retry),
        )
        if entry is not None and response.status == 304:
            entry.stored = self._clock.now()
            self._cache.move_to_end(key)
            self.stats["revalidated"] += 1
            return _replace(entry.response, from_cache=True, revalidated=True)
        if not response.ok and response.status not in accept_status:
            raise HttpStatusError(
                f"{_display(url)}: HTTP {response.status}",
                status=response.status,
                url=_display(url),
            )
        if cache and response.status == 200:
            self._store(key, response)
        return response

    async def post(
        self,
        url: str,
        *,
        headers: Mapping[str, str] | None = None,
        content: bytes = b"",
        max_bytes: int | None = None,
        time_limit: float | None = None,
    ) -> Response:
        """One POST (search providers), answered whatever its status: the URL policy, the
        credentials and the proxy of this request as for a GET, so a caller's
        ``HTTPS_PROXY`` carries its searches too. No redirect is followed and nothing is
        retried here: a POST is not idempotent, and callers retry by their own policy.
        ``time_limit`` bounds the whole exchange (default: the settings' total timeout)."""
        limit = self.settings.api_max_bytes if max_bytes is None else max_bytes
        proxy = proxy_for(url, self._proxies())
        await self.check_url(url, proxied=proxy is not None)
        client = await self._client_for(proxy)
        request = client.build_request(
            "POST", url, headers=self._request_headers(url, headers), content=content
        )
        self.stats["requests"] += 1
        with trio.move_on_after(time_limit or self.settings.total_timeout) as scope:
            async with self.hosts.slot(origin(url)):
                try:
                    resp = await client.send(request, stream=True)
                except httpx2.HTTPError as exc:
                    raise _transport_error(exc, url, proxy) from None
                try:
                    body = await self._read_capped(resp, url, limit)
                finally:
                    await resp.aclose()
        if scope.cancelled_caught:
            raise TransientHttpError(f"{_display(url)}: timed out", url=_display(url))
        return Response(resp.status_code, _headers(resp.headers), body, url)

    def _policy(self, method: str, *, retry: bool = True) -> RetryPolicy:
        """The configured policy for idempotent methods; one try for the others."""
        return self.settings.retry if retry and may_retry(method) else RetryPolicy(max_tries=1)

    async def _retrying(
        self, url: str, attempt: Callable[[], Awaitable[T]], policy: RetryPolicy
    ) -> T:
        """Run ``attempt`` until it succeeds, fails for good, or ``policy`` says stop
        (see ``tsukud.net.retry``)."""
        start = self._clock.now()
        tries = 0
        while True:
            tries += 1
            try:
                return await attempt()
            except _TryAgain as again:
                error, blocked = again.error, again.blocked
                delay = next_delay(policy, tries, self._clock.now() - start, self._rng, again.wait)
                if delay is None and blocked is not None and tries == 1:
                    delay = again.wait  # a short rate-limit wait is waited out once, always
            if delay is None:
                raise gave_up(error, tries)
            log.get().info(
                "http.retry",
                url=_display(url),
                tries=tries,
                wait=round(delay, 3),
                error=error.message,
            )
            await notices.retrying(_display(url), error.message, tries, policy.max_tries, delay)
            await trio.sleep(delay)
            if blocked is not None:
                self._blocked.pop(blocked, None)

    def _rate_limited(self, url: str, status: int, wait: float) -> HttpError:
        """The error for a rate-limit answer, or (a short wait) the request to try again."""
        retry_at = self._clock.now() + wait
        error = HttpRateLimited(
            f"{_display(url)}: rate limited (HTTP {status}) until {_iso(retry_at)}",
            url=_display(url),
            retry_at=retry_at,
            status=status,
            **self._blocked[self._limit_key(url)][2],
        )
        if wait <= self.settings.max_wait:
            raise _TryAgain(error, wait, self._limit_key(url))
        return error

    async def _get_once(
        self, url: str, headers: Mapping[str, str], limit: int, accept_status: Collection[int]
    ) -> Response:
        with trio.move_on_after(self.settings.total_timeout) as scope:
            try:
                async with self.hosts.slot(origin(url)):
                    resp, final = await self._follow("GET", url, headers)
                    try:
                        body = await self._read_capped(resp, final, limit)
                    finally:
                        await resp.aclose()
            except TransientHttpError as exc:
                raise _TryAgain(exc) from None
        if scope.cancelled_caught:
            raise _TryAgain(
                TransientHttpError(
                    f"{_display(url)}: no complete answer within "
                    f"{self.settings.total_timeout:.0f} s",
                    url=_display(url),
                )
            )
        hdrs = _headers(resp.headers)
        wait = self._note_rate_limit(final, resp.status_code, hdrs, body)
        if wait is not None:
            raise self._rate_limited(final, resp.status_code, wait)
        if resp.status_code in TRANSIENT_STATUSES and resp.status_code not in accept_status:
            raise _TryAgain(
                HttpStatusError(
                    f"{_display(url)}: HTTP {resp.status_code}",
                    status=resp.status_code,
                    url=_display(url),
                )
            )
        return Response(resp.status_code, hdrs, body, final)

    async def _read_capped(self, resp: httpx2.Response, url: str, limit: int) -> bytes:
        declared = resp.headers.get("content-length")
        if declared and declared.isdigit() and int(declared) > limit:
            raise ResponseTooLarge(
                f"{_display(url)}: {declared} bytes exceeds the {limit}-byte limit",
                url=_display(url),
                limit=limit,
            )
        parts: list[bytes] = []
        size = 0
        try:
            async for chunk in resp.aiter_bytes():
                size += len(chunk)
                if size > limit:
                    raise ResponseTooLarge(
                        f"{_display(url)}: response exceeds the {limit}-byte limit",
                        url=_display(url),
                        limit=limit,
                    )
                parts.append(chunk)
        except httpx2.HTTPError as exc:
            raise _transport_error(exc, url) from None
        return b"".join(parts)

    def _store(self, key: tuple[str, str, bool], response: Response) -> None:
        size = len(response.body)
        if size > self.settings.cache_max_bytes // 4:
            return
        old = self._cache.pop(key, None)
        if old is not None:
            self._cache_bytes -= len(old.response.body)
        self._cache[key] = _CacheEntry(
            self._clock.now(),
            response,
            response.headers.get("etag"),
            response.headers.get("last-modified"),
        )
        self._cache_bytes += size
        while self._cache and (
            len(self._cache) > self.settings.cache_max_entries
            or self._cache_bytes > self.settings.cache_max_bytes
        ):
            _k, dropped = self._cache.popitem(last=False)
            self._cache_bytes -= len(dropped.response.body)

    def forget(self, prefix: str = "") -> None:
        """Drop cached responses whose URL starts with ``prefix`` (all by default)."""
        for key in [k for k in self._cache if k[0].startswith(prefix)]:
            self._cache_bytes -= len(self._cache.pop(key).response.body)

    @contextlib.asynccontextmanager
    async def stream(
        self,
        url: str,
        *,
        max_bytes: int,
        headers: Mapping[str, str] | None = None,
    ) -> AsyncIterator[Stream]:
        """Open a download. Raises :class:`HttpStatusError` for non-2xx answers and
        :class:`ResponseTooLarge` when ``content-length`` is over ``max_bytes``."""
        send = {"accept-encoding": "identity", **{k.lower(): v for k, v in (headers or {}).items()}}
        async with self.hosts.slot(origin(url)):  # the whole download holds its slot
            resp, final, hdrs, length = await self._retrying(
                url, lambda: self._open_stream(url, send, max_bytes), self._policy("GET")
            )
            try:
                yield Stream(resp.status_code, hdrs, final, length, resp, max_bytes)
            finally:
                with trio.CancelScope(shield=True):
                    await resp.aclose()

    async def _open_stream(
        self, url: str, send: Mapping[str, str], max_bytes: int
    ) -> tuple[httpx2.Response, str, dict[str, str], int | None]:
        """One try at opening a download: the response (still unread), its final URL,
        headers and declared length; an answer that is not a usable 2xx is closed."""
        try:
            resp, final = await self._follow("GET", url, send)
        except TransientHttpError as exc:
            raise _TryAgain(exc) from None
        try:
            hdrs = _headers(resp.headers)
            wait = self._note_rate_limit(final, resp.status_code, hdrs)
            if wait is not None:
                raise self._rate_limited(final, resp.status_code, wait)
            if not 200 <= resp.status_code < 300:
                error = HttpStatusError(
                    f"{_display(url)}: HTTP {resp.status_code}",
                    status=resp.status_code,
                    url=_display(url),
                )
                if resp.status_code in TRANSIENT_STATUSES:
                    raise _TryAgain(error)
                raise error
            declared = hdrs.get("content-length")
            length = int(declared) if declared and declared.isdigit() else None
            if length is not None and length > max_bytes:
                raise ResponseTooLarge(
                    f"{_display(url)}: {length} bytes exceeds the {max_bytes}-byte limit",
                    url=_display(url),
                    limit=max_bytes,
                )
            return resp, final, hdrs, length
        except BaseException:
            with trio.CancelScope(shield=True):
                await resp.aclose()
            raise


def _replace(r: Response, **changes: Any) -> Response:
    return Response(
        status=changes.get("status", r.status),
        headers=r.headers,
        body=r.body,
        url=r.url,
        from_cache=changes.get("from_cache", r.from_cache),
        revalidated=changes.get("revalidated", r.revalidated),
    )


# ------------------------------------------------------------------------ configuration


def endpoint_hosts(config: Config, also: Collection[str] = ()) -> list[str]:
    """Hosts of the configured endpoints: the only ones allowed to be private (a
    company's mirror of GitHub, a package registry on a 10.x address). ``also``: more URL
    settings a caller's traffic goes to (the ecosystems' registries)."""
    keys = (
        "github.api_url",
        "github.url",
        "registry.url",
        "registry.manifest_url",
        "homebrew.api_url",
        "homebrew.registry_url",
        *also,
    )
    urls = [config[k] for k in keys]
    return [host_of(str(u)) for u in urls if u]


def github_credentials(config: Config) -> dict[str, str]:
    """``Authorization`` for the GitHub API origin only (never for downloads or CDNs)."""
    token = str(config["secrets.github_token"] or "").strip()
    if not token:
        return {}
    return {origin(str(config["github.api_url"])): f"Bearer {token}"}
