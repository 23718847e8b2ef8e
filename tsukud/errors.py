"""Typed errors shared by the daemon and the client, and the one catalogue of their codes.

Stdlib only: ``tsukuctl`` imports this module on its hot path to turn an error frame's
``code`` into an exit code and a hint. Every error the daemon sends carries a stable
``code`` (part of the wire protocol, see ``schema/rpc.md``), a message for humans and a
hint saying what to do about it. Exit codes follow the reference tsuku's numbering
where it has one (docs/exit-codes.md), so scripts written for it keep working.

``CATALOGUE`` is the only place a code's exit code, retryability and default hint are
written. Error classes anywhere in tsukud declare just their ``code``; a class naming a
code the catalogue lacks, or setting those attributes itself, fails at import, so no code
can reach the wire without an entry (and the tests hold every entry to the docs).
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
    DISK_FULL = 29
    BUSY = 30
    TOOLCHAIN_MISSING = 34
    CANCELLED = 130


class ErrorKind:
    """What every error with one code shares, wherever it is raised."""

    __slots__ = ("exit_code", "hint", "retryable")

    def __init__(self, exit_code: int, hint: str = "", *, retryable: bool = False) -> None:
        self.exit_code = exit_code
        self.hint = hint  # the default; a raise site may give a more precise one
        self.retryable = retryable  # may the same request succeed later, unchanged?

    def __repr__(self) -> str:
        return f"ErrorKind({self.exit_code}, {self.hint!r}, retryable={self.retryable})"


#: A hint's way to a run's events when its session is not known yet: runnable as
#: written; :meth:`TsukuError.in_session` puts the run's own session in its place.
RUNS_EVENTS = "tsukuctl events --type 'generation.*,validation.*' --limit 20"

#: Discovery's hints end by naming the way around it (``tool`` filled in when known).
FROM_HINT = "name the source yourself: tsukuctl install {tool} --from github:owner/repo"
_FROM = FROM_HINT.format(tool="<tool>")
_PROTOCOL = "The request did not follow the tsuku RPC protocol (schema/rpc.md)."
_NETWORK = "Check the network connection (or the mirror URL) and try again."
_SLOW_DOWN = "The server is rate limiting requests; wait and try again."
_FIX_RECIPE = "Fix the recipe (schema/recipe.md describes the format) or regenerate it."
_NOTHING_INSTALLED = "Nothing was installed; the tool's previous state is unchanged."
_BUDGET = "Raise it with `tsukuctl config set llm.daily_budget <usd>`"

E = ExitCode
#: Every error code (the wire protocol: schema/rpc.md lists the same set) → its kind.
CATALOGUE: dict[str, ErrorKind] = {
    # ---- daemon and protocol
    "internal": ErrorKind(
        E.GENERAL, "This is a bug in tsuku; the daemon log (tsukuctl daemon logs) has details."
    ),
    "usage": ErrorKind(E.USAGE),
    "bad_request": ErrorKind(E.PROTOCOL, _PROTOCOL),
    "frame_too_large": ErrorKind(E.PROTOCOL, _PROTOCOL),
    "unknown_method": ErrorKind(E.PROTOCOL, _PROTOCOL),
    "invalid_params": ErrorKind(E.PROTOCOL, _PROTOCOL),
    "forbidden": ErrorKind(E.FORBIDDEN, "Only the user who runs tsukud may talk to it."),
    "shutting_down": ErrorKind(
        E.DAEMON_UNAVAILABLE,
        "The daemon is stopping; run the command again to start a new one.",
        retryable=True,
    ),
    "daemon_unavailable": ErrorKind(
        E.DAEMON_UNAVAILABLE,
        "Start it with `tsukuctl daemon start`, or see why it stopped with `tsukuctl daemon logs`.",
        retryable=True,
    ),
    "wrong_daemon": ErrorKind(
        E.DAEMON_UNAVAILABLE,
        "The socket belongs to a tsukud of another TSUKU_HOME: unset TSUKU_SOCKET (each "
        "home then gets its own daemon), or point it at this home's daemon.",
    ),
    "already_running": ErrorKind(E.ALREADY_RUNNING),
    "cancelled": ErrorKind(E.CANCELLED, "The client cancelled the request (Ctrl-C)."),
    "batch_running": ErrorKind(
        E.ALREADY_RUNNING,
        "A batch run is active: wait for it to end, or stop it (Ctrl-C in the terminal "
        "running `tsukuctl batch run`); `tsukuctl batch status` shows it.",
    ),
    "summary_too_slow": ErrorKind(
        E.BUSY,
        "Narrow the summary so the rollups answer it: whole-hour --since/--until, no --type "
        "filter with --by session or --session; or raise events.summary_timeout_seconds "
        "(`tsukuctl config set events.summary_timeout_seconds 30`).",
    ),
    "busy": ErrorKind(
        E.BUSY,
        "tsukud is serving as many connections as it allows; try again in a moment "
        "(or find what keeps so many connections open).",
        retryable=True,
    ),
    "config": ErrorKind(E.CONFIG),
    "not_found": ErrorKind(E.GENERAL),
    "declined": ErrorKind(E.USER_DECLINED, "Nothing was spent."),
    "ledger_corrupt": ErrorKind(
        E.LEDGER_CORRUPT,
        "The event ledger's hash chain is broken: the database was edited outside tsuku.",
    ),
    "disk_full": ErrorKind(
        E.DISK_FULL,
        "The disk is full. Free some space; tsuku resumes by itself, nothing it "
        "acknowledged was lost.",
        retryable=True,
    ),
    "ledger_unavailable": ErrorKind(
        E.NETWORK,
        "The shared ledger's database (ledger.url) cannot be reached. tsuku retries by "
        "itself and nothing it acknowledged was lost; `tsukuctl status` shows the cause.",
        retryable=True,
    ),
    # ---- policy: budget, rate limit, breakers
    "budget_exceeded": ErrorKind(E.BUDGET, _BUDGET + " or wait until tomorrow (UTC)."),
    "rate_limited": ErrorKind(
        E.RATE_LIMITED,
        "Raise it with `tsukuctl config set llm.hourly_limit <n>` or wait.",
        retryable=True,
    ),
    "confirmation_required": ErrorKind(
        E.NOT_INTERACTIVE,
        "Run it again with --yes to accept the cost, or from a terminal to be asked.",
    ),
    "circuit_open": ErrorKind(E.PROVIDER_UNAVAILABLE, retryable=True),
    # ---- LLM providers
    "provider_unavailable": ErrorKind(
        E.PROVIDER_UNAVAILABLE,
        "The LLM provider is unavailable right now; tsuku will try another if one is configured.",
        retryable=True,
    ),
    "provider_error": ErrorKind(E.PROVIDER_UNAVAILABLE),
    "provider_auth": ErrorKind(E.CONFIG),
    "provider_bad_request": ErrorKind(E.PROVIDER_UNAVAILABLE),
    "provider_unsupported": ErrorKind(E.PROVIDER_UNAVAILABLE),
    "provider_malformed_output": ErrorKind(E.PROVIDER_UNAVAILABLE, retryable=True),
    "llm_replay_miss": ErrorKind(
        E.PROVIDER_UNAVAILABLE,
        "Record the session again with TSUKU_LLM_RECORD_DIR, or check what changed in the "
        "request (the closest recording is named in the message).",
    ),
    # ---- HTTP and GitHub
    "network_error": ErrorKind(E.NETWORK, _NETWORK, retryable=True),
    "http_status": ErrorKind(E.NETWORK, _NETWORK, retryable=True),
    # Not tried again at once (tsukud/net/retry.py `unreachable`), but a later request
    # may succeed: the network comes back. The class gives the hint, naming the host.
    "network_unreachable": ErrorKind(E.NETWORK, _NETWORK, retryable=True),
    "url_refused": ErrorKind(
        E.NETWORK,
        "Only https URLs are fetched (plain http only on loopback), and private or "
        "link-local addresses only when a configured endpoint points there.",
    ),
    "response_too_large": ErrorKind(E.NETWORK, _NETWORK),
    "too_many_redirects": ErrorKind(E.NETWORK, _NETWORK),
    "http_rate_limited": ErrorKind(E.NETWORK, _SLOW_DOWN, retryable=True),
    "github_error": ErrorKind(E.NETWORK, "GitHub did not answer as expected; try again later."),
    "github_repo_not_found": ErrorKind(
        E.NETWORK,
        "Check the repository name (owner/repo); private repositories need GITHUB_TOKEN.",
    ),
    "github_release_not_found": ErrorKind(E.NETWORK, "The repository has no such release."),
    "github_file_not_found": ErrorKind(E.NETWORK),
    "github_rate_limited": ErrorKind(E.NETWORK, _SLOW_DOWN, retryable=True),
    "github_bad_credentials": ErrorKind(
        E.NETWORK,
        "GitHub rejected the token (401 Bad credentials): GITHUB_TOKEN (or GH_TOKEN, or "
        "secrets.github_token) is wrong, expired or revoked. Replace it, or unset it to "
        "use GitHub without a token (60 requests per hour).",
    ),
    "github_secondary_rate_limited": ErrorKind(E.NETWORK, _SLOW_DOWN, retryable=True),
    # ---- recipes
    # docs/install.md: a recipe that cannot be used is a failed install (6), as in the
    # reference, whatever the recipe's fault is.
    "recipe_invalid": ErrorKind(E.INSTALL_FAILED, _FIX_RECIPE),
    "recipe_parse_error": ErrorKind(E.INSTALL_FAILED, _FIX_RECIPE),
    "recipe_unsupported_action": ErrorKind(
        E.INSTALL_FAILED,
        "Only github_archive, github_file, homebrew, the URL actions (download, "
        "download_file, download_archive, extract, chmod, install_binaries, run_command) and "
        "the ecosystem actions (one per package registry that `tsukuctl create --from` "
        "accepts) can be installed for now.",
    ),
    "recipe_unsupported_feature": ErrorKind(E.INSTALL_FAILED, _FIX_RECIPE),
    "recipe_unsupported_platform": ErrorKind(E.INSTALL_FAILED, _FIX_RECIPE),
    "recipe_no_matching_step": ErrorKind(E.INSTALL_FAILED, _FIX_RECIPE),
    "asset_mismatch": ErrorKind(E.INSTALL_FAILED, _FIX_RECIPE),
    "asset_not_found": ErrorKind(E.INSTALL_FAILED, _FIX_RECIPE),
    "asset_ambiguous": ErrorKind(E.INSTALL_FAILED, _FIX_RECIPE),
    "version_not_found": ErrorKind(E.VERSION_NOT_FOUND, _FIX_RECIPE),
    "verify_failed": ErrorKind(
        E.VERIFY_FAILED,
        "The tool installed, but its verify command did not print what the recipe expects.",
    ),
    # ---- installing
    "recipe_not_found": ErrorKind(E.RECIPE_NOT_FOUND),
    "registry_unavailable": ErrorKind(
        E.NETWORK,
        "The recipe registry failed to answer; try again later. A recipe in "
        "$TSUKU_HOME/recipes/<tool>.toml is used without the registry.",
        retryable=True,
    ),
    "registry_manifest_invalid": ErrorKind(
        E.NETWORK,
        "The registry answered, but not with a tsuku recipe manifest (a captive portal, a "
        "proxy's error page, or registry.manifest_url / TSUKU_MANIFEST_URL pointing at the "
        "wrong file). Check the URL; a recipe in $TSUKU_HOME/recipes/<tool>.toml is used "
        "without the registry.",
    ),
    "download_failed": ErrorKind(E.NETWORK, retryable=True),
    "asset_download_not_found": ErrorKind(E.NETWORK),
    "checksum_mismatch": ErrorKind(
        E.INSTALL_FAILED,
        "The downloaded file is not the one that was published or validated; nothing was "
        "installed. If the release was re-uploaded on purpose, the recipe's checksum must be "
        "updated.",
    ),
    "signature_invalid": ErrorKind(
        E.INSTALL_FAILED,
        "The download is not what the key's owner signed; nothing was installed.",
    ),
    "signature_key_mismatch": ErrorKind(
        E.INSTALL_FAILED,
        "The key at signature_key_url is not the one the recipe pins by fingerprint; nothing "
        "was installed.",
    ),
    "openpgp_unavailable": ErrorKind(
        E.DEPENDENCY_FAILED,
        "Install GnuPG: `sudo apt-get install gpg gpgv` (Debian); nothing was installed.",
    ),
    "run_command_refused": ErrorKind(
        E.FORBIDDEN,
        "A recipe an LLM wrote is not run on this machine until it is validated; nothing "
        "was installed.",
    ),
    "run_command_failed": ErrorKind(
        E.INSTALL_FAILED, "The recipe's run_command failed; nothing was installed."
    ),
    "build_failed": ErrorKind(
        E.INSTALL_FAILED,
        "The build ran in the build container (never on this machine) and did not "
        "produce what the recipe says; nothing was installed. The message holds the "
        "end of its output.",
    ),
    "cpan_distribution_unavailable": ErrorKind(
        E.INSTALL_FAILED,
        "The CPAN mirror (cpan.mirror_url) does not serve that distribution at that "
        "version, or no CHECKSUMS vouching for it; nothing was installed.",
    ),
    "cpan_dependency_unavailable": ErrorKind(
        E.INSTALL_FAILED,
        "A module the CPAN distribution requires is neither part of perl nor indexed by "
        "the CPAN mirror (cpan.mirror_url): use a mirror that has it; nothing was "
        "installed.",
    ),
    "cpan_too_many_dependencies": ErrorKind(
        E.INSTALL_FAILED,
        "The CPAN distribution needs more distributions (or bytes) than tsuku gathers "
        "for one install; nothing was built or installed.",
    ),
    "cpan_meta_invalid": ErrorKind(
        E.INSTALL_FAILED,
        "The CPAN distribution's META.json/META.yml is not the plain data the CPAN meta "
        "spec describes (it is read, never run); nothing was installed.",
    ),
    "cpan_checksums_invalid": ErrorKind(
        E.INSTALL_FAILED,
        "The CPAN mirror's CHECKSUMS is not the plain data CPAN publishes (it is read, "
        "never run); use another mirror (cpan.mirror_url). Nothing was installed.",
    ),
    "system_packages_need_consent": ErrorKind(
        E.NOT_INTERACTIVE,
        "A system package command runs only after a person at a terminal said yes to it "
        "(--yes does not count): run it yourself, then install again; nothing was "
        "installed.",
    ),
    "shell_init_needs_consent": ErrorKind(
        E.NOT_INTERACTIVE,
        "A change to your shell's start-up is made only after a person at a terminal "
        "read it and said yes (--yes does not count): install from a terminal without "
        "--yes to be shown it; nothing was installed.",
    ),
    "system_packages_refused": ErrorKind(
        E.FORBIDDEN,
        "A recipe an LLM wrote is not let near a root command until it is validated; "
        "install the packages yourself if you trust them. Nothing was installed.",
    ),
    "system_packages_failed": ErrorKind(
        E.DEPENDENCY_FAILED,
        "Run the command yourself (sudo may need your password at a terminal), then "
        "install again; nothing was installed.",
    ),
    "command_required": ErrorKind(
        E.DEPENDENCY_FAILED,
        "Install the command the message names, then install again; nothing was installed.",
    ),
    "version_not_validated": ErrorKind(
        E.FORBIDDEN,
        "A generated recipe installs only the release it was validated and pinned at; "
        "install that version, or validate the other one with `tsukuctl create <tool> "
        "--from <source> --version <version> --force`. Nothing was downloaded.",
    ),
    "extract_failed": ErrorKind(E.INSTALL_FAILED),
    "archive_corrupt": ErrorKind(
        E.INSTALL_FAILED, "The download may be truncated or not the format the recipe says."
    ),
    "archive_unsafe": ErrorKind(
        E.INSTALL_FAILED,
        "The archive tried to write outside its directory or holds special files; nothing was "
        "installed.",
    ),
    "archive_limit_exceeded": ErrorKind(
        E.INSTALL_FAILED, "The archive is larger than tsuku's extraction limits allow."
    ),
    "install_failed": ErrorKind(E.INSTALL_FAILED, _NOTHING_INSTALLED),
    "binary_not_in_archive": ErrorKind(
        E.INSTALL_FAILED,
        "The recipe's binaries (or strip_dirs) do not match the archive's layout.",
    ),
    "binary_conflict": ErrorKind(E.INSTALL_FAILED, _NOTHING_INSTALLED),
    "guarded_command_refused": ErrorKind(
        E.FORBIDDEN,
        "Only the recipe named after a command that guards credentials or privileges "
        "(sudo, ssh, gpg, ...) may install it; nothing was installed.",
    ),
    "command_shadowing_refused": ErrorKind(
        E.FORBIDDEN,
        "--yes never lets a tool shadow a command already on your PATH: run the install "
        "from a terminal without --yes to be asked; nothing was installed.",
    ),
    "toolchain_missing": ErrorKind(
        E.TOOLCHAIN_MISSING, "Install the named toolchain, then run the command again."
    ),
    "ecosystem_install_failed": ErrorKind(E.INSTALL_FAILED, _NOTHING_INSTALLED),
    "locked_requirements_invalid": ErrorKind(
        E.INSTALL_FAILED,
        "pip_exec installs only wheels pinned as name==version with --hash=sha256; "
        "nothing was installed.",
    ),
    "locked_hash_mismatch": ErrorKind(
        E.INSTALL_FAILED,
        "The package index does not serve the file the recipe's lock pins; nothing was "
        "installed. The lock must be regenerated if the package was re-published on purpose.",
    ),
    "not_installed": ErrorKind(E.GENERAL, "`tsukuctl list` shows the installed tools."),
    # ---- Homebrew bottles and runtime dependencies
    "homebrew_error": ErrorKind(
        E.NETWORK,
        "The Homebrew formulae API or bottle registry did not answer as expected "
        "(homebrew.api_url, homebrew.registry_url); try again later.",
        retryable=True,
    ),
    "relocation_failed": ErrorKind(E.INSTALL_FAILED, _NOTHING_INSTALLED),
    "dependency_missing": ErrorKind(
        E.DEPENDENCY_FAILED,
        "A runtime dependency has no recipe (in $TSUKU_HOME/recipes or the registry); "
        "nothing was installed.",
    ),
    "dependency_cycle": ErrorKind(E.DEPENDENCY_FAILED, _FIX_RECIPE),
    "dependency_in_use": ErrorKind(
        E.GENERAL, "Remove the tools that need it first (the message names them)."
    ),
    # ---- sandbox
    "sandbox": ErrorKind(E.SANDBOX),
    "sandbox_unavailable": ErrorKind(
        E.SANDBOX,
        "Start a container runtime: Docker (`sudo systemctl start docker`, or `sudo dockerd &`; "
        "on a fresh Debian machine `bash scripts/dev setup` installs and starts it) or Podman "
        "(`systemctl --user start podman.socket`), or point DOCKER_HOST at its socket, "
        "e.g. DOCKER_HOST=unix:///run/user/1000/podman/podman.sock.",
        retryable=True,
    ),
    "sandbox_image_missing": ErrorKind(
        E.SANDBOX,
        "Build the validation image with `tsukuctl sandbox prepare` (a Debian minbase "
        "userland made with debootstrap from Debian's packages and imported, no container "
        "registry needed; `bash scripts/dev setup` does the same).",
    ),
    "sandbox_prepare_failed": ErrorKind(
        E.SANDBOX,
        "`tsukuctl sandbox prepare` needs debootstrap (`apt-get install debootstrap`), root "
        "for the daemon that runs it, and Debian's package mirror; "
        "`tsukuctl sandbox prepare --busybox` builds the static-only fallback from the "
        "host's busybox-static instead.",
    ),
    "sandbox_failed": ErrorKind(
        E.SANDBOX, "The container runtime's log (e.g. `journalctl -u docker`) may say why."
    ),
    # ---- create
    "create_failed": ErrorKind(E.GENERAL),
    "eval_bad_corpus": ErrorKind(
        E.USAGE,
        "Use --corpus builtin, or a directory holding a corpus.json in the format of docs/eval.md.",
    ),
    "eval_no_run": ErrorKind(
        E.USAGE,
        "Name a run `tsukuctl eval create` printed (or `tsukuctl events --type eval.started`).",
    ),
    "create_bad_source": ErrorKind(
        E.USAGE,
        # create.errors.BadSource names each ecosystem's prefix (from its record).
        "Name the source as --from github:owner/repo, <ecosystem>:<package> or homebrew:<formula>.",
    ),
    "recipe_exists": ErrorKind(
        E.GENERAL,
        "Use --force to overwrite it, or --output to write the new recipe somewhere else.",
    ),
    "no_releases": ErrorKind(
        E.RECIPE_NOT_FOUND,
        "tsuku writes recipes for tools published as GitHub release assets; this repository "
        "has no published (non-draft) release.",
    ),
    "no_binary_assets": ErrorKind(
        E.RECIPE_NOT_FOUND,
        "The releases carry no asset for linux or darwin (only checksums, installers, source "
        "archives or other platforms); the tool may need to be built from source.",
    ),
    "deterministic_failed": ErrorKind(
        E.DETERMINISTIC_FAILED,
        "Remove --deterministic-only to let an LLM decide from the candidates.",
    ),
    "deterministic_low_confidence": ErrorKind(
        E.DETERMINISTIC_FAILED,
        "Remove --deterministic-only to let an LLM decide from the candidates, or pass "
        "--from with a recipe written by hand.",
    ),
    "generation_failed": ErrorKind(
        E.GENERAL,
        "No answer passed the checks within the repair budget; "
        f"`{RUNS_EVENTS}` shows every turn and check.",
    ),
    "validation_failed": ErrorKind(
        E.VERIFY_FAILED,
        "The recipe did not install and verify in the container; "
        f"`{RUNS_EVENTS}` has the output of each attempt.",
    ),
    "validation_unavailable": ErrorKind(
        E.SANDBOX,
        "Prepare the validation image with `tsukuctl sandbox prepare` (or start Docker or "
        "Podman) and run it again; --skip-validation accepts the recipe without proof.",
    ),
    "invalid_answer": ErrorKind(E.GENERAL),
    "instructions_manual": ErrorKind(
        E.RECIPE_NOT_FOUND,
        "The install page asks you to run a command tsuku never runs for you (a script "
        "piped into a shell, the system package manager); the message shows it.",
    ),
    "instructions_unavailable": ErrorKind(
        E.GENERAL, "The install page could not be read; check its address and try again."
    ),
    "page_not_trusted": ErrorKind(
        E.NOT_INTERACTIVE,
        "Review the recipe on a terminal (without --yes), or accept the page's hosts and "
        "packages unseen with --trust-page-hosts.",
    ),
    # ---- discovery
    "discovery_failed": ErrorKind(E.GENERAL, "If you know where the tool comes from, " + _FROM),
    "discovery_invalid_name": ErrorKind(
        E.USAGE,
        "Tool names are ASCII: lowercase letters, digits, '.', '_', '+' and '-' "
        "(at most 100 characters).",
    ),
    "discovery_search_provider": ErrorKind(
        E.USAGE, "If you know where the tool comes from, " + _FROM
    ),
    "discovery_not_found": ErrorKind(
        E.RECIPE_NOT_FOUND, "If you know where the tool comes from, " + _FROM
    ),
    "discovery_elsewhere": ErrorKind(
        E.RECIPE_NOT_FOUND, "Install it with that ecosystem's own tool."
    ),
    "recipe_alias_ambiguous": ErrorKind(
        E.AMBIGUOUS, "Install the recipe you mean by its name; nothing was installed."
    ),
    "discovery_ambiguous": ErrorKind(
        E.AMBIGUOUS, "Run it on a terminal to choose, or install the package you mean directly."
    ),
    "discovery_confirmation_required": ErrorKind(
        E.NOT_INTERACTIVE, "Run it again with --yes, or " + _FROM
    ),
    "discovery_denied": ErrorKind(E.USER_DECLINED, "Nothing was installed. " + _FROM),
    "discovery_timeout": ErrorKind(
        E.GENERAL,
        "Try again, raise the limit with `tsukuctl config set discover.timeout_s <seconds>`, "
        "or " + _FROM,
        retryable=True,
    ),
    "discovery_budget": ErrorKind(E.BUDGET, _BUDGET + ", wait until tomorrow (UTC), or " + _FROM),
    "discovery_unverified": ErrorKind(
        E.NETWORK,
        "Set GITHUB_TOKEN for a higher GitHub rate limit and try again.",
        retryable=True,
    ),
    "discovery_search_failed": ErrorKind(
        E.NETWORK,
        "DuckDuckGo rate-limits automated searches: wait a minute, set TAVILY_API_KEY or "
        "BRAVE_API_KEY (or --search-provider), or " + _FROM,
        retryable=True,
    ),
    "discovery_llm_unavailable": ErrorKind(
        E.PROVIDER_UNAVAILABLE, "Try again later, or " + _FROM, retryable=True
    ),
    "discovery_create_unavailable": ErrorKind(
        E.GENERAL, "Write the recipe by hand to $TSUKU_HOME/recipes/<tool>.toml."
    ),
}
del E

_FROM_CATALOGUE = ("exit_code", "retryable", "default_hint")


class TsukuError(Exception):
    """Base of every error a user may see.

    Subclasses set only ``code`` (stable wire identifier); ``exit_code``, ``retryable``
    and ``default_hint`` come from that code's ``CATALOGUE`` entry. Instances carry the
    message and a hint. ``retryable`` tells callers (and the breaker) whether the same
    request may succeed later without a change on the user's side.
    """

    code: ClassVar[str] = "internal"
    exit_code: ClassVar[int]
    retryable: ClassVar[bool]
    default_hint: ClassVar[str]

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        for attr in _FROM_CATALOGUE:
            if attr in vars(cls):
                raise TypeError(
                    f"{cls.__qualname__} sets {attr}: it comes from the code's entry in "
                    "tsukud.errors.CATALOGUE"
                )
        if "code" in vars(cls):
            _adopt(cls)

    def __init__(self, message: str, *, hint: str | None = None, **data: Any) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint if hint is not None else self.default_hint
        self.data = data

    def in_session(self, session: str) -> TsukuError:
        """The error as the end of the run ``session``: its data names the session, and
        a hint pointing at the runs' events points at this run's."""
        self.data.setdefault("session", session)
        self.hint = self.hint.replace(RUNS_EVENTS, f"tsukuctl events --session {session}")
        return self

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


def _adopt(cls: type[TsukuError]) -> None:
    """Give an error class its code's exit code, retryability and hint (or refuse it)."""
    kind = CATALOGUE.get(cls.code)
    if kind is None:
        raise TypeError(
            f"{cls.__qualname__}: error code {cls.code!r} is not in tsukud.errors.CATALOGUE "
            "(add it there and to schema/rpc.md)"
        )
    cls.exit_code, cls.retryable, cls.default_hint = kind.exit_code, kind.retryable, kind.hint


_adopt(TsukuError)


class InternalError(TsukuError):
    code = "internal"


class UsageError(TsukuError):
    code = "usage"


class ProtocolError(TsukuError):
    """A frame or request that does not follow schema/rpc.md."""

    code = "bad_request"


class FrameTooLarge(ProtocolError):
    code = "frame_too_large"


class UnknownMethod(ProtocolError):
    code = "unknown_method"


class InvalidParams(ProtocolError):
    code = "invalid_params"


class Forbidden(TsukuError):
    code = "forbidden"


class ShuttingDown(TsukuError):
    code = "shutting_down"


class RequestCancelled(TsukuError):
    """The client cancelled a request in flight (``cancel``); ``data.spent_usd`` says what
    its runs spent before they stopped."""

    code = "cancelled"


class Busy(TsukuError):
    """The daemon is at its connection limit: nothing wrong with the request itself."""

    code = "busy"


class SummaryTooSlow(TsukuError):
    """A summary read past ``events.summary_timeout_seconds`` and was interrupted, so one
    slow summary cannot hold a reader (and a CPU) the quick reads need."""

    code = "summary_too_slow"


class DaemonUnavailable(TsukuError):
    code = "daemon_unavailable"


class WrongDaemon(TsukuError):
    """The daemon on the socket serves another TSUKU_HOME than the request names."""

    code = "wrong_daemon"


class ConfigError(TsukuError):
    code = "config"


class BudgetExceeded(TsukuError):
    code = "budget_exceeded"


class RateLimited(TsukuError):
    code = "rate_limited"


class ConfirmationRequired(TsukuError):
    code = "confirmation_required"


class ProviderUnavailable(TsukuError):
    code = "provider_unavailable"


class LedgerCorrupt(TsukuError):
    code = "ledger_corrupt"


class LedgerUnavailable(TsukuError):
    """The shared ledger's database cannot be reached (or refused the connection)."""

    code = "ledger_unavailable"


class DiskFull(TsukuError, OSError):
    """No space left for a write. Also an ``OSError``, so code that already copes with a
    failed write (a cache it can do without) keeps coping."""

    code = "disk_full"


class SandboxError(TsukuError):
    code = "sandbox"


class NotFound(TsukuError):
    code = "not_found"


class UserDeclined(TsukuError):
    code = "declined"


def all_error_classes() -> list[type[TsukuError]]:
    """Every error class defined so far (each once), for tests and introspection."""
    seen: dict[type[TsukuError], None] = {}
    stack: list[type[TsukuError]] = [TsukuError]
    while stack:
        cls = stack.pop()
        if cls not in seen:
            seen[cls] = None
            stack.extend(cls.__subclasses__())
    return list(seen)


def exit_code_for(code: str) -> int:
    """Map a wire error code to the client's exit code (unknown codes → GENERAL)."""
    kind = CATALOGUE.get(code)
    return kind.exit_code if kind is not None else ExitCode.GENERAL
