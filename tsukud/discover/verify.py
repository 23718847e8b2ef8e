"""Verification and the decision: deterministic, whatever the model said.

The model only *extracts* candidates. An ecosystem package is checked by its registry's
probe (:func:`assess_package`: it exists, fits the tool, passes the registry's bar); a
repository against GitHub's repository
API (:func:`fetch_meta`: exists, archived, fork and parent, owner and type, stars,
created and pushed dates) and judged by :func:`assess`:

* not found, archived or disabled → rejected;
* GitHub could not be asked (rate limit, outage) → ``unverified``: kept, never
  auto-approved, shown with a warning;
* confidence below 70 → rejected;
* popular enough: at least 50 stars, or an ecosystem package whose repository is this
  one passes its download/version bar; a non-fork that is neither → rejected;
* a fork is kept (the user may want it) but never auto-approved; its parent is
  suggested when it has ten times the stars;
* a repository whose owner is not the one the search named (GitHub redirected a
  transferred repository) is kept but never auto-approved: a person sees both owners.

:func:`decide` ranks what is left by confidence, then stars, then name, and selects the
first candidate that may be auto-approved (verified, not a fork, popular); when there is
none, the best remaining candidate can only be approved by a person.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

import msgspec

from tsukud.discover.ecosystem import (
    ProbeReport,
    describe,
    misfit,
    quality,
    repository_support,
    unvouched,
)
from tsukud.discover.model import (
    MIN_CONFIDENCE,
    MIN_STARS,
    PARENT_STARS_FACTOR,
    Candidate,
    Probe,
    RepoMeta,
    Verified,
)

if TYPE_CHECKING:
    from tsukud.github.client import GitHub, Repo


def meta_from_repo(repo: Repo) -> RepoMeta:
    """The fields verification uses, from the GitHub client's repository value."""
    parent = repo.parent if repo.fork else None
    return RepoMeta(
        full_name=repo.full_name,
        stars=repo.stargazers_count,
        archived=repo.archived,
        disabled=repo.disabled,
        fork=repo.fork,
        parent=parent.full_name if parent else None,
        parent_stars=parent.stargazers_count if parent else None,
        owner=repo.owner.login if repo.owner else None,
        owner_type=repo.owner.type if repo.owner else None,
        description=repo.description,
        homepage=repo.homepage,
        created_at=repo.created_at,
        pushed_at=repo.pushed_at,
    )


async def fetch_meta(github: GitHub, repo: str) -> RepoMeta:
    """``GET /repos/{owner}/{repo}`` through the GitHub client (its typed errors: not
    found, rate limited, other)."""
    return meta_from_repo(await github.repo(repo))


# ------------------------------------------------------------------------------ pure


def parse_time(value: str | None) -> dt.datetime | None:
    if not value:
        return None
    try:
        parsed = dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=dt.UTC)


def days_since(value: str | None, now: dt.datetime) -> int | None:
    t = parse_time(value)
    return None if t is None else max(0, (now - t).days)


def ago(days: int | None) -> str:
    """The reference's ``formatDaysAgo``."""
    if days is None:
        return "unknown"
    if days == 0:
        return "today"
    if days == 1:
        return "1 day ago"
    if days < 7:
        return f"{days} days ago"
    if days < 14:
        return "1 week ago"
    if days < 30:
        return f"{days // 7} weeks ago"
    if days < 60:
        return "1 month ago"
    if days < 365:
        return f"{days // 30} months ago"
    if days < 730:
        return "1 year ago"
    return f"{days // 365} years ago"


def assess(
    candidate: Candidate,
    meta: RepoMeta | None,
    error: BaseException | None,
    *,
    now: dt.datetime,
    probes: list[Probe] | tuple[Probe, ...] = (),
    had_search_results: bool = False,
) -> Verified:
    warnings: list[str] = []
    if had_search_results and not candidate.seen_in_results:
        warnings.append("none of the search results the model saw links to this repository")
    if meta is None:
        return _unverified_or_rejected(candidate, error, warnings)
    named_owner = candidate.source.split("/", 1)[0]
    owner = meta.full_name.split("/", 1)[0]
    if named_owner.lower() != owner.lower():
        warnings.append(
            f"OWNER CHANGED: the search named {candidate.source}, but GitHub answers for "
            f"{meta.full_name} (transferred or redirected from {named_owner} to {owner}); "
            "it is never approved automatically"
        )
    elif meta.full_name.lower() != candidate.source.lower():
        warnings.append(f"GitHub redirected {candidate.source} to {meta.full_name} (renamed)")
    age = days_since(meta.created_at, now)
    pushed = days_since(meta.pushed_at, now)

    def verdict(status: Literal["verified", "rejected"], **kw: Any) -> Verified:
        return Verified(
            candidate=candidate,
            status=status,
            meta=meta,
            age_days=age,
            last_push_days=pushed,
            warnings=tuple(warnings),
            **kw,
        )

    if meta.archived or meta.disabled:
        what = "archived" if meta.archived else "disabled"
        return verdict("rejected", reason=f"the repository is {what}")
    if candidate.confidence < MIN_CONFIDENCE:
        return verdict(
            "rejected", reason=f"confidence {candidate.confidence} is below {MIN_CONFIDENCE}"
        )
    popularity: str | None = None
    if meta.stars >= MIN_STARS:
        popularity = f"{meta.stars} stars"
    else:
        support = repository_support(list(probes), meta.full_name)
        if support is not None:
            popularity = f"{support.builder} package {support.source} ({describe(support)})"
    if meta.fork:
        parent = meta.parent or "unknown"
        note = f"this repository is a FORK of {parent}"
        if meta.parent_stars is not None:
            note += f" ({meta.parent_stars} stars)"
        warnings.append(note)
        if meta.parent and (meta.parent_stars or 0) >= max(1, meta.stars) * PARENT_STARS_FACTOR:
            warnings.append(
                f"consider the original repository instead: --from github:{meta.parent}"
            )
    elif popularity is None:
        return verdict(
            "rejected",
            reason=(
                f"{meta.stars} stars (fewer than {MIN_STARS}) and no ecosystem package of "
                "this repository passes its download bar"
            ),
        )
    if age is not None and age < 30:
        warnings.append(f"the repository was created {ago(age)}")
    if pushed is not None and pushed > 730:
        warnings.append(f"nothing was pushed for {ago(pushed).removesuffix(' ago')}")
    return verdict("verified", popular=popularity is not None, popularity=popularity)


def _unverified_or_rejected(
    candidate: Candidate, error: BaseException | None, warnings: list[str]
) -> Verified:
    from tsukud.github.client import GitHubRateLimited, RepoNotFound
    from tsukud.net.http import HttpError

    message = str(getattr(error, "message", None) or error or "no answer")
    if isinstance(error, RepoNotFound):
        return Verified(
            candidate=candidate,
            status="rejected",
            reason="the repository does not exist on GitHub",
            warnings=tuple(warnings),
        )
    if candidate.confidence < MIN_CONFIDENCE:
        return Verified(
            candidate=candidate,
            status="rejected",
            reason=f"confidence {candidate.confidence} is below {MIN_CONFIDENCE}",
            warnings=tuple(warnings),
        )
    transient = isinstance(error, GitHubRateLimited) or (
        isinstance(error, HttpError) and error.retryable
    )
    if not transient:
        status = getattr(error, "data", {}).get("status")
        if not (isinstance(status, int) and status >= 500):
            return Verified(
                candidate=candidate,
                status="rejected",
                reason=f"GitHub verification failed: {message}",
                warnings=tuple(warnings),
            )
    hint = str(getattr(error, "hint", "") or "")
    warnings.append(
        "GitHub API verification was SKIPPED"
        + (" (rate limited)" if isinstance(error, GitHubRateLimited) else "")
        + f": {message}. Stars, age and fork status could not be checked."
        + (f" {hint}" if hint else "")
    )
    return Verified(
        candidate=candidate, status="unverified", reason=message, warnings=tuple(warnings)
    )


def assess_package(candidate: Candidate, report: ProbeReport, *, tool: str) -> Verified:
    """An ecosystem candidate judged by its registry's probe, as a same-name package is:
    it exists, fits the tool (:func:`.ecosystem.misfit`) and passes its registry's bar.
    A registry that could not be asked leaves it ``unverified`` (never auto-approved); a
    package that does not fit is rejected, though a person may still pick it."""
    builder = candidate.builder
    probe = next((p for p in report.matches if p.builder == builder), None)
    if candidate.confidence < MIN_CONFIDENCE:
        return Verified(
            candidate=candidate,
            status="rejected",
            probe=probe,
            reason=f"confidence {candidate.confidence} is below {MIN_CONFIDENCE}",
        )
    if probe is None:
        failure = report.errors.get(builder) or (
            "no answer in time" if builder in report.late else None
        )
        if failure is None:
            return Verified(
                candidate=candidate,
                status="rejected",
                reason=f"there is no {builder} package named {candidate.source}",
            )
        return Verified(
            candidate=candidate,
            status="unverified",
            reason=f"{builder} could not be asked: {failure}",
            warnings=(
                f"{builder} verification was SKIPPED ({failure}): whether "
                f"{candidate.source} exists and is used could not be checked",
            ),
        )
    why = misfit(probe, tool)
    if why:
        return Verified(candidate=candidate, status="rejected", probe=probe, reason="; ".join(why))
    # A model naming a package is no more an identity than the typed name is: with no
    # repository or negligible use, only a person takes it (``--yes`` never does).
    bare = unvouched(probe)
    return Verified(
        candidate=candidate,
        status="verified",
        probe=probe,
        popular=quality(probe) is None and not bare,
        popularity=f"{builder} package {probe.source} ({describe(probe)})",
        warnings=(f"nothing but its name speaks for it: {'; '.join(bare)}",) if bare else (),
    )


@dataclass(frozen=True)
class Decision:
    selected: Verified | None
    auto_approvable: bool
    ranked: tuple[Verified, ...] = ()
    rejected: tuple[Verified, ...] = ()
    alternatives: tuple[Verified, ...] = field(default=())


def _stars(v: Verified) -> int:
    return v.meta.stars if v.meta is not None else -1


def merge(candidates: list[Candidate]) -> list[Candidate]:
    """One candidate per repository or package (case-insensitive): the highest confidence wins and
    the evidence of all is kept."""
    best: dict[str, Candidate] = {}
    for c in candidates:
        key = f"{c.builder}:{c.source}".lower()
        prev = best.get(key)
        if prev is None:
            best[key] = c
            continue
        top, other = (c, prev) if c.confidence > prev.confidence else (prev, c)
        evidence = tuple(dict.fromkeys((*top.evidence, *other.evidence)))
        best[key] = msgspec.structs.replace(
            top, evidence=evidence, seen_in_results=top.seen_in_results or other.seen_in_results
        )
    return list(best.values())


def decide(verified: list[Verified]) -> Decision:
    kept = [v for v in verified if v.status != "rejected"]
    rejected = tuple(v for v in verified if v.status == "rejected")
    ranked = sorted(kept, key=lambda v: (-v.candidate.confidence, -_stars(v), v.source.lower()))
    auto = [v for v in ranked if v.auto_approvable and v.popular]
    selected = auto[0] if auto else (ranked[0] if ranked else None)
    alternatives = tuple(v for v in ranked if v is not selected)
    return Decision(
        selected=selected,
        auto_approvable=bool(auto),
        ranked=tuple(ranked),
        rejected=rejected,
        alternatives=alternatives,
    )
