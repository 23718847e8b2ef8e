"""Hostile frames over the real Unix socket to a real ``tsukud``: each gets exactly one
final answer that is not ``internal`` (with the code the protocol fixes for it), or the
hang-up the protocol promises, and the daemon serves on with its ledger intact.

The slow set sends 100,000 of them (tests/integration/hostile_socket.py pipelines them
over a few connections; tests/hostile_random.py makes them from a seed, printed on a
failure and replayed with ``TSUKU_HOSTILE_SEED``). The fast set sends each class on its
own, so a failure names the class; hypothesis, which shrinks a failure, keeps its own
smaller runs (tests/integration/test_rpc_fuzz.py, tests/unit/rpc/test_hostile_frames.py).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from tests import hostile_rpc as h
from tests.conftest import OUTSIDE_ENDPOINTS, RETIRING, Tsuku, base_env, short_home
from tests.hostile_random import Frames
from tests.integration import hostile_socket as hs
from tsukud.paths import log_path
from tsukud.rpc.registry import load_methods
from tsukud.testing.http import FakeHTTPServer, Reply

METHODS = load_methods()
# Only refused: daemon.stop and config.set change the daemon under test for every later
# frame.
REFUSED = h.ONLY_REFUSED | {"config.set"}
# Each call costs the daemon milliseconds (a container runtime looked for, the hooks'
# index rebuilt): in the slow set's bulk a tenth as often as the others; the fast set's
# test of requests sends them as often as the rest.
RARE = frozenset({"sandbox.check", "sandbox.status", "sandbox.prepare", "hooks.reindex"})

# The slow set's bar (TSUKU_HOSTILE_CASES sets fewer for a quick run), in SHARDS tests
# with a daemon each, so parallel workers share them; each shard checks it sent its part.
CASES = int(os.environ.get("TSUKU_HOSTILE_CASES", "100000"))
SHARDS = 4
SHARD_CASES = -(-CASES // SHARDS)
CONNECTIONS = 8  # at once, each with a window of frames in flight
# Signs in the daemon's log of a request or connection that failed inside it, which no
# answer may show (a client that walked away sees none).
FAILURES = ("Traceback", "rpc.internal_error", "rpc.connection_error")


@contextmanager
def hostile_daemon() -> Iterator[Tsuku]:
    """A daemon whose outside world answers every request at once with a 404 (what the
    registries and GitHub say of the names hostile frames ask for): a closed port is
    tried again with seconds of backoff, which would change no answer, only the time."""
    with FakeHTTPServer(
        fallback=lambda _r: Reply(status=404, json={"message": "Not Found"})
    ) as world:
        home = short_home()
        env = {**base_env(home), **{name: world.url for name in OUTSIDE_ENDPOINTS}}
        # No container runtime answers: sandbox methods are refused at once, not run.
        env["DOCKER_HOST"] = "unix:///nonexistent/docker.sock"
        t = Tsuku(home, env)
        try:
            t.start()
            yield t
        finally:
            RETIRING.retire(t)  # stopped and removed in the background


def still_sound(t: Tsuku, seed: int) -> None:
    """The daemon that took it all: the same process, answering status, its ledger
    verified, and no failure inside it in its log."""
    first = t.procs[0]
    assert first.poll() is None, f"tsukud died (seed {seed})"
    assert t.call("status")["pid"] == first.pid
    assert t.call("events.verify")["ok"] is True
    log = Path(log_path(t.env))
    text = "".join(p.read_text() for p in log.parent.glob(log.name + "*"))  # rotated too
    for sign in FAILURES:
        assert sign not in text, (f"seed {seed}", text[text.find(sign) - 2000 :][:4000])


@pytest.fixture(scope="module")
def live() -> Iterator[Tsuku]:
    with hostile_daemon() as t:
        yield t


def run(t: Tsuku, frames: int, **kw: Any) -> hs.Tally:
    seed = hs.seed()
    print(f"hostile frames from seed {seed} (TSUKU_HOSTILE_SEED={seed} replays them)")
    tally = hs.send(t.socket, seed, METHODS, REFUSED, frames, **kw)
    assert tally.frames >= frames, (tally, seed)
    still_sound(t, seed)
    return tally


@pytest.mark.parametrize("kind", Frames.CLASSES)
def test_each_class_of_hostile_frame_over_the_socket(live: Tsuku, kind: str) -> None:
    tally = run(live, 64 if kind == "huge" else 400, connections=2, classes=(kind,))
    if kind in ("repeated_key", "json_value"):
        assert set(tally.codes) == {"bad_request"}, tally
    if kind == "unknown_method":
        assert tally.codes["unknown_method"] > tally.codes["bad_request"], tally


@pytest.mark.parametrize("ending", [e for e in hs.ENDINGS if e != "quiet"])
def test_each_way_a_connection_ends(live: Tsuku, ending: str) -> None:
    tally = run(live, 200, connections=2, endings=(ending,), windows=2)
    assert tally.endings[ending] >= 2, tally


# Among the slowest tests (issue 26): the slow set's 100,000 frames, in four shards.
@pytest.mark.slow
@pytest.mark.parametrize("shard", range(SHARDS))
def test_100k_hostile_frames_over_the_socket(shard: int) -> None:
    """One shard of the slow set: SHARD_CASES frames to a daemon of its own."""
    with hostile_daemon() as t:
        print(run(t, SHARD_CASES, rare=RARE, connections=CONNECTIONS))
