"""Why a batch job failed, in words a queue can act on.

A batch drains thousands of sources; each failure must say whether the *remote
service* is unwell (so the ecosystem's breaker counts it and the job waits for the
service) or whether the *job* is bad (so it fails with a reason and nothing else
changes). A registry's breaker that counts a mis-mapped source or a recipe that does
not validate as an outage stays open for months and starves every good job behind it;
this module exists so that never happens.

Public API (pure, no I/O):

* :func:`classify` ``(exc, *, source) -> Failure``: the failure of one job.
* :class:`Failure`: ``category`` (a short stable word, see :data:`CATEGORIES`),
  ``message`` (one line, redacted, terminal-safe, at most :data:`MAX_MESSAGE`
  characters), ``transport`` (the remote service said it is unwell: connect errors,
  timeouts, HTTP 429 and 5xx; only these feed a breaker), ``ecosystem`` (the source's
  prefix: ``github``, an ecosystem's, ``homebrew``; None for an unknown prefix) and
  ``retryable`` (the same job, unchanged, may succeed later: defer it rather than
  fail it).
* :func:`ecosystem_of` ``(source) -> str | None``.

``transport`` is the notion the LLM breaker already uses for ``llm.failed.breaker``:
the error catalogue's ``retryable`` (may the same request succeed later without a
change on our side), narrowed to errors of the network layer, with a status read as
HTTP reads it (429 and 5xx are the server's trouble, any other 4xx is ours).
"""

from __future__ import annotations

import msgspec
import trio

from tsukud.errors import ProviderUnavailable, TsukuError
from tsukud.secrets import REDACTOR
from tsukud.source import GITHUB_PREFIX, PREFIXES
from tsukud.terminal import terminal_safe

MAX_MESSAGE = 300

# Category words (stable: `batch status` groups by them and scripts may match them).
TRANSPORT = "transport"  # the remote service is unwell: a breaker counts it
NOT_FOUND = "not_found"  # no such repository, package, release or version
BAD_SOURCE = "bad_source"  # the queue entry itself is wrong
NO_BUILD = "no_build"  # the source exists but offers nothing tsuku can install
VALIDATION = "validation"  # the recipe did not install and verify in the container
STATIC_CHECK = "static_check"  # the recipe failed the static checks
BUDGET = "budget"  # a spending or rate limit of our own: wait for it
REFUSED = "refused"  # a policy said no (URL policy, guarded commands, a person)
LLM = "llm"  # the model's provider (its own breaker decides about it)
SANDBOX = "sandbox"  # the local container runtime
BAD_RESPONSE = "bad_response"  # the service answered something we cannot read
CANCELLED = "cancelled"
INTERNAL = "internal"
CATEGORIES = (
    TRANSPORT,
    NOT_FOUND,
    BAD_SOURCE,
    NO_BUILD,
    VALIDATION,
    STATIC_CHECK,
    BUDGET,
    REFUSED,
    LLM,
    SANDBOX,
    BAD_RESPONSE,
    CANCELLED,
    INTERNAL,
)

# Error codes of the network layer and the clients over it: a failure of one of these
# with a transient cause is the remote service's (see ``_transport``).
_REMOTE_CODES = frozenset(
    {
        "network_error",
        "network_unreachable",  # offline: the service is out of reach, for now
        "http_status",
        "http_rate_limited",
        "github_error",
        "github_rate_limited",
        "github_secondary_rate_limited",
        "registry_unavailable",
        "download_failed",
        "homebrew_error",
    }
)
# Rate-limit answers of a remote service (the wait it asked for was too long to sleep).
_REMOTE_RATE_LIMITS = frozenset(
    {"http_rate_limited", "github_rate_limited", "github_secondary_rate_limited"}
)
_BY_CODE: dict[str, str] = {
    **dict.fromkeys(
        (
            "not_found",
            "github_repo_not_found",
            "github_release_not_found",
            "github_file_not_found",
            "recipe_not_found",
            "version_not_found",
            "asset_download_not_found",
            "discovery_not_found",
        ),
        NOT_FOUND,
    ),
    **dict.fromkeys(
        ("create_bad_source", "discovery_invalid_name", "usage", "invalid_params"), BAD_SOURCE
    ),
    **dict.fromkeys(
        (
            "no_releases",
            "no_binary_assets",
            "deterministic_failed",
            "deterministic_low_confidence",
            "generation_failed",
            "create_failed",
            "asset_not_found",
            "binary_not_in_archive",
            "recipe_invalid",
            "recipe_parse_error",
            "recipe_no_matching_step",
            "recipe_unsupported_action",
            "recipe_unsupported_feature",
            "recipe_unsupported_platform",
            "asset_ambiguous",
            "asset_mismatch",
            "dependency_missing",
            "toolchain_missing",
        ),
        NO_BUILD,
    ),
    **dict.fromkeys(
        (
            "validation_failed",
            "verify_failed",
            "install_failed",
            "ecosystem_install_failed",
            "run_command_failed",
            "checksum_mismatch",
            "signature_invalid",
            "signature_key_mismatch",
            "archive_corrupt",
            "archive_unsafe",
            "archive_limit_exceeded",
            "extract_failed",
            "relocation_failed",
        ),
        VALIDATION,
    ),
    **dict.fromkeys(("budget_exceeded", "discovery_budget", "rate_limited"), BUDGET),
    **dict.fromkeys(
        (
            "url_refused",
            "run_command_refused",
            "guarded_command_refused",
            "command_shadowing_refused",
            "declined",
            "discovery_denied",
            "discovery_confirmation_required",
            "confirmation_required",
            "recipe_exists",
            "page_not_trusted",
            "github_bad_credentials",
        ),
        REFUSED,
    ),
    **dict.fromkeys(
        (
            "validation_unavailable",
            "sandbox_unavailable",
            "sandbox_failed",
            "sandbox_image_missing",
        ),
        SANDBOX,
    ),
    **dict.fromkeys(("response_too_large", "too_many_redirects"), BAD_RESPONSE),
    **dict.fromkeys(("cancelled", "shutting_down"), CANCELLED),
}
# Categories that no wait will change: the job needs a different source or recipe.
_PERMANENT = frozenset(
    {NOT_FOUND, BAD_SOURCE, NO_BUILD, VALIDATION, STATIC_CHECK, REFUSED, BAD_RESPONSE}
)


class Failure(msgspec.Struct, frozen=True):
    category: str
    message: str
    transport: bool
    ecosystem: str | None
    retryable: bool


def ecosystem_of(source: str) -> str | None:
    """The source's prefix if create knows it (a bare ``owner/repo`` is GitHub's)."""
    kind, sep, _rest = source.strip().partition(":")
    if not sep:
        return GITHUB_PREFIX
    kind = kind.lower()
    return kind if kind in PREFIXES else None


def classify(exc: BaseException, *, source: str) -> Failure:
    """The failure ``exc`` means for a job on ``source``."""
    leaf = _first_leaf(exc)
    category = _category(leaf)
    transport = category == TRANSPORT
    if transport or category == BUDGET:
        retryable = True  # the service comes back; tomorrow's budget is new
    elif category in _PERMANENT:
        retryable = False
    else:
        retryable = bool(getattr(leaf, "retryable", False))
    return Failure(category, _message(leaf), transport, ecosystem_of(source), retryable)


def _first_leaf(exc: BaseException) -> BaseException:
    """A task group's failure is read through its first real error (a Ctrl-C's
    ``Cancelled`` siblings say nothing about why)."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        real = [e for e in exc.exceptions if not isinstance(e, trio.Cancelled)]
        exc = (real or list(exc.exceptions))[0]
    return exc


def _category(exc: BaseException) -> str:
    if isinstance(exc, trio.Cancelled | KeyboardInterrupt):
        return CANCELLED
    if not isinstance(exc, TsukuError):
        return INTERNAL
    if isinstance(exc, ProviderUnavailable):
        return LLM  # the providers have their own breakers, whatever the code (offline too)
    if _transport(exc):
        return TRANSPORT
    cause = exc.__cause__
    if exc.code in _REMOTE_CODES:
        # A client's error over the network layer's (Homebrew's wraps the HTTP error):
        # the cause says whether the service failed; a status says what it answered.
        if isinstance(cause, TsukuError) and cause is not exc:
            inner = _category(cause)
            if inner != INTERNAL:
                return inner
        status = _status(exc)
        if status in (404, 410):
            return NOT_FOUND
        return BAD_RESPONSE
    if exc.data.get("stage") == "static_checks":
        return STATIC_CHECK
    if _status(exc) in (404, 410):
        return NOT_FOUND  # a builder's own "does not exist", from the registry's answer
    if exc.code.startswith(("provider_", "llm_")) or exc.code in (
        "circuit_open",
        "discovery_llm_unavailable",
    ):
        return LLM
    return _BY_CODE.get(exc.code, INTERNAL)


def _transport(exc: TsukuError) -> bool:
    """Did the remote service say it is unwell? Only the network layer's errors can
    (never a sandbox, a budget or a provider: they have their own machinery), and
    only when retryable as the catalogue says: refused or reset connections and
    timeouts, and answers 429 or 5xx. A 404 or a policy refusal never is."""
    if exc.code not in _REMOTE_CODES:
        return False
    if exc.code in _REMOTE_RATE_LIMITS:
        return True  # "not now" (GitHub's quota answers 403): the service asked us to wait
    status = _status(exc)
    if status is not None:
        return status == 429 or status >= 500
    from tsukud.net.http import TransientHttpError  # imports httpx2: not at start-up

    if isinstance(exc, TransientHttpError) or getattr(exc, "never_sent", False):
        # A refused connection, a timeout, a body cut short, a name that did not resolve.
        return exc.retryable
    cause = exc.__cause__
    return isinstance(cause, TsukuError) and cause is not exc and _transport(cause)


def _status(exc: TsukuError) -> int | None:
    status = getattr(exc, "status", None)
    if not isinstance(status, int):
        status = exc.data.get("status")
    return status if isinstance(status, int) and not isinstance(status, bool) else None


def _message(exc: BaseException) -> str:
    text = str(exc) or type(exc).__name__
    if not isinstance(exc, TsukuError):
        text = f"{type(exc).__name__}: {text}"
    line = " ".join(terminal_safe(REDACTOR.text(text), one_line=True).split())
    if len(line) > MAX_MESSAGE:
        line = line[: MAX_MESSAGE - 1].rstrip() + "…"
    return line
