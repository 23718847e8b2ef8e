"""Policy the daemon alone owns: money, rate, provider health, container slots.

Every decision is taken synchronously against the in-memory projections and recorded
with ``append_nowait`` before the next ``await``: under trio that makes check-and-record
atomic without locks, so concurrent runs can never overspend. The caller then waits
for the event to be durable before acting on the decision.

On a shared ledger (``ledger.url``) several daemons decide together, so the database
decides instead (``pg_policy``, ``pg_breakers``: one conditional UPDATE of a row, a CHECK
behind it) and the event follows the committed decision; ``backend`` chooses which at
daemon start.
"""

from tsukud.policy.breaker import CircuitBreakers
from tsukud.policy.budget import Budget
from tsukud.policy.locks import ContainerLock
from tsukud.policy.ratelimit import GenerationLimit

__all__ = ["Budget", "CircuitBreakers", "ContainerLock", "GenerationLimit"]
