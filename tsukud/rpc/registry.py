"""The table of RPC methods, filled by the modules that define them.

Each feature area keeps its handlers in its own module (``methods.py`` for the core,
later ``install_methods.py`` and so on) and registers them with ``@method``; the daemon
loads ``METHOD_MODULES`` once at start-up. Handlers import heavy libraries inside their
bodies, so loading the table stays cheap.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any, TypeVar

import msgspec

from tsukud.rpc.server import Method

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

F = TypeVar("F", bound=Callable[..., Any])


class NoParams(msgspec.Struct, forbid_unknown_fields=True):
    pass


def method(name: str, params: type[msgspec.Struct], *, inline: bool = False) -> Callable[[F], F]:
    """Register a handler ``async (daemon, params, call) -> result`` under ``name``."""

    def register(fn: F) -> F:
        if name in METHODS:
            raise RuntimeError(f"RPC method {name!r} registered twice")
        METHODS[name] = Method(name, params, fn, inline, (fn.__doc__ or "").strip())
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
