"""The daemon keeps the binary index current: on request, and after installs/removals."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import trio

from tests.conftest import Tsuku
from tests.integration.hooks.conftest import RIPGREP, STERN
from tests.waiting import wait_until
from tsukud import config as configmod
from tsukud.daemon import Daemon
from tsukud.hooks.index import index_path, lookup
from tsukud.hooks.service import HookIndex


async def wait_for(check: Callable[[], bool]) -> None:
    """Poll: the index is a file the daemon writes from a worker thread."""
    for _ in range(1000):
        if check():
            return
        await trio.sleep(0.005)
    raise AssertionError("the index did not get there within 5 s")


def index_text(home: Path) -> str:
    try:
        return Path(index_path(str(home))).read_text()
    except FileNotFoundError:
        return ""


async def test_install_events_rebuild_the_index(tmp_path: Path) -> None:
    env = {"TSUKU_HOME": str(tmp_path), "HOME": str(tmp_path)}
    (tmp_path / "registry" / "s").mkdir(parents=True)
    (tmp_path / "registry" / "s" / "stern.toml").write_text(STERN)
    d = Daemon(config=configmod.resolve(env=env), env=env)
    d.open()
    try:
        async with trio.open_nursery() as nursery:
            await nursery.start(d.store.run)
            d.nursery = nursery
            svc = d.services.hook_index
            svc.request_rebuild()  # what start-up and a registry refresh call
            await wait_for(lambda: lookup(index_text(tmp_path), "stern") is not None)
            assert lookup(index_text(tmp_path), "stern") == ("stern", "registry")

            d.store.append_nowait(
                "install.completed",
                {"tool": "stern", "version": "1.30.0", "binaries": {"stern": {"path": "stern"}}},
            )
            await wait_for(lambda: lookup(index_text(tmp_path), "stern") == ("stern", "installed"))

            d.store.append_nowait("install.removed", {"tool": "stern", "version": "1.30.0"})
            await wait_for(lambda: lookup(index_text(tmp_path), "stern") == ("stern", "registry"))

            # A burst of requests is coalesced, not queued one rebuild each.
            for _ in range(50):
                svc.request_rebuild()
            await wait_for(lambda: not svc._scheduled)
            d.store.close()
    finally:
        d.store.close_connection()


async def test_request_before_serving_is_not_lost(tmp_path: Path) -> None:
    svc = HookIndex(tmp_path, dict, spawn=None)
    svc.request_rebuild()  # nowhere to run it yet: remembered, not dropped or raised
    assert svc._dirty and not svc._scheduled
    stats = await svc.rebuild()
    assert stats.path == index_path(str(tmp_path))
    assert stats.entries == 0


def test_reindex_over_rpc_reports_what_it_wrote(daemon: Tsuku) -> None:
    (daemon.home / "recipes").mkdir()
    (daemon.home / "recipes" / "ripgrep.toml").write_text(RIPGREP)
    (daemon.home / "recipes" / "broken.toml").write_text("[metadata\n")
    res = daemon.call("hooks.reindex")
    assert res["path"] == str(daemon.home / "share" / "binary-index.tsv")
    assert res["entries"] == 1 and res["commands"] == 1 and res["tools"] == 1
    assert res["by_source"] == {"installed": 0, "local": 1, "registry": 0}
    assert list(res["recipe_errors"]) == [str(daemon.home / "recipes" / "broken.toml")]
    assert lookup(index_text(daemon.home), "rg") == ("ripgrep", "local")

    st = json.loads(daemon.ctl("hook", "status", "--json", check=True).stdout)
    assert st["index"]["entries"] == 1 and st["mode"] == "suggest"


def test_a_recipe_put_in_the_recipes_directory_reaches_the_index_at_the_next_command(
    daemon: Tsuku,
) -> None:
    """Issue 29, point 11: with the hook installed, a recipe dropped into the local
    recipes directory by hand is indexed before the next request is served, not only
    at the next `hook install`."""
    daemon.call("hooks.reindex")  # what `hook install` does
    (daemon.home / "share" / "hooks").mkdir(parents=True, exist_ok=True)
    assert lookup(index_text(daemon.home), "rg") is None
    (daemon.home / "recipes").mkdir(exist_ok=True)
    (daemon.home / "recipes" / "ripgrep.toml").write_text(RIPGREP)
    daemon.ctl("status", check=True)  # any command
    wait_until(lambda: lookup(index_text(daemon.home), "rg") == ("ripgrep", "local"), "rg indexed")
