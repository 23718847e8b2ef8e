"""An instructions build the daemon died in: the next start settles its reservation and
gives the run its terminal ``generation.failed`` (abandoned, with the page), as it does
for a create run."""

from __future__ import annotations

import json
import time

import pytest

from tests.conftest import Tsuku

pytestmark = pytest.mark.ctl_process  # a crash mid-run: real processes


def test_an_abandoned_instructions_build_gets_its_generation_failed(tsuku: Tsuku) -> None:
    import trio

    from tsukud import config as configmod
    from tsukud.daemon import Daemon

    session = "instructions-0123456789ab"
    page = "https://foo.example.test/install"

    async def die_mid_build() -> None:
        d = Daemon(config=configmod.resolve(env=tsuku.env), env=tsuku.env)
        d.open()
        async with trio.open_nursery() as nursery:
            await nursery.start(d.store.run)
            started = {"tool": "foo", "url": page, "came_from": "discovery"}
            d.store.append_nowait("instructions.started", started, session)
            await d.budget.reserve(0.05, session=session, purpose="instructions", confirmed=True)
            d.store.close()  # no settlement: the process "dies" here
        d.store.close_connection()

    trio.run(die_mid_build)
    tsuku.start()
    deadline = time.monotonic() + 10
    ended: list[dict] = []  # type: ignore[type-arg]
    while not ended and time.monotonic() < deadline:
        out = tsuku.ctl("events", "--json", "--limit", "0", "--type", "generation.failed").stdout
        ended = [json.loads(line) for line in out.splitlines()]
        time.sleep(0.05)
    (failed,) = ended
    assert failed["session"] == session
    payload = failed["payload"]
    assert (payload["tool"], payload["repo"], payload["error_code"]) == ("foo", page, "abandoned")
