"""The values discovery passes between its stages and hands to its callers."""

from __future__ import annotations

from typing import Any, Literal

import msgspec

from tsukud.discover.registry_lookup import Entry

Stage = Literal["recipe", "registry", "ecosystem", "llm"]
Approval = Literal["trusted", "yes_flag", "user", "not_needed"]

MIN_CONFIDENCE = 70
MIN_STARS = 50
PARENT_STARS_FACTOR = 10


class Probe(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """One ecosystem's answer for the exact name."""

    builder: str  # an ecosystem record's builder (registries/ecosystems.py)
    source: str  # the package name (module path for go)
    downloads: int = 0
    version_count: int = 0
    has_repository: bool = False
    repository: str | None = None  # owner/repo when the repository is on github.com
    description: str | None = None
    latest: str | None = None
    executables: tuple[str, ...] | None = None  # None: the registry does not say
    # The evidence a person weighs before trusting a package found by its name: when it
    # was first published (ISO date, None: the registry does not say) and who publishes
    # it (a package's maintainers, authors or publisher, as its registry names them).
    first_published: str | None = None
    maintainers: tuple[str, ...] = ()


class PackageMatch(Probe, frozen=True, kw_only=True, omit_defaults=True):
    """``search``: one ecosystem's package of the exact name, with what ``--from`` would
    name it (None: no prefix installs from that ecosystem) and whether it passes
    discovery's filter (downloads, versions, a repository)."""

    from_: str | None = msgspec.field(name="from")
    passes_filter: bool


class SearchAnswer(msgspec.Struct, frozen=True, kw_only=True):
    """``search``: what is known of a name without money or questions (schema/rpc.md)."""

    tool: str
    recipe: str | None  # where its recipe is, in words
    registry_entry: Entry | None  # the discovery registry's
    packages: list[PackageMatch]
    did_you_mean: str | None  # a known tool this name is a near miss of
    errors: dict[str, str]  # what could not be asked, and why
    install_would: str


class Candidate(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """A source an LLM extracted (``extract_source``); nothing here is trusted yet."""

    # owner/repo (already through source.parse_github), or for an ecosystem builder
    # the package name its registry allows
    source: str
    confidence: int
    evidence: tuple[str, ...] = ()
    reasoning: str = ""
    builder: str = "github"  # github, or an ecosystem's (registries/ecosystems.py)
    provider: str | None = None
    model: str | None = None
    seen_in_results: bool = False  # the repo's URL appeared in the search results


class RepoMeta(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """What the GitHub repository API said (the fields verification uses)."""

    full_name: str
    stars: int = 0
    archived: bool = False
    disabled: bool = False
    fork: bool = False
    parent: str | None = None
    parent_stars: int | None = None
    owner: str | None = None
    owner_type: str | None = None  # User | Organization
    description: str | None = None
    homepage: str | None = None
    created_at: str | None = None
    pushed_at: str | None = None


class ReleaseCheck(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """Whether a repository's latest release has an asset for this platform."""

    platform: str  # os/arch
    installable: bool
    tag: str | None = None
    assets: tuple[str, ...] = ()  # the assets for this platform (at most 5)
    note: str | None = None  # why it is not installable


class Verified(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """A candidate after the GitHub check (or its ecosystem's probe) and the gate.

    ``status``: ``verified`` (GitHub or the registry answered, usable), ``unverified``
    (it could not be asked: rate limit or outage; never auto-approved) or ``rejected``
    (not found, archived, below the confidence or popularity gate, a package that does
    not fit the tool).
    """

    candidate: Candidate
    status: Literal["verified", "unverified", "rejected"]
    meta: RepoMeta | None = None
    age_days: int | None = None
    last_push_days: int | None = None
    popular: bool = False  # stars >= 50, or an ecosystem package of this repo passes its bar
    popularity: str | None = None  # why it counts as popular
    reason: str | None = None  # why rejected / unverified
    warnings: tuple[str, ...] = ()
    release: ReleaseCheck | None = None  # None: not checked
    probe: Probe | None = None  # an ecosystem candidate: its registry's answer

    @property
    def source(self) -> str:
        return self.meta.full_name if self.meta is not None else self.candidate.source

    @property
    def builder(self) -> str:
        return self.candidate.builder

    @property
    def spec(self) -> str:
        """``github:owner/repo`` or ``<prefix>:<package>``: the candidate in one word."""
        return f"{self.builder}:{self.source}"

    @property
    def owner_change(self) -> tuple[str, str] | None:
        """``(named owner, GitHub's owner)`` when GitHub answered for another owner than
        the one the search named (a transfer or a redirect): only a person approves that."""
        if self.meta is None:
            return None
        named = self.candidate.source.split("/", 1)[0]
        actual = self.meta.full_name.split("/", 1)[0]
        return None if named.lower() == actual.lower() else (named, actual)

    @property
    def auto_approvable(self) -> bool:
        if self.builder != "github":  # its registry answered and it fits: ``popular`` says
            return self.status == "verified" and self.probe is not None
        return (
            self.status == "verified"
            and self.meta is not None
            and not self.meta.fork
            and self.owner_change is None
            and (self.release is None or self.release.installable)
        )


class Choice(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """One source a person may pick when discovery recommends none, or several.

    ``kind`` is the source's builder (``github`` or an ecosystem record's)
    so whoever acts on the pick (recipe generation, an ecosystem's own builder) knows
    what it holds; ``why`` says why it is, or is not, recommended.
    """

    kind: str
    source: str
    recommended: bool
    why: str
    found_by: str  # ecosystem | llm
    stars: int | None = None
    downloads: int | None = None
    version_count: int | None = None
    age_days: int | None = None
    owner: str | None = None
    description: str | None = None
    confidence: int | None = None
    install_command: str | None = None  # ecosystem packages: how to install them there
    # an ecosystem package's evidence (see Probe)
    repository: str | None = None
    has_repository: bool | None = None
    first_published: str | None = None
    maintainers: tuple[str, ...] = ()

    @property
    def spec(self) -> str:
        """``github:owner/repo`` or ``<prefix>:name``: what ``--from`` takes for GitHub."""
        return f"{self.kind}:{self.source}"


class Discovery(msgspec.Struct, kw_only=True, omit_defaults=True):
    """What discovery found: the answer of ``discover`` and part of install's result."""

    tool: str
    session: str
    stage: Stage
    builder: str  # recipe | github | an ecosystem's (registries/ecosystems.py) | homebrew | ...
    source: str
    reason: str
    confidence: int | None = None
    approval: Approval = "not_needed"
    install_command: str | None = None  # ecosystem results: how to install it there
    metadata: dict[str, Any] = msgspec.field(default_factory=dict)
    evidence: tuple[str, ...] = ()
    sources: tuple[str, ...] = ()  # search results that name the repository
    warnings: tuple[str, ...] = ()
    alternatives: tuple[dict[str, Any], ...] = ()
    rejected: tuple[dict[str, Any], ...] = ()
    provider: str | None = None
    model: str | None = None
    spent_usd: float | None = 0.0
    llm_turns: int = 0
    searches: int = 0
    duration_ms: int = 0  # machine time: waiting for the user's answers is not counted
    waited_ms: int = 0  # time spent waiting for the user's answers
    timings_ms: dict[str, int] = msgspec.field(default_factory=dict)
    tool_stats: tuple[dict[str, Any], ...] | None = None  # --collect-tool-stats


class Discovered(Discovery, kw_only=True, omit_defaults=True):
    """``discover``'s answer: what was found and, for a package tsuku itself can turn
    into a recipe and install, the command that does it."""

    tsuku_command: str | None = None
