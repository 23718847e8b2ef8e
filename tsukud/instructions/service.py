"""The instructions builder inside the daemon: its run with the daemon's real parts
(the shared HTTP layer, the installer's version resolver, the LLM service with its
money rules, the container validator, the ledger under the run's session)."""

from __future__ import annotations

import contextlib
import secrets
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from tsukud.progress import Progress

if TYPE_CHECKING:
    from tsukud.clock import Clock
    from tsukud.config import Config
    from tsukud.create.pipeline import CreateResult
    from tsukud.events.store import EventStore
    from tsukud.github.client import GitHub
    from tsukud.llm.service import LLM
    from tsukud.validation.validator import Validator


class InstructionsBuilder:
    def __init__(
        self,
        *,
        config: Callable[[], Config],
        store: EventStore,
        clock: Clock,
        github: Callable[[], GitHub],
        llm: Callable[[], LLM],
        validator: Callable[[], Validator],
    ) -> None:
        self._config = config
        self.store = store
        self.clock = clock
        self._github = github
        self._llm = llm
        self._validator = validator

    async def build(
        self,
        tool: str,
        url: str,
        *,
        came_from: str,
        progress: Progress,
        confirmed: bool = False,
        can_ask: bool = False,
        providers: str | None = None,
        only_provider: bool | None = None,
        repo: str | None = None,
        collect_tool_stats: bool = False,
        refuse_strangers: bool = False,
    ) -> CreateResult:
        """A validated recipe for ``tool`` read from the install page at ``url``."""
        from tsukud.install.versions import VersionResolver
        from tsukud.instructions.builder import Deps, InstructionsRequest, build

        session = "instructions-" + secrets.token_hex(6)
        store = self.store

        async def emit(type_: str, payload: dict[str, Any]) -> None:
            ev = store.append_nowait(type_, payload, session)
            if type_.startswith("generation."):
                await store.wait_durable(ev.id)

        github = self._github()
        config = self._config()
        repo_text = await _repo_text(github, repo) if repo else ""
        deps = Deps(
            http=github.http,
            resolver=VersionResolver(github, clock=self.clock),
            emit=emit,
            progress=progress,
            open_llm=self._llm().run,
            validator=self._validator(),
            secrets=tuple(self._config().secret_values()),
            clock=self.clock,
            chromium=str(config["render.chromium"]),
            render_timeout_s=float(config["render.timeout_s"]),
        )
        req = InstructionsRequest(
            tool=tool,
            url=url,
            came_from=came_from,
            confirmed=confirmed,
            can_ask=can_ask,
            providers=providers,
            only_provider=only_provider,
            repo=repo,
            repo_text=repo_text,
            refuse_strangers=refuse_strangers,
            collect_tool_stats=collect_tool_stats,
        )
        return await build(req, deps, session=session)


README_MAX_CHARS = 200_000


async def _repo_text(github: GitHub, repo: str) -> str:
    """What the repository says itself on GitHub: its description and root README.md
    (HTML comments and hidden elements dropped, as a reader of the rendered README
    would see it). Empty when GitHub does not answer: then it names nothing."""
    from tsukud.errors import TsukuError
    from tsukud.github.client import ContentFile
    from tsukud.instructions.page import visible_text

    parts: list[str] = []
    with contextlib.suppress(TsukuError):
        parts.append((await github.repo(repo)).description or "")
    try:
        readme = await github.contents(repo, "README.md")
    except TsukuError:
        readme = None
    if isinstance(readme, ContentFile) and readme.content:
        text = readme.content.decode("utf-8", "replace")
        parts.append(visible_text(text, limit=README_MAX_CHARS))
    return "\n".join(p for p in parts if p)
