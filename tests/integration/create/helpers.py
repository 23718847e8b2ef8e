"""Building blocks for the create tests: fake repositories from human recipes, the
"good model" answer for a human recipe, scripted conversations, and an in-process
pipeline wired to real parts (GitHub client and HTTP on loopback, a real provider SDK
against the fake Anthropic server, real Docker).
"""

from __future__ import annotations

import datetime as dt
import posixpath
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any

from tests.fakes import anthropic_server as anth
from tests.fakes.anthropic_server import FakeAnthropic
from tests.fakes.releases import FakeAsset, FakeRelease, FakeRepo, recipe_assets
from tests.shared import recipe_text
from tests.unit.create.releases import (
    DEFAULT_TAGS,
    EXTRA,
    GROUND_TRUTH_9,
    TAGS,
    expected_names,
    generic_decoys,
    install_steps,
    matrix_cases,
    render_names,
    repo_of,
)
from tsukud.create.pipeline import CreateRequest, CreateResult, Deps, run_create
from tsukud.github.client import GitHub
from tsukud.llm.claude import ClaudeProvider
from tsukud.llm.types import Request, Response
from tsukud.net.http import Http, Settings
from tsukud.net.retry import RetryPolicy
from tsukud.recipe import (
    STANDARD_PLATFORMS,
    ArchiveFormat,
    GitHubArchiveStep,
    GitHubFileStep,
    Recipe,
    detect_format,
    normalize_version,
    parse_recipe,
)
from tsukud.sandbox.runtime import ContainerRuntime
from tsukud.testing.answers import Inexpressible, answer_for
from tsukud.testing.github import FakeGitHub
from tsukud.validation.validator import Validator

CLAUDE_KEY = "sk-ant-api03-CREATECANARY0123456789abcdef"


def claude_env(url: str, daily_budget: float | Decimal) -> dict[str, str]:
    """The settings of a daemon whose LLM is the fake Claude at ``url``, under a daily
    budget and an hourly limit no money test reaches."""
    return {
        "ANTHROPIC_API_KEY": CLAUDE_KEY,
        "ANTHROPIC_BASE_URL": url,
        "TSUKU_LLM_DAILY_BUDGET": str(daily_budget),
        "TSUKU_LLM_HOURLY_LIMIT": "100",
    }


# The answer that describes stern's releases (the fixture world's stern/stern).
STERN = {
    "asset_type": "archive",
    "asset_pattern": "stern_{version}_{os}_{arch}.tar.gz",
    "os_mapping": {"linux": "linux", "darwin": "darwin"},
    "arch_mapping": {"amd64": "amd64", "arm64": "arm64"},
    "archive_format": "tar.gz",
    "strip_dirs": 0,
    "binaries": ["stern"],
    "verify_command": "stern --version",
    "verify_pattern": "{version}",
}


def ground_truth_cases() -> dict[str, str]:
    """27 cases: the 9 ground-truth tools (GROUND_TRUTH_9) and the 18 of the shared
    data's llm-test-matrix.json."""
    cases = {f"gt_{p.split('/')[1][:-5]}": p for p in GROUND_TRUTH_9}
    cases.update({tid: case["recipe"] for tid, case in matrix_cases().items()})
    return cases


def load_human(path: str) -> Recipe:
    return parse_recipe(recipe_text(path), path)


def tags_for(tool: str) -> tuple[str, ...]:
    return TAGS.get(tool, DEFAULT_TAGS)


def human_repo(human: Recipe, *, files: dict[str, bytes] | None = None) -> FakeRepo:
    """Releases (newest first) holding real archives where the human recipe looks, plus
    the decoys real releases carry (checksums, signatures, Windows, 32-bit, packages)."""
    tool = human.metadata.name
    releases = []
    for day, tag in enumerate(tags_for(tool)):
        version = normalize_version(tag)
        assets = recipe_assets(human, version, tag)
        names = {a.name for a in assets}
        linux = expected_names(human, tag, STANDARD_PLATFORMS[0])
        decoys = generic_decoys(human, tool, version, linux[0] if linux else None)
        extra = EXTRA.get(tool)
        if extra is not None:
            decoys += extra(version)
        assets += [FakeAsset(n, b"decoy\n") for n in sorted(set(decoys)) if n not in names]
        releases.append(FakeRelease(tag, assets, created_at=f"2024-02-{28 - day:02d}T00:00:00Z"))
    return FakeRepo(
        repo_of(human),
        releases,
        description=human.metadata.description,
        homepage=human.metadata.homepage,
        files=files if files is not None else {"README.md": f"# {tool}\n".encode()},
    )


def _format(pattern: str, step: GitHubArchiveStep) -> str | None:
    aliases = {"tgz": "tar.gz", "tbz": "tar.bz2", "tbz2": "tar.bz2", "txz": "tar.xz"}
    if step.archive_format:
        return aliases.get(step.archive_format, step.archive_format)
    fmt = detect_format(pattern.replace("{version}", "1.0.0"))
    return None if fmt is ArchiveFormat.RAW else fmt.value


def good_answer(human: Recipe) -> dict[str, Any]:
    """What a careful model answers for ``human``'s tool: the ground truth in the
    extract_pattern schema; where the schema cannot say it (a directory install), the
    nearest answer, with the binaries' own names. The answer names the newest release's
    builds, the one the create run validates (a version-ranged recipe's steps for it)."""
    newest = normalize_version(tags_for(human.metadata.name)[0])
    try:
        return answer_for(human, newest)[0]
    except Inexpressible:
        return _nearest_answer(human)


def _nearest_answer(human: Recipe) -> dict[str, Any]:
    steps = install_steps(human)
    base = steps[0]
    oses = sorted({p.os for p in STANDARD_PLATFORMS})
    os_mapping: dict[str, str] = {}
    arch_mapping: dict[str, str] = {}
    for step in steps:
        os_mapping.update(step.os_mapping or {})
        arch_mapping.update(step.arch_mapping or {})
    if any("{os}" in s.asset_pattern for s in steps):
        for o in oses:
            os_mapping.setdefault(o, o)
    if any("{arch}" in s.asset_pattern for s in steps):
        for a in ("amd64", "arm64"):
            arch_mapping.setdefault(a, a)
    if isinstance(base, GitHubFileStep):
        src = base.binary or (base.binaries[0].src if base.binaries else human.metadata.name)
        binaries = [posixpath.basename(src.replace("{os}", "x").replace("{arch}", "y"))]
        if "{" in src:
            binaries = [human.metadata.name]
        answer: dict[str, Any] = {"asset_type": "binary"}
    else:
        binaries = [b.src for b in base.binaries]
        answer = {"asset_type": "archive", "strip_dirs": base.strip_dirs or 0}
        fmt = _format(base.asset_pattern, base)
        if fmt:
            answer["archive_format"] = fmt
    names = {posixpath.basename(b) for b in binaries}
    verify = human.verify
    command = verify.command if verify and verify.command else ""
    if not command or command.split()[0] not in names:
        command = f"{posixpath.basename(binaries[0])} --version"
    answer.update(
        asset_pattern=base.asset_pattern,
        os_mapping={k: v for k, v in os_mapping.items() if k in oses},
        arch_mapping={k: v for k, v in arch_mapping.items() if k in ("amd64", "arm64")},
        binaries=binaries,
        verify_command=command,
        verify_pattern=(verify.pattern if verify and verify.pattern else "{version}"),
    )
    overrides = []
    for step in steps[1:]:
        if step.asset_pattern == base.asset_pattern:
            continue
        when_os = step.when.os if step.when and step.when.os else None
        if not when_os:
            continue
        for o in when_os:
            overrides.append({"os": o, "asset_pattern": step.asset_pattern})
    if overrides:
        answer["overrides"] = overrides
    return answer


def inspect_target(human: Recipe) -> str:
    """The asset a careful model inspects: the linux/amd64 one at the newest release."""
    tag = tags_for(human.metadata.name)[0]
    for target in STANDARD_PLATFORMS:
        names = expected_names(human, tag, target)
        if names:
            return names[0]
    raise AssertionError("the human recipe installs nowhere")


def script_good_conversation(fake: FakeAnthropic, human: Recipe) -> None:
    """Turn 1: inspect_archive on the linux/amd64 asset; turn 2: the good answer."""
    fake.reply(
        [anth.tool_use("toolu_inspect", "inspect_archive", {"asset_name": inspect_target(human)})],
        "tool_use",
        usage_=anth.usage(2500, 60),
    )
    fake.reply(
        [anth.tool_use("toolu_answer", "extract_pattern", good_answer(human))],
        "tool_use",
        usage_=anth.usage(3200, 220),
    )


# --------------------------------------------------------------------------- in-process


@dataclass
class DirectRun:
    """An LLM run straight on a provider (no budget: the daemon tests cover money)."""

    provider: ClaudeProvider
    names: list[str] = field(default_factory=lambda: ["claude"])
    spent: Decimal = Decimal(0)
    unpriced_turns: int = 0
    warnings: list[str] = field(default_factory=list)  # tsukud.llm.run.LlmRun
    requests: list[Request] = field(default_factory=list)

    async def complete(self, request: Request) -> Response:
        from tsukud.llm.pricing import cost

        self.requests.append(request)
        response = await self.provider.complete(request)
        price = cost(response.model, response.usage, on=dt.datetime.now(dt.UTC).date())
        if price is None:
            self.unpriced_turns += 1
        else:
            self.spent += price
        return response


def direct_llm(provider: ClaudeProvider, runs: list[DirectRun]) -> Callable[..., Any]:
    @asynccontextmanager
    async def open_llm(**_kw: Any) -> AsyncIterator[DirectRun]:
        run = DirectRun(provider)
        runs.append(run)
        yield run

    return open_llm


@dataclass
class Sink:
    events: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    progress: list[dict[str, Any]] = field(default_factory=list)

    async def emit(self, type_: str, payload: dict[str, Any]) -> None:
        self.events.append((type_, payload))

    async def on_progress(self, body: dict[str, Any]) -> None:
        self.progress.append(body)

    def types(self) -> list[str]:
        return [t for t, _ in self.events]

    def of(self, type_: str) -> list[dict[str, Any]]:
        return [p for t, p in self.events if t == type_]


@asynccontextmanager
async def no_lock(_session: str | None) -> AsyncIterator[None]:
    yield


def make_validator(
    http: Http, gh: FakeGitHub, runtime: ContainerRuntime, image: str, workdir: Path
) -> Validator:
    """A validator on the real runtime, staging under ``workdir``, with no lock."""

    async def get_runtime() -> ContainerRuntime:
        return runtime

    return Validator(
        http=http,
        github_url=gh.web_url,
        workdir=workdir / "validate",
        runtime=get_runtime,
        image=image,
        lock=no_lock,
    )


def loopback_http() -> Http:
    quick = Settings(retry=RetryPolicy(base_delay=0.01, max_delay=0.02))
    return Http(settings=quick, allowed_hosts=lambda: ["127.0.0.1"])


async def create_in_process(
    *,
    http: Http,
    github: GitHub,
    github_url: str,
    tool: str,
    repo: str,
    sink: Sink,
    validator: Any = None,
    open_llm: Callable[..., Any] | None = None,
    secrets: tuple[str, ...] = (CLAUDE_KEY,),
    **request: Any,
) -> CreateResult:
    deps = Deps(
        github=github,
        http=http,
        github_url=github_url,
        emit=sink.emit,
        progress=sink.on_progress,
        open_llm=open_llm,
        validator=validator,
        secrets=secrets,
    )
    req = CreateRequest(tool=tool, repo=repo, **request)
    return await run_create(req, deps, session="create-test")


def rendered_names(recipe: Recipe, tag: str) -> Iterator[tuple[str, list[str] | None]]:
    for target in STANDARD_PLATFORMS:
        yield target.key, render_names(recipe, tag, target)
