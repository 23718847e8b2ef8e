"""Which proxy, if any, a request goes through (``HTTPS_PROXY``, ``HTTP_PROXY``,
``ALL_PROXY``, ``NO_PROXY``).

The variables are settings (``net.*`` in ``tsukud.config``), so they follow the usual
precedence, the caller's environment above the daemon's above the config file: a user
who exports ``HTTPS_PROXY`` in the shell they run ``tsukuctl`` from is heard by a
daemon started long before. Pure: the HTTP client (``tsukud.net.http``) asks
:func:`proxy_for` per request and keeps one connection pool per proxy.

The usual reading of the variables, as curl and Python's ``urllib`` have it: an
``https`` target uses ``HTTPS_PROXY``, an ``http`` one ``HTTP_PROXY``, either falls
back to ``ALL_PROXY``; ``NO_PROXY`` lists hosts that go direct (``*`` for all; a name
also covers its subdomains, a leading dot or ``*.`` changes nothing; IP addresses and
CIDR blocks; ``:port`` narrows an entry to that port). Loopback targets are not
exempt unless listed, as elsewhere. Only ``http://`` and ``https://`` proxies are
supported (SOCKS needs a library tsuku does not ship): another scheme is a
configuration error naming the variable, not a silent direct connection.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from tsukud.errors import ConfigError

if TYPE_CHECKING:
    from tsukud.config import Config

#: The settings, in the order a target's scheme picks them.
KEYS = {"https": "net.https_proxy", "http": "net.http_proxy", "all": "net.all_proxy"}
NO_PROXY_KEY = "net.no_proxy"
_SCHEMES = ("http", "https")


@dataclass(frozen=True)
class Proxies:
    """The proxy settings in force for one request ("" = not set)."""

    https: str = ""
    http: str = ""
    all: str = ""
    no_proxy: str = ""


def proxy_for(url: str, proxies: Proxies) -> str | None:
    """The proxy URL ``url`` goes through, or None for a direct connection."""
    parts = urlsplit(url)
    chosen = (proxies.https if parts.scheme == "https" else proxies.http) or proxies.all
    if not chosen:
        return None
    host = (parts.hostname or "").lower().rstrip(".")
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:
        port = None
    if bypassed(host, port, proxies.no_proxy):
        return None
    return chosen


def bypassed(host: str, port: int | None, no_proxy: str) -> bool:
    """Whether ``NO_PROXY`` (comma- or space-separated) sends ``host``:``port`` direct."""
    addr = _ip(host)
    for raw in no_proxy.replace(" ", ",").split(","):
        entry = raw.strip().lower()
        if not entry:
            continue
        if entry == "*":
            return True
        name, want_port = _split_port(entry)
        if want_port is not None and want_port != port:
            continue
        if addr is not None:
            try:
                if addr in ipaddress.ip_network(name.strip("[]"), strict=False):
                    return True
            except ValueError:
                pass
            continue
        name = name.removeprefix("*").removeprefix(".").rstrip(".")
        if name and (host == name or host.endswith("." + name)):
            return True
    return False


def _split_port(entry: str) -> tuple[str, int | None]:
    """``host:port``, ``[v6]:port``; a bare IPv6 address or CIDR keeps its colons."""
    if entry.startswith("["):
        host, _, rest = entry[1:].partition("]")
        port = rest.removeprefix(":")
        return host, int(port) if port.isdigit() else None
    if entry.count(":") == 1:
        host, _, port = entry.partition(":")
        if port.isdigit():
            return host, int(port)
    return entry, None


def _ip(host: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        return ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return None


def checked(value: str, source: str) -> str:
    """``value`` if it is a proxy URL tsuku can use; else a ConfigError naming where it
    came from (``source``: the variable or the setting)."""
    parts = urlsplit(value)
    try:
        parts.port  # noqa: B018 - raises on a port that is not a number
    except ValueError:
        parts = urlsplit("bad:")
    if parts.scheme.lower() not in _SCHEMES or not parts.hostname:
        raise ConfigError(
            f"{source}: {_shown(value)} is not a proxy tsuku can use "
            "(only http:// and https:// proxies are supported)",
            hint=f"Set {source} to http://HOST:PORT, or unset it.",
        )
    return value


def _shown(value: str) -> str:
    """The proxy URL without its credentials, for messages."""
    parts = urlsplit(value)
    if parts.password is None and parts.username is None:
        return repr(value)
    return repr(value.replace(parts.netloc, parts.netloc.rpartition("@")[2], 1))


def proxies(config: Config) -> Proxies:
    """The proxies ``config`` (with any caller's environment on it) asks for."""
    found: dict[str, str] = {}
    for field_name, key in KEYS.items():
        setting = config.setting(key)
        value = str(setting.value or "").strip()
        if value:
            found[field_name] = checked(value, _source_name(setting.source, key))
    return Proxies(**found, no_proxy=str(config[NO_PROXY_KEY] or ""))


def _source_name(source: str, key: str) -> str:
    """``caller:HTTPS_PROXY`` / ``env:https_proxy`` → the variable; else the setting."""
    head, _, name = source.partition(":")
    return name if head in ("caller", "env") and name else key
