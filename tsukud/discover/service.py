"""Discovery inside the daemon: the chain's parts, built from the live configuration.

``DiscoveryService.discover(...)`` runs one discovery with:

* its own :class:`~tsukud.net.http.Http` (same policy, pooling and caps as the shared
  one) whose allowed private hosts are the configured endpoints, ecosystem and search
  URLs included, so tests point them at loopback. It carries no credentials: the
  GitHub token never goes to a package registry or a search engine;
* the registry's recipes and manifest (``registry.url`` / ``registry.manifest_url``) and
  discovery entries cached under ``$TSUKU_HOME/registry/discovery``;
* the GitHub client shared with installs (verification);
* the LLM service (one budget reservation per discovery, priced ``llm.turn`` events,
  breakers, failover) and the confirmation service (questions over the socket);
* events in the ledger under the discovery's session id.
"""

from __future__ import annotations

import functools
import secrets
from collections.abc import Callable, Iterable, Mapping, Sequence
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tsukud.discover.chain import Ask, Choose, Deps, Request, discover
from tsukud.discover.model import Discovery, PackageMatch, SearchAnswer
from tsukud.progress import Progress
from tsukud.registries.ecosystems import DISCOVERY_URLS

if TYPE_CHECKING:
    from tsukud.clock import Clock
    from tsukud.config import Config
    from tsukud.discover.ecosystem import ProbeReport
    from tsukud.discover.model import ReleaseCheck, RepoMeta
    from tsukud.discover.registry_lookup import DiscoveryRegistry
    from tsukud.discover.search import Searcher
    from tsukud.discover.web import Web
    from tsukud.events.store import EventStore
    from tsukud.github.client import GitHub
    from tsukud.install.registry import Registry
    from tsukud.llm.service import LLM
    from tsukud.policy.confirm import Confirmations

ECOSYSTEM_KEYS = {k: u.key for k, u in DISCOVERY_URLS.items()}
SEARCH_KEYS = {
    "ddg": "discover.ddg_url",
    "tavily": "discover.tavily_url",
    "brave": "discover.brave_url",
}
PAGE_EXCERPT = 2000  # characters of an install page's visible text in a report


class DiscoveryService:
    def __init__(
        self,
        *,
        home: Path,
        config: Callable[[], Config],
        clock: Clock,
        store: EventStore,
        installed: Callable[[], Mapping[str, Any]],
        recipes: Callable[[], Registry],
        github: Callable[[], GitHub],
        llm: Callable[[], LLM],
        confirmations: Confirmations,
    ) -> None:
        # Getters, not objects: the GitHub client and the LLM service are built on first
        # use (a registry hit needs neither), and the configuration is read live.
        self.home = home
        self._config = config
        self.clock = clock
        self.store = store
        self._installed = installed
        self.recipes = recipes
        self._github = github
        self._llm = llm
        self.confirmations = confirmations
        self._web: Web | None = None

    # ---- parts ---------------------------------------------------------------------------

    def _cfg(self, key: str) -> Any:
        return self._config()[key]

    def allowed_hosts(self) -> list[str]:
        from tsukud.net.http import endpoint_hosts

        return endpoint_hosts(self._config(), [*ECOSYSTEM_KEYS.values(), *SEARCH_KEYS.values()])

    def web(self) -> Web:
        if self._web is None:
            from tsukud.discover.web import Web
            from tsukud.net.http import Http
            from tsukud.net.proxy import proxies

            self._web = Web(
                Http(
                    allowed_hosts=self.allowed_hosts,
                    clock=self.clock,
                    proxies=lambda: proxies(self._config()),
                )
            )
        return self._web

    async def aclose(self) -> None:
        if self._web is not None:
            await self._web.aclose()
            await self._web.http.aclose()
            self._web = None

    async def _get(self, url: str) -> tuple[int, bytes]:
        resp = await self.web().get(url)
        return resp.status, resp.body

    def discovery_registry(self) -> DiscoveryRegistry:
        from tsukud.discover.registry_lookup import DiscoveryRegistry
        from tsukud.install.registry import DEFAULT_REGISTRY_URL

        return DiscoveryRegistry(
            self.home / "registry" / "discovery",
            self._get,
            lambda: str(self._cfg("registry.url") or DEFAULT_REGISTRY_URL),
            clock=self.clock,
        )

    async def _recipe(self, name: str) -> str | None:
        from tsukud.errors import TsukuError
        from tsukud.install.registry import ManifestInvalid, RecipeNotFound

        try:
            loaded = await self.recipes().load(name)
        except RecipeNotFound:
            return None
        except ManifestInvalid:
            raise  # a registry answering garbage is its fault, never a reason to search
        except TsukuError as e:
            # Unreachable and nothing cached: not a hit, and discovery says so.
            from tsukud.discover.chain import RecipeRegistryUnreachable

            raise RecipeRegistryUnreachable(e.message, e) from None
        return f"{loaded.source} recipe {loaded.path}"

    def known_names(self) -> Iterable[str]:
        """Names a typosquat is measured against: the registry's, local recipes, installed
        tools and cached discovery entries (no network)."""
        names: set[str] = set(self._installed())
        cached = self.recipes().cached_manifest()
        if cached is not None:
            names |= cached[0].names()
        local = self.home / "recipes"
        if local.is_dir():
            names |= {p.stem for p in local.glob("*.toml")}
        names |= set(self.discovery_registry().cached_names())
        return names

    async def _probe(self, name: str) -> ProbeReport:
        from tsukud.discover.ecosystem import probe_all

        urls = {k: str(self._cfg(key)) for k, key in ECOSYSTEM_KEYS.items()}
        return await probe_all(
            self._get, name, urls=urls, within_s=float(self._cfg("discover.ecosystem_timeout_s"))
        )

    async def _probe_package(self, builder: str, package: str) -> ProbeReport:
        """One registry asked for a package a model named (verification)."""
        from tsukud.discover.ecosystem import probe_all

        urls = {k: str(self._cfg(key)) for k, key in ECOSYSTEM_KEYS.items()}
        return await probe_all(
            self._get,
            package,
            urls=urls,
            within_s=float(self._cfg("discover.ecosystem_timeout_s")),
            builders=(builder,),
        )

    async def _github_meta(self, repo: str) -> RepoMeta:
        from tsukud.discover.verify import fetch_meta

        return await fetch_meta(self._github(), repo)

    async def _release_check(self, repo: str) -> ReleaseCheck:
        from tsukud.discover.releases import check_release
        from tsukud.recipe.platform import host_platform

        return await check_release(self._github(), repo, host_platform())

    async def homepage(self, repo: str) -> str | None:
        """The repository's homepage as GitHub names it (an install page for a
        repository without release builds); None when there is none."""
        meta = await self._github_meta(repo)
        return meta.homepage if meta.homepage and meta.homepage.startswith("http") else None

    def providers(
        self, requested: str | None, *, only: bool | None = None
    ) -> Sequence[tuple[str, str]]:
        llm = self._llm()
        return [(n, llm.info(n).model) for n in llm.usable(requested, only=only)]

    def searcher(self, explicit: str | None) -> Searcher:
        from tsukud.discover.search import Brave, DuckDuckGo, Tavily, choose_provider

        c = self._config()
        tavily, brave = str(c["secrets.tavily_api_key"]), str(c["secrets.brave_api_key"])
        name = choose_provider(
            explicit or str(c["discover.search_provider"] or "") or None,
            tavily_key=bool(tavily),
            brave_key=bool(brave),
        )
        url = str(c[SEARCH_KEYS[name]])
        backoff = float(c["discover.search_backoff_s"])
        if name == "tavily":
            return Tavily(self.web(), url, tavily, backoff_base=backoff)
        if name == "brave":
            return Brave(self.web(), url, brave, backoff_base=backoff)
        return DuckDuckGo(self.web(), url, backoff_base=backoff)

    def search_fee(self, name: str) -> Decimal | None:
        key = {"tavily": "discover.tavily_search_usd", "brave": "discover.brave_search_usd"}
        if name not in key:
            return None
        return Decimal(str(self._cfg(key[name])))

    def worst_case(self, providers: str | None, *, only: bool | None) -> Decimal | None:
        """The most one discovery's web-search stage may spend (its reservation: the
        chain's rule over the providers it would use); None when a price is unknown."""
        from tsukud.discover.chain import llm_allowance

        pairs = self.providers(providers, only=only)
        allowance = llm_allowance(
            pairs,
            searcher=self.searcher(None),
            search_fee=self.search_fee,
            max_searches=int(self._cfg("discover.max_searches")),
        )
        return self._llm().estimate([n for n, _m in pairs], **allowance)

    # ---- one discovery --------------------------------------------------------------------

    async def search(self, name: str) -> SearchAnswer:
        """``tsukuctl search NAME``: what is known of a name without spending money or
        asking anyone: its recipe, the discovery registry's entry, the packages of that
        exact name in each ecosystem (with the evidence a person weighs), a known tool it
        is a near miss of, and in words what ``tsukuctl install NAME`` would then do. No
        LLM, no web search, nothing written but the registries' caches."""
        import msgspec

        from tsukud.discover.chain import RecipeRegistryUnreachable
        from tsukud.discover.normalize import normalize_name, typosquat
        from tsukud.errors import TsukuError
        from tsukud.net.http import HttpUnreachable, all_out_of_reach

        tool = normalize_name(name)
        errors: dict[str, str] = {}
        registry_out: TsukuError | None = None  # the recipe registry out of reach
        try:
            recipe = await self._recipe(tool)
        except RecipeRegistryUnreachable as e:
            recipe, errors["recipes"] = None, str(e)
            if e.cause is not None and e.cause.code == HttpUnreachable.code:
                registry_out = e.cause
        looked = await self.discovery_registry().lookup(tool)
        if looked.error:
            errors["discovery registry"] = looked.error
        report = await self._probe(tool)
        errors.update(report.errors)
        if registry_out is not None and looked.entry is None and report.none_reached():
            # Nothing answered (the discovery registry is the recipe registry's host): the
            # network is why nothing is known of the name, and search says so as a failure.
            offline = [registry_out, *report.out_of_reach.values()]
            raise all_out_of_reach(offline, f"nothing could be asked about {tool}")
        prefixes = builder_sources()
        packages = [
            PackageMatch(
                **msgspec.structs.asdict(p),
                from_=f"{prefixes[p.builder]}:{p.source}" if p.builder in prefixes else None,
                passes_filter=p in report.accepted,
            )
            for p in report.matches
        ]
        squat = None if recipe else typosquat(tool, self.known_names())
        entry = looked.entry
        if recipe is not None:
            would = f"install {tool} from its {recipe.split(' recipe ')[0]} recipe"
        elif entry is not None:
            would = (
                f"write a recipe from {entry.builder}:{entry.source} (the discovery "
                "registry names it), validate it and install it"
            )
        elif packages:
            would = (
                "show these packages with their evidence and install the one you pick "
                f"(`--from` names one: tsukuctl install {tool} --from "
                f"{packages[0].from_ or packages[0].source})"
            )
        else:
            would = "search the web with an LLM (it states the cost and asks first)"
        return SearchAnswer(
            tool=tool,
            recipe=recipe,
            registry_entry=entry,
            packages=packages,
            did_you_mean=squat.similar if squat is not None else None,
            errors=errors,
            install_would=would,
        )

    async def discover(
        self,
        tool: str,
        *,
        progress: Progress,
        yes: bool = False,
        can_ask: bool = False,
        confirm: bool = True,
        check_recipes: bool = True,
        search_provider: str | None = None,
        providers: str | None = None,
        only_provider: bool | None = None,
        llm: bool = True,
        session: str | None = None,
        collect_tool_stats: bool = False,
        person: tuple[Ask, Choose] | None = None,
    ) -> Discovery:
        """One discovery. ``person``: who answers its questions instead of the client
        (``eval discover``'s stand-in, which knows the right source)."""
        c = self._config()
        session = session or "discover-" + secrets.token_hex(6)
        store = self.store
        if search_provider:  # refuse a bad --search-provider before anything is spent
            from tsukud.discover.search import choose_provider

            choose_provider(
                search_provider,
                tavily_key=bool(c["secrets.tavily_api_key"]),
                brave_key=bool(c["secrets.brave_api_key"]),
            )

        async def emit(type_: str, payload: dict[str, Any]) -> None:
            ev = store.append_nowait(type_, payload, session)
            # Money (a paid search, and its write-ahead before the query is sent) is on
            # disk before the run goes on, like llm.call_started and llm.turn.
            durable = "cost_usd" in payload or "worst_case_usd" in payload
            if type_ in ("discovery.completed", "discovery.failed") or durable:
                await store.wait_durable(ev.id)

        async def ask(question: Any) -> None:
            await self.confirmations.ask(
                progress, can_ask=can_ask, session=session, question=question
            )

        async def choose(question: Any, options: list[dict[str, Any]]) -> int | None:
            return await self.confirmations.choose(
                progress, can_ask=can_ask, session=session, question=question, options=options
            )

        deps = Deps(
            probe=self._probe,
            probe_package=self._probe_package,
            from_prefixes=builder_sources(),
            github_meta=self._github_meta,
            release_check=self._release_check,
            registry=self.discovery_registry(),
            recipe_lookup=self._recipe,
            known_names=self.known_names,
            # The chain passes the whole order it chose (restarting on each provider).
            open_llm=functools.partial(self._llm().run, only_provider=True),
            llm_providers=functools.partial(self.providers, only=only_provider),
            searcher=self.searcher,
            search_fee=self.search_fee,
            ask=person[0] if person is not None else ask,
            choose=person[1] if person is not None else choose,
            emit=emit,
            progress=progress,
            timeout_s=float(c["discover.timeout_s"]),
            stage_timeouts={
                "registry": float(c["discover.registry_timeout_s"]),
                "llm": float(c["discover.llm_timeout_s"]),
            },
            max_searches=int(c["discover.max_searches"]),
            clock=self.clock,
        )
        req = Request(
            tool=tool,
            session=session,
            yes=yes,
            can_ask=can_ask,
            confirm=confirm,
            check_recipes=check_recipes,
            search_provider=search_provider,
            providers=providers,
            llm=llm,
            collect_tool_stats=collect_tool_stats,
        )
        found = await discover(req, deps)
        if found.builder == "instructions":
            await self._describe_page(found, read=not confirm)
        return found

    async def _describe_page(self, found: Discovery, *, read: bool) -> None:
        """An ``instructions`` result says which platform it is for and, when only
        reported (``tsukuctl discover``), what the page says as a person sees it (as a
        browser engine lays it out, or the stripper's guess with a warning); an
        install reads the page itself, after its own checks."""
        from tsukud.discover.render_page import read_visible_text
        from tsukud.discover.sanitize_html import clip
        from tsukud.errors import TsukuError
        from tsukud.recipe import host_platform

        found.metadata["platform"] = host_platform().key
        if not read:
            return
        try:
            resp = await self.web().get(found.source, cache=False)
        except TsukuError as exc:
            found.metadata["page_error"] = exc.message
            return
        if resp.status != 200:
            found.metadata["page_error"] = f"HTTP {resp.status}"
            return
        c = self._config()
        web = self.web()

        async def stylesheet(url: str) -> str | None:
            try:
                sheet = await web.get(url, cache=False)
            except TsukuError:
                return None
            return sheet.text() if sheet.status == 200 else None

        page = await read_visible_text(
            resp.text(),
            chromium=str(c["render.chromium"]),
            time_limit=float(c["render.timeout_s"]),
            page_url=resp.url,
            fetch=stylesheet,
        )
        found.metadata["page_text"] = clip(page.text, PAGE_EXCERPT)
        found.metadata["page_engine"] = page.engine
        if page.warning:
            found.metadata["page_warning"] = page.warning


def builder_sources() -> Mapping[str, str]:
    """Discovery's builders that have a recipe builder, with their ``--from`` prefix
    (install's table: the hints name what ``--from`` accepts)."""
    from tsukud.discover.ecosystem import BUILDER_SOURCES

    return BUILDER_SOURCES
