"""When to try an HTTP request again, and how long to wait first.

A single 502 from a CDN, a reset connection or a timeout should not fail an install:
such failures usually pass on their own. Only idempotent requests are tried again
(sending a POST twice may do its work twice), a bounded number of times and within a
bounded time, waiting longer after each failure with jitter so that many clients
failing together do not come back together. A server that says when to come back
(``retry-after``) is taken at its word.

Some failures to connect never pass within a retry's seconds, and retrying them only
makes a machine without network look hung (five tries cost about 7 s per URL):
:func:`unreachable` names them (a name that does not resolve, no route to the network,
a refused connection to a loopback port), and they fail at once with a hint.

Pure functions over a :class:`RetryPolicy`; the random source is the caller's, so tests
seed it.
"""

from __future__ import annotations

import errno
import random
import socket
from dataclasses import dataclass

IDEMPOTENT_METHODS = frozenset({"GET", "HEAD", "OPTIONS", "PUT", "DELETE"})
# Statuses that say "not now" rather than "no": 501 and 505 never change on a retry.
TRANSIENT_STATUSES = frozenset({500, 502, 503, 504})


@dataclass(frozen=True)
class RetryPolicy:
    max_tries: int = 5
    max_elapsed: float = 30.0  # no wait may end later than this after the first try began
    base_delay: float = 0.5  # the first wait is between half of this and this
    max_delay: float = 8.0


def may_retry(method: str) -> bool:
    return method.upper() in IDEMPOTENT_METHODS


def next_delay(
    policy: RetryPolicy,
    tries: int,
    elapsed: float,
    rng: random.Random,
    retry_after: float | None = None,
) -> float | None:
    """Seconds to wait before try ``tries + 1``, or None to give up.

    ``tries`` is how many were made, ``elapsed`` the seconds since the first began. The
    wait doubles with each try (``base_delay`` · 2ⁿ, capped at ``max_delay``) and is
    drawn from its upper half ("equal jitter"); ``retry_after`` replaces it when the
    server named one.
    """
    if tries >= policy.max_tries:
        return None
    if retry_after is not None:
        delay = max(0.0, retry_after)
    else:
        ceiling = min(policy.max_delay, policy.base_delay * 2 ** (tries - 1))
        delay = ceiling / 2 + rng.uniform(0, ceiling / 2)
    if elapsed + delay > policy.max_elapsed:
        return None
    return delay


# Resolver answers another try cannot change: the name is not known, has no address, or
# no name server could be asked (offline). The system resolver has already tried its
# servers (resolv.conf's ``attempts``) before it says so: a second layer of tries only
# multiplies the wait of a machine without network.
_NAME_UNKNOWN = frozenset(
    code
    for code in (
        getattr(socket, "EAI_NONAME", None),
        getattr(socket, "EAI_NODATA", None),
        getattr(socket, "EAI_AGAIN", None),
        getattr(socket, "EAI_ADDRFAMILY", None),
    )
    if code is not None
)


def unreachable(failure: BaseException, *, loopback: bool) -> str | None:
    """Why a failure to connect is one that retrying cannot fix, or None if it may pass.

    Read from the operating system's errors under ``failure`` (its causes, and each
    address's error when several were tried): a name that does not resolve, a network
    with no route (``ENETUNREACH``: the machine is offline), or a refused connection to
    a loopback address (``loopback``: nothing listens on this machine's port, and no
    server is restarting behind a balancer). Every address must have failed so; a
    refusal from a remote host, a timeout or a reset stays worth another try.
    """
    reasons = [_reason(leaf, loopback) for leaf in _os_errors(failure)]
    if not reasons or any(r is None for r in reasons):
        return None
    return reasons[0]


def _reason(error: OSError, loopback: bool) -> str | None:
    if isinstance(error, socket.gaierror):
        return "the name does not resolve" if error.errno in _NAME_UNKNOWN else None
    if error.errno == errno.ENETUNREACH:
        return "no route to the network"
    if error.errno == errno.ECONNREFUSED and loopback:
        return "nothing is listening there (connection refused)"
    return None


def _os_errors(failure: BaseException) -> list[OSError]:
    """The operating system's errors (with an errno) under ``failure``: through
    ``__cause__``/``__context__`` and into exception groups (one error per address)."""
    found: list[OSError] = []
    todo: list[BaseException] = [failure]
    seen: set[int] = set()
    while todo and len(seen) < 64:
        exc = todo.pop()
        if id(exc) in seen:
            continue
        seen.add(id(exc))
        if isinstance(exc, BaseExceptionGroup):
            todo.extend(exc.exceptions)
        elif isinstance(exc, OSError) and exc.errno is not None:
            found.append(exc)
        else:
            nxt = exc.__cause__ or exc.__context__
            if nxt is not None:
                todo.append(nxt)
    return found
