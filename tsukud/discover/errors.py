"""What discovery can fail with. Every error has a stable code, an exit code, a
``retryable`` flag (may the same request succeed later without a change on the user's
side?) and a hint saying what to do next.

| code | exit | retryable | when |
|---|---|---|---|
| ``discovery_invalid_name`` | 2 | no | empty, too long, non-ASCII (homoglyph) name |
| ``discovery_not_found`` | 3 | no | no stage found a source that passed verification |
| ``discovery_elsewhere`` | 3 | no | install: an ecosystem package (hint: its command) |
| ``discovery_ambiguous`` | 10 | no | several ecosystem packages, none clearly right |
| ``discovery_confirmation_required`` | 12 | no | a source was found, but nobody could be asked |
| ``discovery_denied`` | 13 | no | the user said no (or a fork / unverified source was refused) |
| ``discovery_timeout`` | 1 | yes | discovery's own time limit ran out |
| ``discovery_budget`` | 23 | no | the LLM budget would be exceeded |
| ``discovery_unverified`` | 5 | yes | GitHub could not be asked: nothing can be approved |
| ``discovery_search_failed`` | 5 | yes | the web search provider failed (rate limited, down) |
| ``discovery_llm_unavailable`` | 25 | yes | every LLM provider failed during the web-search stage |
| ``discovery_create_unavailable`` | 1 | no | the recipe generator is not available in this build |
"""

from __future__ import annotations

from tsukud.errors import ExitCode, TsukuError

FROM_HINT = "name the source yourself: tsukuctl install {tool} --from github:owner/repo"


class DiscoveryError(TsukuError):
    code = "discovery_failed"
    exit_code = ExitCode.GENERAL
    default_hint = "If you know where the tool comes from, " + FROM_HINT.format(tool="<tool>")


class InvalidToolName(DiscoveryError):
    code = "discovery_invalid_name"
    exit_code = ExitCode.USAGE
    default_hint = (
        "Tool names are ASCII: lowercase letters, digits, '.', '_', '+' and '-' "
        "(at most 100 characters)."
    )


class DiscoveryNotFound(DiscoveryError):
    code = "discovery_not_found"
    exit_code = ExitCode.RECIPE_NOT_FOUND
    default_hint = "If you know where the tool comes from, " + FROM_HINT.format(tool="<tool>")


class DiscoveredElsewhere(DiscoveryError):
    """Install only: the tool is a package of another ecosystem (its command is the hint)."""

    code = "discovery_elsewhere"
    exit_code = ExitCode.RECIPE_NOT_FOUND
    default_hint = "Install it with that ecosystem's own tool."


class DiscoveryAmbiguous(DiscoveryError):
    code = "discovery_ambiguous"
    exit_code = ExitCode.AMBIGUOUS
    default_hint = "Run it on a terminal to choose, or install the package you mean directly."


class DiscoveryConfirmationRequired(DiscoveryError):
    code = "discovery_confirmation_required"
    exit_code = ExitCode.NOT_INTERACTIVE
    default_hint = "Run it again with --yes, or " + FROM_HINT.format(tool="<tool>")


class DiscoveryDenied(DiscoveryError):
    code = "discovery_denied"
    exit_code = ExitCode.USER_DECLINED
    default_hint = "Nothing was installed. " + FROM_HINT.format(tool="<tool>")


class DiscoveryTimeout(DiscoveryError):
    code = "discovery_timeout"
    exit_code = ExitCode.GENERAL
    retryable = True
    default_hint = (
        "Try again, raise the limit with `tsukuctl config set discover.timeout_s <seconds>`, "
        "or " + FROM_HINT.format(tool="<tool>")
    )


class DiscoveryBudgetExceeded(DiscoveryError):
    code = "discovery_budget"
    exit_code = ExitCode.BUDGET
    default_hint = (
        "Raise it with `tsukuctl config set llm.daily_budget <usd>`, wait until tomorrow "
        "(UTC), or " + FROM_HINT.format(tool="<tool>")
    )


class DiscoveryUnverified(DiscoveryError):
    code = "discovery_unverified"
    exit_code = ExitCode.NETWORK
    retryable = True
    default_hint = "Set GITHUB_TOKEN for a higher GitHub rate limit and try again."


class DiscoverySearchFailed(DiscoveryError):
    code = "discovery_search_failed"
    exit_code = ExitCode.NETWORK
    retryable = True
    default_hint = (
        "DuckDuckGo rate-limits automated searches: wait a minute, set TAVILY_API_KEY or "
        "BRAVE_API_KEY (or --search-provider), or " + FROM_HINT.format(tool="<tool>")
    )


class DiscoveryLLMUnavailable(DiscoveryError):
    code = "discovery_llm_unavailable"
    exit_code = ExitCode.PROVIDER_UNAVAILABLE
    retryable = True
    default_hint = "Try again later, or " + FROM_HINT.format(tool="<tool>")


class CreateUnavailable(DiscoveryError):
    code = "discovery_create_unavailable"
    exit_code = ExitCode.GENERAL
    default_hint = "Write the recipe by hand to $TSUKU_HOME/recipes/<tool>.toml."
