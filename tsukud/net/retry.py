"""When to try an HTTP request again, and how long to wait first.

A single 502 from a CDN, a reset connection or a timeout should not fail an install:
such failures usually pass on their own. Only idempotent requests are tried again
(sending a POST twice may do its work twice), a bounded number of times and within a
bounded time, waiting longer after each failure with jitter so that many clients
failing together do not come back together. A server that says when to come back
(``retry-after``) is taken at its word.

Pure functions over a :class:`RetryPolicy`; the random source is the caller's, so tests
seed it.
"""

from __future__ import annotations

import random
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
