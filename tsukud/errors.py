"""Typed errors shared by the daemon and the client.

Stdlib only: ``tsukuctl`` imports this module on its hot path to turn an error frame's
``code`` into an exit code and a hint. Every error the daemon sends carries a stable
``code`` (part of the wire protocol, see ``schema/rpc.md``), a message for humans and a
hint saying what to do about it. Exit codes follow the reference tsuku's numbering
where it has one (docs/exit-codes.md), so scripts written for it keep working.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing is not imported at run time (tsukuctl's start-up)
if TYPE_CHECKING:
    from typing import Any, ClassVar


class ExitCode:
    """Process exit codes of ``tsukuctl`` (documented in docs/exit-codes.md)."""

    OK = 0
    GENERAL = 1
    USAGE = 2
    RECIPE_NOT_FOUND = 3
    VERSION_NOT_FOUND = 4
    NETWORK = 5
    INSTALL_FAILED = 6
    VERIFY_FAILED = 7
    DEPENDENCY_FAILED = 8
    DETERMINISTIC_FAILED = 9
    AMBIGUOUS = 10
    NOT_INTERACTIVE = 12
    USER_DECLINED = 13
    FORBIDDEN = 14
    PARTIAL_FAILURE = 15
    # Numbers the reference does not have; chosen above its range.
    DAEMON_UNAVAILABLE = 20
    PROTOCOL = 21
    CONFIG = 22
    BUDGET = 23
    RATE_LIMITED = 24
    PROVIDER_UNAVAILABLE = 25
    LEDGER_CORRUPT = 26
    SANDBOX = 27
    ALREADY_RUNNING = 28
    CANCELLED = 130


class TsukuError(Exception):
    """Base of every error a user may see.

    Subclasses set ``code`` (stable wire identifier) and ``exit_code``; instances carry
    the message and a hint. ``retryable`` tells callers (and the breaker) whether the
    same request may succeed later without a change on the user's side.
    """

    code: ClassVar[str] = "internal"
    exit_code: ClassVar[int] = ExitCode.GENERAL
    retryable: ClassVar[bool] = False
    default_hint: ClassVar[str] = ""

    def __init__(self, message: str, *, hint: str | None = None, **data: Any) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint if hint is not None else self.default_hint
        self.data = data

    def to_wire(self) -> dict[str, Any]:
        body: dict[str, Any] = {
            "code": self.code,
            "message": self.message,
            "hint": self.hint,
            "exit_code": self.exit_code,
            "retryable": self.retryable,
        }
        if self.data:
            body["data"] = self.data
        return body

    def __str__(self) -> str:
        return self.message


class InternalError(TsukuError):
    code = "internal"
    default_hint = "This is a bug in tsuku; the daemon log (tsukuctl daemon logs) has details."


class UsageError(TsukuError):
    code = "usage"
    exit_code = ExitCode.USAGE


class ProtocolError(TsukuError):
    """A frame or request that does not follow schema/rpc.md."""

    code = "bad_request"
    exit_code = ExitCode.PROTOCOL
    default_hint = "The request did not follow the tsuku RPC protocol (schema/rpc.md)."


class FrameTooLarge(ProtocolError):
    code = "frame_too_large"


class UnknownMethod(ProtocolError):
    code = "unknown_method"


class InvalidParams(ProtocolError):
    code = "invalid_params"


class Forbidden(TsukuError):
    code = "forbidden"
    exit_code = ExitCode.FORBIDDEN
    default_hint = "Only the user who runs tsukud may talk to it."


class ShuttingDown(TsukuError):
    code = "shutting_down"
    exit_code = ExitCode.DAEMON_UNAVAILABLE
    retryable = True
    default_hint = "The daemon is stopping; run the command again to start a new one."


class DaemonUnavailable(TsukuError):
    code = "daemon_unavailable"
    exit_code = ExitCode.DAEMON_UNAVAILABLE
    retryable = True
    default_hint = "Start it with `tsukud --foreground` or see `tsukuctl daemon logs`."


class ConfigError(TsukuError):
    code = "config"
    exit_code = ExitCode.CONFIG


class BudgetExceeded(TsukuError):
    code = "budget_exceeded"
    exit_code = ExitCode.BUDGET
    default_hint = (
        "Raise it with `tsukuctl config set llm.daily_budget <usd>` or wait until tomorrow (UTC)."
    )


class RateLimited(TsukuError):
    code = "rate_limited"
    exit_code = ExitCode.RATE_LIMITED
    retryable = True
    default_hint = "Raise it with `tsukuctl config set llm.hourly_limit <n>` or wait."


class ConfirmationRequired(TsukuError):
    code = "confirmation_required"
    exit_code = ExitCode.NOT_INTERACTIVE
    default_hint = "Run it again with --yes to accept the cost, or from a terminal to be asked."


class ProviderUnavailable(TsukuError):
    code = "provider_unavailable"
    exit_code = ExitCode.PROVIDER_UNAVAILABLE
    retryable = True


class LedgerCorrupt(TsukuError):
    code = "ledger_corrupt"
    exit_code = ExitCode.LEDGER_CORRUPT
    default_hint = "The event ledger's hash chain is broken: the database was edited outside tsuku."


class SandboxError(TsukuError):
    code = "sandbox"
    exit_code = ExitCode.SANDBOX


class NotFound(TsukuError):
    code = "not_found"
    exit_code = ExitCode.GENERAL


def all_error_classes() -> list[type[TsukuError]]:
    seen: list[type[TsukuError]] = []
    stack: list[type[TsukuError]] = [TsukuError]
    while stack:
        cls = stack.pop()
        seen.append(cls)
        stack.extend(cls.__subclasses__())
    return seen


def exit_code_for(code: str) -> int:
    """Map a wire error code to the client's exit code (unknown codes → GENERAL)."""
    for cls in all_error_classes():
        if cls.code == code:
            return cls.exit_code
    return ExitCode.GENERAL


class UserDeclined(TsukuError):
    code = "declined"
    exit_code = ExitCode.USER_DECLINED
    default_hint = "Nothing was spent."
