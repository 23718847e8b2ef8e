"""Every event type the ledger holds, with the shape of its payload.

One msgspec Struct per type. The store checks each payload against its Struct on append
(types, required fields, no stray keys), so an unknown type or a misspelt field is a
programming error a test trips over, never a silent free-form row. Readers (projections)
decode through the same Structs, leniently: rows written by an earlier version with a key
since dropped still decode (unknown fields are ignored), and fields added later carry
defaults. docs/events.md lists the same set; a test compares the two.

Clients own one corner: ``client.*`` types, appended through ``events.append``, keep
free-form payloads (``ClientEvent``). Everything else is the daemon's own account.

Field names are wire format too (summaries read ``cost_usd``, ``provider``, ``model`` and
the token counts straight from the JSON), so renaming one is a ledger migration.
"""

from __future__ import annotations

from typing import Any, Literal, TypeVar

import msgspec

from tsukud.errors import InternalError

CLIENT_PREFIX = "client."


class Payload(msgspec.Struct, kw_only=True):
    """Base of every payload. Not ``forbid_unknown_fields``: reading stays lenient;
    ``check`` refuses stray keys on the way in."""


class ClientEvent(Payload):
    """``client.*``: whatever a client annotates its runs with (any JSON object)."""


# ---- daemon and configuration -----------------------------------------------------------


class DaemonStarted(Payload):
    pid: int
    version: str
    activation: str
    socket: str | None
    startup_ms: float


class DaemonStopped(Payload):
    pid: int
    uptime_s: float


class LedgerAdopted(Payload):
    """A ledger that lost events or its checkpoint, taken as it is because a person said
    so (``tsukud --accept-ledger``); integrity is anchored from here."""

    last_id: int
    head: str
    reason: str
    missing: int | None = None  # ids without a row the user accepted with this adoption
    # The ids the checkpoint recorded and the database no longer holds (its end lost).
    lost_from: int | None = None
    lost_to: int | None = None
    lost_count: int | None = None


class AnchoredHead(msgspec.Struct, kw_only=True):
    """One origin's chain head as an anchor saw it."""

    origin: str
    seq: int
    hash: str


class LedgerAnchor(Payload):
    """Every origin's head in a shared ledger, read in one snapshot and written into this
    daemon's own chain (docs/design/scale.md "Anchors"): deleting or rewriting another
    origin's rows below a head recorded here shows in ``events verify --anchors``."""

    heads: list[AnchoredHead]


class ConfigChanged(Payload):
    """Never the value: it may be a secret."""

    key: str
    unset: bool
    source: str


# ---- budget, confirmations, rate limit ---------------------------------------------------


class BudgetReserved(Payload):
    reservation: str
    day: str
    amount_usd: float
    purpose: str | None = None
    extends: str | None = None  # the run's first reservation, when it reached its ceiling


class BudgetSettled(Payload):
    reservation: str
    actual_usd: float
    day: str | None = None  # the reservation's day; rows without it fold into their own
    reserved_usd: float | None = None


class BudgetExpiredHoldSettled(Payload):
    """Another origin's open hold, its daemon silent past ``policy.hold_lease_seconds``,
    settled by this one at its worst case (``policy/pg_leases.py``)."""

    origin: str
    reservation: str
    day: str
    reserved_usd: float
    actual_usd: float
    estimated: bool
    lease_expired_at: str


class BudgetDenied(Payload):
    amount_usd: float
    day: str
    committed_usd: float
    daily_budget_usd: float
    purpose: str


class ConfirmationRequested(BudgetDenied):
    threshold_usd: float


class ConfirmationAnswered(Payload):
    """``confirmation.granted`` / ``confirmation.declined``: the answer and the question's
    data (amounts for a cost, the source for a discovery, the option for a choice)."""

    reason: Literal["answered", "timeout"]
    question: str | None = None
    kind: str | None = None
    estimate_usd: float | None = None
    threshold_usd: float | None = None
    discovery: dict[str, Any] | None = None
    option: dict[str, Any] | None = None
    recipe: dict[str, Any] | None = None  # a recipe written during install: tool, sha256
    choice: int | None = None  # a numbered choice: the number picked
    offered: list[str] | None = None  # a numbered choice: its sources, in order
    # hosts and packages of a recipe read from a page that its repository does not name:
    # tool, url and each one's ASCII name (`uses`), shown to the person before the answer
    page: dict[str, Any] | None = None


class GenerationStarted(Payload):
    tool: str
    purpose: str | None = None
    # Its model answers come from a recording (``eval --replay``, ``llm.replay_dir``):
    # no provider is called, so the hourly limit on real generations does not count it.
    replayed: bool = False


class RateLimitDenied(Payload):
    tool: str
    count: int
    limit: int
    retry_at: str | None


# ---- LLM calls and breakers ------------------------------------------------------------


class LlmTurn(Payload):
    """A call that succeeded. ``cost_usd`` is absent when the model's price is unknown."""

    provider: str
    model: str | None = None
    purpose: str | None = None
    turn: int | None = None
    call: int | None = None  # the run's llm.call_started this answers
    reservation: str | None = None
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    thoughts_tokens: int = 0
    web_search_requests: int = 0
    grounded_prompts: int = 0
    duration_ms: int | None = None
    stop_reason: str | None = None
    request_id: str | None = None
    error: str | None = None  # a billed call that still failed (malformed tool call)
    cost_usd: float | None = None
    # Answered from a recording (``eval --replay``, ``llm.replay_dir``): ``cost_usd`` is
    # 0, what the recorded call cost is ``replayed_cost_usd``, never spent or budgeted.
    replayed: bool = False
    replayed_cost_usd: float | None = None


class LlmFailed(Payload):
    provider: str
    error_type: str
    breaker: bool = True  # does it count towards opening the circuit?
    model: str | None = None
    status: int | None = None
    purpose: str | None = None
    reservation: str | None = None
    call: int | None = None
    # A recording could not answer (a replay's miss): no provider was asked, so no
    # breaker counts it.
    replayed: bool = False


class LlmCallStarted(Payload):
    """Write-ahead: durable before the request is sent. A call with no ``llm.turn``,
    ``llm.failed`` or ``llm.cut_off`` of the same reservation and number was abandoned
    by a crash and is settled at ``worst_case_usd`` (absent: unpriced)."""

    provider: str
    reservation: str
    call: int
    model: str | None = None
    purpose: str | None = None
    worst_case_usd: float | None = None


class LlmCutOff(Payload):
    """A call that was sent and never reported its usage (cancelled, timed out, or
    abandoned by a crash): charged at its worst case, ``estimated``."""

    provider: str
    reservation: str
    call: int
    reason: str
    estimated: bool = True
    model: str | None = None
    purpose: str | None = None
    duration_ms: int | None = None
    cost_usd: float | None = None


class ProviderRetry(Payload):
    provider: str
    attempt: int
    reason: str
    wait_s: float


class BreakerEvent(Payload):
    """A breaker's events name their ``scope``: an LLM provider's name (its spec's,
    which they also write as ``provider``, as every event before scopes did) or a
    remote service's (``registry:<builder>``). Old rows have ``provider`` only."""

    scope: str | None = None
    provider: str | None = None

    @property
    def key(self) -> str:
        return self.scope or self.provider or ""


class BreakerOpened(BreakerEvent, kw_only=True):
    failures: int


class BreakerChanged(BreakerEvent):
    """``breaker.half_opened`` / ``breaker.closed`` / ``breaker.streak_ended``."""


class BreakerFailure(BreakerEvent, kw_only=True):
    """A counted (transport) failure of a scope that is not an LLM provider's (those
    count through ``llm.failed``)."""

    category: str
    message: str


class ProviderFailover(Payload):
    from_: str = msgspec.field(name="from")
    to: str
    reason: str


# ---- sandbox ---------------------------------------------------------------------------


class SandboxLockAcquired(Payload):
    waited_ms: int


class SandboxLockReleased(Payload):
    pass


class SandboxOrphansRemoved(Payload):
    count: int


class SandboxImagePrepared(Payload):
    image: str
    imported: bool


# ---- installs --------------------------------------------------------------------------


class InstallStarted(Payload):
    tool: str
    version: str
    requested: str | None
    tag: str
    repo: str
    recipe_source: str


class InstallCompleted(Payload):
    """What the installed-tools projection keeps (tools.list, the shell hook's index)."""

    tool: str
    version: str
    binaries: dict[str, Any]
    tag: str | None = None
    repo: str | None = None
    requested: str | None = None
    recipe_source: str | None = None
    recipe_sha256: str | None = None
    platform: str | None = None
    assets: list[dict[str, Any]] | None = None
    install_dir: str | None = None
    verify_checks: list[dict[str, Any]] | None = None
    # Tools this one needs at run time (``remove`` refuses them while it is installed).
    runtime_dependencies: list[str] | None = None
    # A Homebrew bottle's relocation: {text_files, elf_files, macho_files: counts,
    # left_alone: [{file, placeholders}]} (files that still hold a placeholder).
    relocation: dict[str, Any] | None = None
    # A tool built from source: {image, kind (configure_make, cmake_build, cpan_install),
    # dependencies: {recipe: tool directory}} (mounted read-only into the build).
    build: dict[str, Any] | None = None
    # Shell start-up fragments the person approved ($TSUKU_HOME-relative paths):
    # removed with the tool, or when another version replaces it.
    shell_init: list[str] | None = None
    # A toolchain installed for another tool's install, not asked for by name: its
    # binaries are not linked into bin/ (start-up repair does not link them either).
    hidden: bool | None = None
    # The toolchains installed from their recipes its package manager ran with (runtime
    # or only to build): a hidden one goes with the last tool using it (install/hidden.py).
    toolchains: list[str] | None = None


class InstallFailed(Payload):
    tool: str | None  # None only for an interrupted install whose start row lacked it
    version: str | None
    requested: str | None
    stage: str
    error_code: str
    message: str


class InstallRemoved(Payload):
    tool: str
    version: str | None
    # A hidden toolchain removed because removing this tool left nothing using it (the
    # same session's first ``install.removed`` is that tool's; install/hidden.py).
    toolchain_for: str | None = None
    # A hidden toolchain no installed tool used, removed by ``tsukuctl remove --unused``.
    unused: bool | None = None


class InstallVerified(Payload):
    tool: str
    version: str | None
    ok: bool
    problems: list[str]
    binaries_checked: int
    verify_command: str | None


# ---- create ----------------------------------------------------------------------------


class CreateStarted(Payload):
    tool: str
    repo: str
    deterministic_only: bool
    llm: bool
    skip_validation: bool


class GenerationCompleted(Payload):
    """``run_*`` are the totals of the run's ``llm.turn`` events, named apart so
    summaries never count the run's money twice."""

    tool: str
    repo: str
    tag: str
    generated_by: str
    provider: str | None
    model: str | None
    validation: str
    repairs: int
    self_repairs: int
    turns: int
    run_input_tokens: int
    run_output_tokens: int
    run_cost_usd: float | None
    duration_ms: int
    max_repairs: int | None = None  # the run's --repairs; None: a builder with no model


class GenerationFailed(Payload):
    tool: str
    repo: str
    stage: str
    error_code: str
    message: str
    repairs: int
    run_cost_usd: float | None
    max_repairs: int | None = None  # the run's --repairs; None: a builder with no model


class ToolCalled(Payload, omit_defaults=True):
    """One tool call of the model: create's fetch_file, inspect_archive, extract_pattern;
    discovery's extract_source, web_search and the provider's own searches."""

    name: str
    ok: bool
    duration_ms: int
    path: str | None = None
    asset: str | None = None
    query: str | None = None  # discovery: the search query, or the extracted source
    bytes: int | None = None
    error_type: str | None = None


class ValidationStarted(Payload):
    attempt: int
    platform: str
    image: str


class ValidationFinished(Payload):
    """``validation.passed`` / ``validation.failed``."""

    attempt: int
    status: str
    stage: str
    platform: str
    image: str | None
    duration_ms: int
    command: str | None = None
    exit_code: int | None = None
    category: str | None = None
    message: str | None = None
    assets: list[dict[str, Any]] | None = None
    platforms: list[dict[str, Any]] | None = None  # {platform, status, how} per platform


class ValidationSkipped(Payload):
    """``reason`` always. A validation that began and could not finish (the container
    runtime went away mid-run, the recipe does not install on the container's platform)
    also carries its attempt's verdict fields, as ``validation.failed`` does."""

    reason: str
    attempt: int | None = None
    status: str | None = None
    stage: str | None = None
    platform: str | None = None
    image: str | None = None
    duration_ms: int | None = None
    command: str | None = None
    exit_code: int | None = None
    category: str | None = None
    message: str | None = None
    assets: list[dict[str, Any]] | None = None
    platforms: list[dict[str, Any]] | None = None


class RepairAttempted(Payload):
    """``kind``: ``layout`` (deterministic), ``verify_self_repair`` or ``llm``."""

    kind: str
    attempt: int | None = None
    stage: str | None = None
    category: str | None = None
    change: str | None = None
    method: str | None = None
    command: str | None = None


class InstructionsStarted(Payload):
    """The instructions builder begins: ``came_from`` is ``discovery`` (a page found by
    web search) or ``no_binary_assets`` (a repository whose releases have no build)."""

    tool: str
    url: str
    came_from: str


class InstructionsFetched(Payload, omit_defaults=True):
    url: str
    status: int
    bytes: int
    chars: int = 0  # of visible text, after stripping
    origins: list[str] | None = None  # the sites the visible text names
    shown: list[str] | None = None  # commands found that tsuku never runs
    engine: str | None = None  # what decided the visible text: chromium | stripper
    render_ms: int | None = None  # how long deciding it took


class InstructionsAnswer(Payload, omit_defaults=True):
    """One ``write_recipe`` answer after the code's checks."""

    kind: str
    ok: bool
    attempt: int
    origins: list[str] | None = None  # the sites its URLs use
    refused: list[str] | None = None  # URLs on sites the page does not name
    findings: list[str] | None = None


class RecipeWritten(Payload):
    tool: str
    path: str
    sha256: str


# ---- batch generation (docs/batch.md) --------------------------------------------------


class BatchJobSpec(msgspec.Struct, kw_only=True):
    """One queued source: ``id`` is stable (a short hash of tool and source)."""

    id: str
    tool: str
    source: str
    priority: int = 0


class BatchAdded(Payload):
    jobs: list[BatchJobSpec]


class BatchLeased(Payload):
    job: str
    fence: int
    owner: str


class BatchDone(Payload):
    """The recipe itself is kept here: the ledger is where a batch's recipes live."""

    job: str
    fence: int
    version: str | None
    sha256: str
    recipe: str
    tag: str | None = None
    generated_by: str | None = None
    validated: bool = True  # False: made with --skip-validation (export leaves it out)


class BatchFailed(Payload):
    job: str
    fence: int
    category: str
    message: str
    attempt: int
    retry_at: str | None = None  # when it may be leased again (backoff); None: final


class BatchDeferred(Payload):
    job: str
    fence: int
    reason: str
    message: str | None = None


class BatchRequeued(Payload):
    job: str
    fence: int
    reason: str


class BatchRetried(Payload):
    jobs: list[str]
    states: list[str]


class BatchCleared(Payload):
    jobs: int


class BatchRunStarted(Payload):
    run: str
    owner: str
    workers: int
    deterministic_only: bool
    llm: bool
    skip_validation: bool
    max_usd: float | None
    queued: int


class BatchRunStopped(Payload):
    run: str
    reason: str  # finished | cancelled | failed
    done: int
    failed: int
    deferred: int
    remaining: int
    spent_usd: float
    duration_ms: int


class EvalRunStarted(Payload):
    """What every eval run's ``eval.started`` records, create's and discovery's alike;
    their reports (``flows/eval_run.py``, ``eval_discover.py``) begin with it."""

    run: str
    corpus: str
    corpus_hash: str
    items: int
    provider: str
    model: str | None
    prompt_version: str
    max_usd: float | None
    worst_case_usd: float | None


class EvalStarted(EvalRunStarted):
    """``tsukuctl eval create`` or ``eval discover`` begins (its events' session is
    ``run``); ``corpus_hash`` names the questions, ``prompt_version`` what the model was
    told (create's or discovery's prompts, by ``kind``)."""

    kind: str = "create"  # create | discover
    repairs: int = 0  # create's
    skip_validation: bool = False  # create's
    replay: str | None = None  # create's: the recording the model's answers came from


class EvalItem(Payload):
    """One corpus item's outcome; ``session``: its create run's events. Not measured:
    stopped by the cap or a limit (its cost counts, its result does not)."""

    run: str
    tool: str
    source: str
    session: str
    measured: bool
    ok: bool
    category: str | None
    detail: str
    duration_ms: int
    run_cost_usd: float
    turns: int
    repairs: int
    kind: str = "create"
    # discover's: the source found, the stage that found it, the question a person
    # would have been asked (confirm | choice) and where, whether a person who knows
    # the right source would accept it, the web-search stage's machine time
    found: str | None = None
    stage: str | None = None
    asked: str | None = None
    asked_stage: str | None = None
    accepted: bool | None = None
    llm_ms: int | None = None
    searches: int = 0


class EvalCompleted(Payload):
    run: str
    reason: str  # finished | max_usd | budget | cancelled | failed
    measured: int
    passed: int
    spent_usd: float
    duration_ms: int


class BatchStaleCommit(Payload):
    """A worker whose lease was taken from it tried to record an outcome: refused."""

    job: str
    fence: int
    current: int
    outcome: str


# ---- discovery -------------------------------------------------------------------------


class DiscoveryStarted(Payload):
    tool: str
    requested: str
    yes: bool
    can_ask: bool


class DiscoveryWarning(Payload):
    tool: str
    kind: str
    similar: str
    distance: int


class DiscoveryStage(Payload):
    """One stage's outcome; the optional fields are what that stage reports."""

    tool: str
    stage: str
    outcome: str
    ms: int
    kind: str | None = None
    builder: str | None = None
    source: str | None = None
    origin: str | None = None
    error: str | None = None
    error_code: str | None = None
    reason: str | None = None
    selection: str | None = None
    matches: list[str] | None = None
    rejected: Any = None
    misfits: Any = None  # ecosystem: builder -> why a same-name package does not fit
    # ecosystem: why the package found by its name needs an explicit choice (empty: none)
    unvouched: list[str] | None = None
    errors: Any = None
    late: Any = None
    provider: str | None = None
    model: str | None = None
    turns: int | None = None
    searches: int | None = None
    candidates: int | None = None
    provider_errors: list[str] | None = None
    selected: str | None = None
    auto_approvable: bool | None = None


class DiscoveryVerified(Payload):
    """A GitHub repository (``repo``, ``url``, stars...) or, with ``builder``, a package
    a model named, as its registry's probe describes it (``package``, ``downloads``...)."""

    tool: str
    source: str
    status: str
    confidence: int
    warnings: list[str]
    repo: str | None = None
    url: str | None = None
    stars: int | None = None
    created_at: str | None = None
    age_days: int | None = None
    pushed_at: str | None = None
    last_push_days: int | None = None
    owner: str | None = None
    owner_type: str | None = None
    description: str | None = None
    fork: bool | None = None
    parent: str | None = None
    parent_stars: int | None = None
    popularity: str | None = None
    reason: str | None = None
    previous_owner: str | None = None
    release: dict[str, Any] | None = None  # the latest release's assets for this platform
    builder: str | None = None  # an ecosystem package: its record's builder
    package: str | None = None
    install_command: str | None = None
    downloads: int | None = None
    version_count: int | None = None
    latest: str | None = None
    repository: str | None = None
    executables: list[str] | None = None


class DiscoveryCandidate(Payload):
    tool: str
    source: str
    confidence: int
    evidence: list[Any]
    seen_in_results: bool
    provider: str | None
    model: str | None
    builder: str = "github"  # or the ecosystem of a package (source: its name)


class DiscoveryCandidateRefused(Payload):
    tool: str
    reason: str
    provider: str | None


class DiscoveryProviderFailed(Payload):
    tool: str
    provider: str
    error_code: str
    message: str


class DiscoverySearchStarted(Payload):
    """Write-ahead for a paid web search (Tavily, Brave): durable before the query is
    sent. One with no ``discovery.search`` of the same reservation and number was
    abandoned by a crash and is charged at ``worst_case_usd`` (the fee) at the next start."""

    tool: str
    provider: str
    reservation: str
    search: int
    worst_case_usd: float


class DiscoverySearch(Payload):
    """A web search; ``cost_usd`` only when it was paid for. ``estimated``: no answer
    said it was billed (it failed after it was sent, was cut off, or was abandoned by a
    crash; ``reason``), so the fee is charged anyway."""

    tool: str
    provider: str
    ok: bool
    results: int | None = None
    attempts: int | None = None
    error: str | None = None
    reservation: str | None = None
    search: int | None = None  # the run's discovery.search_started this answers
    reason: str | None = None
    estimated: bool | None = None
    cost_usd: float | None = None


class DiscoveryCompleted(Payload):
    tool: str
    stage: str
    builder: str
    source: str
    confidence: int | None
    approval: str
    provider: str | None
    spent_usd: float | None
    searches: int
    llm_turns: int
    ms: int


class DiscoveryFailed(Payload):
    tool: str
    stage: str
    error_code: str
    retryable: bool
    message: str
    spent_usd: float | None
    ms: int


#: Every event type → the Struct of its payload (``client.*`` aside).
EVENTS: dict[str, type[Payload]] = {
    "daemon.started": DaemonStarted,
    "daemon.stopped": DaemonStopped,
    "ledger.adopted": LedgerAdopted,
    "ledger.anchor": LedgerAnchor,
    "config.changed": ConfigChanged,
    "budget.reserved": BudgetReserved,
    "budget.settled": BudgetSettled,
    "budget.expired_hold_settled": BudgetExpiredHoldSettled,
    "budget.denied": BudgetDenied,
    "confirmation.requested": ConfirmationRequested,
    "confirmation.granted": ConfirmationAnswered,
    "confirmation.declined": ConfirmationAnswered,
    "generation.started": GenerationStarted,
    "ratelimit.denied": RateLimitDenied,
    "llm.turn": LlmTurn,
    "llm.failed": LlmFailed,
    "llm.call_started": LlmCallStarted,
    "llm.cut_off": LlmCutOff,
    "provider.retry": ProviderRetry,
    "breaker.opened": BreakerOpened,
    "breaker.half_opened": BreakerChanged,
    "breaker.closed": BreakerChanged,
    "breaker.failure": BreakerFailure,
    "breaker.streak_ended": BreakerChanged,
    "provider.failover": ProviderFailover,
    "sandbox.lock_acquired": SandboxLockAcquired,
    "sandbox.lock_released": SandboxLockReleased,
    "sandbox.orphans_removed": SandboxOrphansRemoved,
    "sandbox.image_prepared": SandboxImagePrepared,
    "install.started": InstallStarted,
    "install.completed": InstallCompleted,
    "install.failed": InstallFailed,
    "install.removed": InstallRemoved,
    "install.verified": InstallVerified,
    "create.started": CreateStarted,
    "generation.completed": GenerationCompleted,
    "generation.failed": GenerationFailed,
    "tool.called": ToolCalled,
    "validation.started": ValidationStarted,
    "validation.passed": ValidationFinished,
    "validation.failed": ValidationFinished,
    "validation.skipped": ValidationSkipped,
    "repair.attempted": RepairAttempted,
    "recipe.written": RecipeWritten,
    "instructions.started": InstructionsStarted,
    "instructions.fetched": InstructionsFetched,
    "instructions.answer": InstructionsAnswer,
    "discovery.started": DiscoveryStarted,
    "discovery.warning": DiscoveryWarning,
    "discovery.stage": DiscoveryStage,
    "discovery.verified": DiscoveryVerified,
    "discovery.candidate": DiscoveryCandidate,
    "discovery.candidate_refused": DiscoveryCandidateRefused,
    "discovery.provider_failed": DiscoveryProviderFailed,
    "discovery.search_started": DiscoverySearchStarted,
    "discovery.search": DiscoverySearch,
    "discovery.completed": DiscoveryCompleted,
    "discovery.failed": DiscoveryFailed,
    "batch.added": BatchAdded,
    "batch.leased": BatchLeased,
    "batch.done": BatchDone,
    "batch.failed": BatchFailed,
    "batch.deferred": BatchDeferred,
    "batch.requeued": BatchRequeued,
    "batch.retried": BatchRetried,
    "batch.cleared": BatchCleared,
    "batch.run_started": BatchRunStarted,
    "batch.run_stopped": BatchRunStopped,
    "batch.stale_commit": BatchStaleCommit,
    "eval.started": EvalStarted,
    "eval.item": EvalItem,
    "eval.completed": EvalCompleted,
}

#: The JSON keys each Struct accepts (``encode_name``s: ``from``, not ``from_``).
_PAYLOADS: list[type[Payload]] = [*EVENTS.values(), ClientEvent]
# (Read from the Struct's own table: ``msgspec.structs.fields`` evaluates every
# annotation, ~5 ms of each daemon start for these hundred classes.)
_KEYS = {cls: frozenset(cls.__struct_encode_fields__) for cls in _PAYLOADS}

P = TypeVar("P", bound=Payload)


def is_client(type_: str) -> bool:
    return type_.startswith(CLIENT_PREFIX)


def free_form(type_: str) -> bool:
    """A client's type the catalogue does not declare: any payload fits (``check``
    passes it without a look)."""
    return type_ not in EVENTS and is_client(type_)


def payload_type(type_: str) -> type[Payload]:
    cls = EVENTS.get(type_)
    if cls is not None:
        return cls
    if is_client(type_):
        return ClientEvent
    raise InternalError(
        f"event type {type_!r} is not in the event catalogue",
        hint="Add it to tsukud/events/catalogue.py and docs/events.md.",
    )


def as_payload(payload: Payload) -> dict[str, Any]:
    """A payload built as its Struct (so the type checker holds its fields), as the
    dict the store's ``append`` and an ``Emit`` take: every field, in order."""
    fields: dict[str, Any] = msgspec.to_builtins(payload)
    return fields


def check(type_: str, payload: dict[str, Any]) -> None:
    """Refuse a payload that does not fit its type's Struct: a bug in the appender."""
    if free_form(type_):
        return
    cls = payload_type(type_)  # raises: not in the catalogue
    stray = payload.keys() - _KEYS[cls]
    try:
        if stray:
            raise msgspec.ValidationError(f"unknown field(s) {sorted(stray)}")
        msgspec.convert(payload, cls)
    except msgspec.ValidationError as e:
        raise InternalError(
            f"{type_} payload does not fit its catalogue entry: {e}",
            hint="The event's fields are declared in tsukud/events/catalogue.py.",
        ) from None


def read(payload: dict[str, Any], cls: type[P]) -> P:
    """Decode a stored payload (unknown fields ignored; raises ``msgspec.ValidationError``
    when a field its readers need is missing or mistyped)."""
    return msgspec.convert(payload, cls)
