"""The table of RPC methods, filled by the modules that define them.

Each feature area keeps its handlers in its own module (``methods.py`` for the core,
later ``install_methods.py`` and so on) and registers them with ``@method``; the daemon
loads ``METHOD_MODULES`` once at start-up. Handlers import heavy libraries inside their
bodies, so loading the table stays cheap.

A handler declares what it receives (``takes``): the feature services
(``tsukud.services.Services``, the default: each service is still built on its first
use) or, for the methods about the daemon itself, its ``DaemonControl``
(``rpc/control.py``). The server hands each method that once, when it is built, so a
call costs what it did; no handler sees the ``Daemon``.
"""

from __future__ import annotations

import importlib
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Literal, TypeVar, overload

import msgspec

from tsukud.rpc.server import Call, Method

if TYPE_CHECKING:
    from tsukud.rpc.control import DaemonControl
    from tsukud.services import Services

METHODS: dict[str, Method] = {}

METHOD_MODULES = (
    "tsukud.rpc.methods",
    "tsukud.rpc.sandbox_methods",
    "tsukud.rpc.llm_methods",
    "tsukud.rpc.install_methods",
    "tsukud.rpc.create_methods",
    "tsukud.rpc.hook_methods",
    "tsukud.rpc.discover_methods",
    "tsukud.rpc.batch_methods",
    "tsukud.rpc.eval_methods",
)

# What a handler may receive, named as the daemon (the server's context) holds it.
Takes = Literal["services", "control"]

ServicesHandler = TypeVar(
    "ServicesHandler", bound="Callable[[Services, Any, Call], Awaitable[Any]]"
)
ControlHandler = TypeVar(
    "ControlHandler", bound="Callable[[DaemonControl, Any, Call], Awaitable[Any]]"
)


class NoParams(msgspec.Struct, forbid_unknown_fields=True):
    pass


@overload
def method(
    name: str,
    params: type[msgspec.Struct],
    *,
    inline: bool = False,
    takes: Literal["services"] = "services",
) -> Callable[[ServicesHandler], ServicesHandler]: ...


@overload
def method(
    name: str, params: type[msgspec.Struct], *, inline: bool = False, takes: Literal["control"]
) -> Callable[[ControlHandler], ControlHandler]: ...


def method(
    name: str, params: type[msgspec.Struct], *, inline: bool = False, takes: Takes = "services"
) -> Callable[[Any], Any]:
    """Register a handler ``async (services or control, params, call) -> result`` under
    ``name``; mypy holds the handler's first parameter to what ``takes`` names."""

    def register(fn: Any) -> Any:
        if name in METHODS:
            raise RuntimeError(f"RPC method {name!r} registered twice")
        METHODS[name] = Method(name, params, fn, inline, (fn.__doc__ or "").strip(), takes)
        return fn

    return register


def load_methods() -> dict[str, Method]:
    for module in METHOD_MODULES:
        importlib.import_module(module)
    return METHODS


class MethodTable(dict[str, Method]):
    """The methods a daemon serves: the core module's from its start, every other
    module's from the first request naming a method the table lacks.

    The feature modules import their flows (create, discovery, the install page
    reader, batch, eval): about half of the daemon's start-up beyond trio and msgspec
    (issue 32). The first ``ping`` or ``status`` needs none of them; the first
    ``install`` loads them all, once, before it is looked up, so no name is ever
    answered ``unknown_method`` for being early.
    """

    complete = False  # every module loaded

    def get(self, name: str, default: Method | None = None) -> Method | None:  # type: ignore[override]
        if not self.complete and name not in self:
            self.update(load_methods())
            self.complete = True
        return super().get(name, default)


def served_methods() -> MethodTable:
    """The table a daemon starts serving with: the core methods (ping, status, the
    ledger's reads and the daemon's own), the rest loaded by the table on demand."""
    importlib.import_module(METHOD_MODULES[0])
    return MethodTable(METHODS)
