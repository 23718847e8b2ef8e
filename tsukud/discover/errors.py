"""What discovery can fail with: one class per code.

Each code's exit code, ``retryable`` flag (may the same request succeed later without a
change on the user's side?) and default hint are in ``tsukud.errors.CATALOGUE``;
docs/discovery.md says when each is raised.
"""

from __future__ import annotations

from tsukud.errors import FROM_HINT, TsukuError

__all__ = ["FROM_HINT"]  # chain.py fills in the tool; the catalogue's hints use "<tool>"


class DiscoveryError(TsukuError):
    code = "discovery_failed"


class InvalidToolName(DiscoveryError):
    code = "discovery_invalid_name"


class DiscoveryNotFound(DiscoveryError):
    code = "discovery_not_found"


class DiscoveredElsewhere(DiscoveryError):
    """Install only: the tool is a package of another ecosystem (its command is the hint)."""

    code = "discovery_elsewhere"


class DiscoveryAmbiguous(DiscoveryError):
    code = "discovery_ambiguous"


class DiscoveryConfirmationRequired(DiscoveryError):
    code = "discovery_confirmation_required"


class DiscoveryDenied(DiscoveryError):
    code = "discovery_denied"


class DiscoveryTimeout(DiscoveryError):
    code = "discovery_timeout"


class DiscoveryBudgetExceeded(DiscoveryError):
    code = "discovery_budget"


class DiscoveryUnverified(DiscoveryError):
    code = "discovery_unverified"


class DiscoverySearchFailed(DiscoveryError):
    """A web search that gave no results. ``sent`` says whether one of its attempts may
    have reached the provider (a paid provider bills a query it received, answered or
    not); false only when every attempt failed before a byte was sent."""

    code = "discovery_search_failed"
    sent: bool = True


class DiscoveryLLMUnavailable(DiscoveryError):
    code = "discovery_llm_unavailable"


class CreateUnavailable(DiscoveryError):
    code = "discovery_create_unavailable"
