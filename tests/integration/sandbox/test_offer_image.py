"""The first create on a machine without the validation image offers to build it: the
question goes to a person at a terminal through the daemon's confirmations; without a
terminal nothing is asked (validation then meets the missing image and says what to do)."""

from __future__ import annotations

import secrets
from pathlib import Path
from typing import Any

import pytest
import trio

from tsukud.clock import TrioClock
from tsukud.create.service import offer_image
from tsukud.events.store import EventStore
from tsukud.policy.confirm import Confirmations
from tsukud.sandbox.service import Sandbox

pytestmark = pytest.mark.docker


async def test_a_missing_image_is_offered_and_a_no_builds_nothing(
    tmp_path: Path, docker_endpoint: str
) -> None:
    missing = f"tsuku/validate-debian:absent-{secrets.token_hex(4)}"
    store = EventStore(tmp_path / "t.db", clock=TrioClock())
    store.open()
    confirmations = Confirmations(store)
    frames: list[dict[str, Any]] = []

    async def progress(frame: dict[str, Any]) -> None:
        frames.append(frame)
        question = frame.get("confirm")
        if question is not None:
            assert confirmations.answer(question["token"], False)

    try:
        async with trio.open_nursery() as nursery:
            await nursery.start(store.run)
            sandbox = Sandbox(
                home=tmp_path, image=lambda: missing, store=store, start=nursery.start
            )
            await offer_image(sandbox, confirmations, progress, can_ask=False, session="s1")
            assert frames == []  # no terminal: nobody to ask
            await offer_image(sandbox, confirmations, progress, can_ask=True, session="s2")
            (frame,) = frames
            assert frame["confirm"]["kind"] == "sandbox_image"
            assert frame["confirm"]["option"] == {"image": missing}
            assert f"the validation image {missing} is not built yet" in frame["confirm"]["message"]
            rt = await sandbox.runtime()
            assert not await rt.image_exists(missing)  # declined: nothing was built
            declined = store.read_sync(
                lambda c: c.execute(
                    "SELECT count(*) FROM events WHERE type = 'confirmation.declined'"
                ).fetchone()[0]
            )
            assert declined == 1
            sandbox.forget()
            nursery.cancel_scope.cancel()
    finally:
        store.close()
        store.close_connection()
