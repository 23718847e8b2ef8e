"""RPC handlers receive the services they call, not the daemon (issue 27).

A methods module that imported ``tsukud.daemon`` could reach into the daemon's
lifecycle again; one that declared the wrong first argument would be handed the wrong
object. The server hands each method its argument once, when it is built: the
services are not built then (start-up stays at the import floor).
"""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import pytest

from tsukud.rpc.registry import load_methods
from tsukud.rpc.server import RpcServer

RPC = Path(__file__).resolve().parents[3] / "tsukud" / "rpc"
METHODS_MODULES = sorted(p for p in RPC.glob("*.py") if p.stem.endswith("methods"))
# The first parameter's annotation each ``takes`` stands for.
ANNOTATION = {"services": "Services", "control": "DaemonControl"}


def daemon_imports(path: Path) -> list[str]:
    """Every import of ``tsukud.daemon`` in ``path``: at module level, in a function or
    under ``TYPE_CHECKING`` alike (an annotation is a dependency too)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module is not None:
            names = [node.module, *(f"{node.module}.{a.name}" for a in node.names)]
        else:
            continue
        if any(n == "tsukud.daemon" or n.startswith("tsukud.daemon.") for n in names):
            found.append(f"{path.name}:{node.lineno}: tsukud.daemon")
    return found


def test_the_methods_modules_are_all_read() -> None:
    assert {p.stem for p in METHODS_MODULES} >= {"methods", "install_methods", "eval_methods"}


@pytest.mark.parametrize("path", METHODS_MODULES, ids=lambda p: p.stem)
def test_no_methods_module_imports_the_daemon(path: Path) -> None:
    assert daemon_imports(path) == []


def test_the_check_sees_an_import_under_type_checking(tmp_path: Path) -> None:
    module = tmp_path / "x_methods.py"
    module.write_text(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n"
        "    from tsukud.daemon import Daemon\n"
        "def f():\n"
        "    import tsukud.daemon\n"
        "    from tsukud import daemon\n"
    )
    assert daemon_imports(module) == [
        "x_methods.py:3: tsukud.daemon",
        "x_methods.py:5: tsukud.daemon",
        "x_methods.py:6: tsukud.daemon",
    ]


def test_each_handler_declares_what_it_takes() -> None:
    for name, m in load_methods().items():
        assert m.takes in ANNOTATION, name
        first = next(iter(inspect.signature(m.handler).parameters.values()))
        assert first.annotation == ANNOTATION[m.takes], (name, first.annotation)


def test_the_server_hands_each_method_its_services_once_and_builds_none(tmp_path: Path) -> None:
    from tsukud import config as configmod
    from tsukud.daemon import Daemon

    env = {"TSUKU_HOME": str(tmp_path), "HOME": str(tmp_path)}
    d = Daemon(config=configmod.resolve(env=env), env=env)  # not opened: no ledger read
    server = RpcServer(load_methods(), d)
    takes = {name: server.context_for(m) for name, m in server.methods.items()}
    assert takes["status"] is d and takes["config.set"] is d and takes["daemon.stop"] is d
    assert takes["install"] is d.services and takes["eval.create"] is d.services
    assert {id(c) for c in takes.values()} == {id(d), id(d.services)}
    # Nothing was built: the installer, the HTTP client, the LLM wait for a request.
    built = set(vars(d.services))
    assert not built & {"installer", "http", "llm", "sandbox", "creator", "install_tool"}
