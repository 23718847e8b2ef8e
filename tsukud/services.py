"""The composition root: the one place that builds the daemon's feature services.

Each service gets exactly what it uses (the clock, the ledger, a getter for the live
configuration, the shared HTTP and GitHub clients, the policy objects, the sandbox)
through its constructor; none of them sees the daemon. Each is built on first use and
then kept for the daemon's life: start-up stays at the import floor, and the heavy
imports (the SDKs, aiodocker, httpx2) wait until a request needs them.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from contextlib import AbstractContextManager, nullcontext
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

import trio

from tsukud import log
from tsukud.clock import Clock
from tsukud.config import Config
from tsukud.events.store import EventStore
from tsukud.policy.breaker import CircuitBreakers
from tsukud.policy.budget import Budget
from tsukud.policy.confirm import Confirmations
from tsukud.policy.locks import ContainerLock
from tsukud.policy.ratelimit import GenerationLimit

if TYPE_CHECKING:
    from tsukud.batch.backend import BatchBackend
    from tsukud.batch.queue import Queue
    from tsukud.create.service import Creator
    from tsukud.discover.service import DiscoveryService
    from tsukud.flows.batch_run import BatchRunner
    from tsukud.flows.create_recipe import CreateRecipe
    from tsukud.flows.eval_discover import DiscoverEval
    from tsukud.flows.eval_run import EvalRunner
    from tsukud.flows.install_missing import InstallMissing
    from tsukud.flows.install_tool import InstallTool
    from tsukud.github.client import GitHub
    from tsukud.hooks.service import HookIndex
    from tsukud.install.build import BuildSandbox
    from tsukud.install.installer import Installer
    from tsukud.install.registry import Registry
    from tsukud.instructions.service import InstructionsBuilder
    from tsukud.llm.service import LLM
    from tsukud.net.http import Http
    from tsukud.sandbox.service import Sandbox
    from tsukud.validation.validator import Validator


class Services:
    def __init__(
        self,
        *,
        home: Path,
        env: Mapping[str, str],
        config: Callable[[], Config],
        clock: Clock,
        store: EventStore,
        installed: Callable[[], dict[str, dict[str, Any]]],
        budget: Budget,
        generations: GenerationLimit,
        breakers: CircuitBreakers,
        container_lock: ContainerLock,
        batch_queue: Queue,
        nursery: Callable[[], trio.Nursery | None],
        caller_path: Callable[[], str] | None = None,
        settings_for: Callable[[Mapping[str, str]], AbstractContextManager[None]] | None = None,
    ) -> None:
        self.home = home
        self.env = env
        self.config = config  # read at each use: `config set` applies at once
        self.clock = clock
        self.store = store
        self.installed = installed  # the ledger's installed-tools projection
        self.budget = budget
        self.generations = generations
        self.breakers = breakers
        self.container_lock = container_lock
        self.batch_queue = batch_queue  # the ledger's batch projection (batch/queue.py)
        self._nursery = nursery  # the daemon's services nursery, once it is serving
        # The PATH of the request's caller (what an install must not shadow).
        self.caller_path = caller_path or (lambda: str(self.env.get("PATH") or ""))
        # A request's own choice of settings for what it runs (``Daemon.settings_for``:
        # ``eval create --replay DIR``), seen by every service it calls.
        self.settings_for = settings_for or (lambda _variables: nullcontext())
        self.confirmations = Confirmations(store)

    def _services_nursery(self) -> trio.Nursery:
        nursery = self._nursery()
        if nursery is None:
            raise RuntimeError("the daemon is not running yet")
        return nursery

    def _spawn(self, fn: Callable[[], Awaitable[None]]) -> None:
        self._services_nursery().start_soon(fn)

    async def _start(self, fn: Callable[..., Awaitable[Any]]) -> Any:
        return await self._services_nursery().start(fn)

    def _setting(self, key: str) -> Callable[[], str]:
        return lambda: str(self.config()[key] or "")

    # ---- shared clients --------------------------------------------------------------

    @cached_property
    def http(self) -> Http:
        """The daemon's one HTTP client: pooling, cache and rate-limit memory shared."""
        from tsukud.net.hosts import HostLimits
        from tsukud.net.http import Http, endpoint_hosts, github_credentials
        from tsukud.net.proxy import proxies

        def host_limits() -> HostLimits:
            cfg = self.config()
            return HostLimits(
                int(cfg["net.per_host_concurrency"]), int(cfg["net.per_host_interval_ms"]) / 1000
            )

        from tsukud.registries.ecosystems import DISCOVERY_URLS

        # create reads an ecosystem package's metadata through this client (<prefix>:x), and
        # cpan_install a CPAN mirror's files: the registry or mirror a person configured, a
        # private one included, must be reachable.
        registries = (*(u.key for u in DISCOVERY_URLS.values()), "cpan.mirror_url")
        return Http(
            allowed_hosts=lambda: endpoint_hosts(self.config(), registries),
            credentials=lambda: github_credentials(self.config()),
            clock=self.clock,
            proxies=lambda: proxies(self.config()),
            host_limits=host_limits,
        )

    @cached_property
    def github(self) -> GitHub:
        """The API URL and whether a token is set are read from the live config; the
        HTTP layer adds the token itself."""
        from tsukud.github.client import GitHub

        return GitHub(
            self.http,
            self._setting("github.api_url"),
            token_set=lambda: bool(self._setting("secrets.github_token")().strip()),
        )

    def registry(self) -> Registry:
        from tsukud.install.registry import Registry

        return Registry(
            self.home,
            self.http,
            base_url=self._setting("registry.url"),
            manifest_url=self._setting("registry.manifest_url"),
            clock=self.clock,
        )

    def _max_download_bytes(self) -> int:
        return int(self.config()["install.max_download_mb"]) * 1024 * 1024

    # ---- features ----------------------------------------------------------------------

    @cached_property
    def llm(self) -> LLM:
        from tsukud.llm.service import LLM

        return LLM(
            config=self.config,
            store=self.store,
            budget=self.budget,
            generations=self.generations,
            breakers=self.breakers,
            confirmations=self.confirmations,
            clock=self.clock,
        )

    @cached_property
    def sandbox(self) -> Sandbox:
        from tsukud.sandbox.service import Sandbox

        return Sandbox(
            home=self.home,
            image=self._setting("sandbox.image"),
            store=self.store,
            start=self._start,
            endpoint=self._setting("sandbox.docker_host"),
        )

    @cached_property
    def validator(self) -> Validator:
        from tsukud.validation.validator import Validator

        sandbox = self.sandbox
        return Validator(
            http=self.http,
            github_url=self._setting("github.url"),
            workdir=self.home / "validate",
            runtime=sandbox.runtime,
            image=lambda: sandbox.image,
            lock=lambda session: self.container_lock.hold(session=session),
            forget=sandbox.forget,
            # The same cap as installs of the recipe will have.
            max_download_bytes=self._max_download_bytes(),
        )

    def _ecosystem_urls(self) -> dict[str, str]:
        """Each ecosystem registry's base URL (discovery's settings), by version source,
        and the CPAN mirror cpan_install fetches from."""
        from tsukud.install.cpan import MIRROR_KEY
        from tsukud.install.ecosystem.actions import registry_urls

        urls = registry_urls(lambda key: self._setting(key)())
        return {**urls, MIRROR_KEY: str(self._setting("cpan.mirror_url")())}

    def _package_proxies(self) -> dict[str, str]:
        """The proxy variables every package manager gets for this request."""
        from tsukud.install.ecosystem.prefix import proxy_env

        return proxy_env(lambda key: str(self._setting(key)() or ""))

    def _build_sandbox(self) -> BuildSandbox:
        """Where builds from source run: the sandbox's runtime and the container lock
        validation uses, in the build image."""
        from tsukud.install.build import BuildSandbox

        sandbox = self.sandbox
        return BuildSandbox(
            runtime=sandbox.runtime,
            lock=lambda session: self.container_lock.hold(session=session),
            forget=sandbox.forget,
        )

    @cached_property
    def installer(self) -> Installer:
        from tsukud.install import layout
        from tsukud.install.checks import verify_env
        from tsukud.install.homebrew.client import HomebrewClient
        from tsukud.install.installer import Installer
        from tsukud.install.versions import VersionResolver

        homebrew = HomebrewClient(
            self.http,
            api_url=self._setting("homebrew.api_url"),
            registry_url=self._setting("homebrew.registry_url"),
        )
        installer = Installer(
            home=self.home,
            registry=self.registry(),
            resolver=VersionResolver(
                self.github,
                clock=self.clock,
                ecosystem_urls=self._ecosystem_urls,
                homebrew=homebrew,
            ),
            http=self.http,
            store=self.store,
            installed=self.installed,
            github_url=self._setting("github.url"),
            env=verify_env(self.env),
            max_download_bytes=self._max_download_bytes(),
            confirmations=self.confirmations,
            ecosystem_urls=self._ecosystem_urls,
            package_proxies=self._package_proxies,
            homebrew=homebrew,
            caller_path=self.caller_path,
            builds=self._build_sandbox,
        )
        # Built on first use, before any install of this daemon has started: whatever a
        # crashed daemon left half-done can be repaired now.
        report = layout.reconcile(self.home, self.installed())
        if report:
            log.get().info("install.recovered", removed=report.removed, restored=report.restored)
        return installer

    @cached_property
    def creator(self) -> Creator:
        from tsukud.create.service import Creator
        from tsukud.install.checks import verify_env

        return Creator(
            home=self.home,
            config=self.config,
            store=self.store,
            clock=self.clock,
            github=lambda: self.github,
            http=lambda: self.http,
            llm=lambda: self.llm,
            validator=lambda: self.validator,
            sandbox=lambda: self.sandbox,
            confirmations=self.confirmations,
            env=verify_env(self.env),
            recipes=self.registry,
        )

    @cached_property
    def instructions(self) -> InstructionsBuilder:
        from tsukud.instructions.service import InstructionsBuilder

        return InstructionsBuilder(
            config=self.config,
            store=self.store,
            clock=self.clock,
            github=lambda: self.github,
            llm=lambda: self.llm,
            validator=lambda: self.validator,
        )

    @cached_property
    def discovery(self) -> DiscoveryService:
        from tsukud.discover.service import DiscoveryService

        return DiscoveryService(
            home=self.home,
            config=self.config,
            clock=self.clock,
            store=self.store,
            installed=self.installed,
            recipes=self.registry,
            github=lambda: self.github,
            llm=lambda: self.llm,
            confirmations=self.confirmations,
        )

    @cached_property
    def hook_index(self) -> HookIndex:
        from tsukud.hooks.service import INDEX_EVENTS, HookIndex

        index = HookIndex(self.home, self.installed, self._spawn, clock=self.clock)
        self.store.subscribe(index.on_event, INDEX_EVENTS)
        return index

    @cached_property
    def batch(self) -> BatchBackend:
        """The queue in the ledger's database: the fold of batch events on SQLite, rows
        every daemon shares on PostgreSQL (``ledger.url``)."""
        from tsukud.batch.service import BatchService

        if self.store.backend == "postgresql":
            from tsukud.batch.pg_queue import PgBatchService
            from tsukud.events.pg_store import PgEventStore

            assert isinstance(self.store, PgEventStore)
            return PgBatchService(
                store=self.store, clock=self.clock, lease_seconds=self.batch_queue.lease_seconds
            )
        return BatchService(store=self.store, queue=self.batch_queue, clock=self.clock)

    # ---- flows -------------------------------------------------------------------------

    @cached_property
    def install_tool(self) -> InstallTool:
        from tsukud.flows.install_tool import InstallTool

        return InstallTool(installer=self.installer, missing=lambda: self.install_missing)

    @cached_property
    def install_missing(self) -> InstallMissing:
        from tsukud.flows.install_missing import InstallMissing

        return InstallMissing(
            discovery=self.discovery,
            creator=self.creator,
            installer=self.installer,
            confirmations=self.confirmations,
            instructions=self.instructions,
        )

    @cached_property
    def create_recipe(self) -> CreateRecipe:
        from tsukud.flows.create_recipe import CreateRecipe

        return CreateRecipe(
            creator=self.creator,
            homepage=self.discovery.homepage,
            instructions=self.instructions,
            confirmations=self.confirmations,
        )

    @cached_property
    def batch_run(self) -> BatchRunner:
        from tsukud.flows.batch_run import BatchRunner

        # The creator, not the create_recipe flow: a recipe read from an install page
        # needs a person to see the hosts it names, and a batch job has no one to show.
        return BatchRunner(batch=self.batch, create=self.creator.create, breakers=self.breakers)

    @cached_property
    def eval_run(self) -> EvalRunner:
        from tsukud.flows.eval_run import EvalRunner

        # The creator, as batch run: no one watches an item to approve a page's hosts.
        return EvalRunner(
            create=self.creator.create,
            store=self.store,
            llm=lambda: self.llm,
            confirmations=self.confirmations,
        )

    @cached_property
    def eval_discover(self) -> DiscoverEval:
        from tsukud.flows.eval_discover import DiscoverEval

        return DiscoverEval(
            discovery=lambda: self.discovery,
            llm=lambda: self.llm,
            store=self.store,
            confirmations=self.confirmations,
        )

    # ---- the daemon's start and stop --------------------------------------------------------

    async def after_start(self) -> None:
        """Background work once the daemon serves: a previous daemon's orphan validation
        containers go now, not at the first validation."""
        await self.sandbox.open_at_start()

    async def before_stop(self) -> None:
        """Requests are cancelled; the services nursery still runs. Builds nothing."""
        if "sandbox" in vars(self):
            await self.sandbox.close_at_stop()

    async def aclose(self) -> None:
        """Close the HTTP clients held by the services built so far (builds nothing)."""
        built = vars(self)
        for name in ("discovery", "llm"):
            if name in built:
                await built[name].aclose()
