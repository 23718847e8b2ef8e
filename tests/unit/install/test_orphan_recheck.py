"""The re-check under the lock before a hidden toolchain goes with its last tool
(``Installer._discard_orphan``), interleaved deterministically with an install of the
toolchain by name.

``remove greet`` decides, under greet's lock, that the hidden nodejs is orphaned, then
takes nodejs's own lock to remove it. An install of nodejs by name holds that lock for
its whole run and, at its end, records nodejs as the user's (no ``hidden`` mark). The
test plays that install with the real lock and the real ledger: it holds nodejs's lock
before the remove starts, lets the remove run until it waits on that lock (trio's
lock statistics say so; no sleeps), records what the by-name install records, and lets
go. nodejs must stay: the remove judges it again under the lock."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import trio
import trio.testing

from tsukud.clock import TrioClock
from tsukud.events.projections import InstalledTools
from tsukud.events.store import EventStore
from tsukud.install.installer import Installer


def completed(home: Path, tool: str) -> dict[str, Any]:
    """An ``install.completed`` payload for ``tool`` 1.0.0, its directory made."""
    install_dir = home / "tools" / f"{tool}-1.0.0"
    (install_dir / "bin").mkdir(parents=True)
    return {"tool": tool, "version": "1.0.0", "binaries": {}, "install_dir": str(install_dir)}


async def test_a_toolchain_asked_for_by_name_while_its_last_tool_is_removed_stays(
    tmp_path: Path,
) -> None:
    store = EventStore(tmp_path / "events.db", clock=TrioClock())
    store.open()
    tools = InstalledTools()  # the projection the daemon folds the ledger into
    store.subscribe(tools.apply, tools.types)
    home = tmp_path / "home"
    (home / "bin").mkdir(parents=True)
    # A remove reads no recipe, version or download: no registry, resolver or HTTP.
    unread: dict[str, Any] = dict.fromkeys(("registry", "resolver", "http"))
    installer = Installer(
        home=home, store=store, installed=lambda: tools.tools, github_url=str, env={}, **unread
    )
    node = {**completed(home, "nodejs"), "hidden": True}
    greet = {**completed(home, "greet"), "runtime_dependencies": ["nodejs"]}
    greet["toolchains"] = ["nodejs"]
    try:
        async with trio.open_nursery() as nursery:
            await nursery.start(store.run)
            store.append_nowait("install.completed", node, "install-node")
            store.append_nowait("install.completed", greet, "install-greet")
            results: list[Any] = []

            async def remove_greet() -> None:
                results.append(await installer.remove("greet"))

            by_name = installer.lock("nodejs")
            async with by_name:  # the install of nodejs by name is running
                nursery.start_soon(remove_greet)
                while by_name.statistics().tasks_waiting == 0:
                    await trio.testing.wait_all_tasks_blocked()
                # greet went, and the remove found nodejs orphaned: it waits for the lock
                assert "greet" not in installer.installed()
                assert installer.installed()["nodejs"]["hidden"] is True
                # the by-name install ends: nodejs is the user's from now on
                mine = {k: v for k, v in node.items() if k != "hidden"}
                await store.wait_durable(
                    store.append_nowait("install.completed", mine, "install-mine").id
                )
            while not results:
                await trio.testing.wait_all_tasks_blocked()
            (removed,) = results
            assert removed.tool == "greet" and removed.also_removed == []
            assert "hidden" not in installer.installed()["nodejs"]
            nursery.cancel_scope.cancel()
    finally:
        store.close()
        store.close_connection()
    assert await trio.Path(node["install_dir"]).is_dir()  # its files are untouched too
