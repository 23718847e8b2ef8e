"""create_replayed: ``tsukuctl create stern --llm`` with a recorded LLM session replayed
(no network, no key), against the deterministic create of the same release in the same
run; without and with container validation.

Recording: a daemon with ``TSUKU_LLM_RECORD_DIR`` and the fake Anthropic server (real
SDK) runs one create per repository copy (``bench/sternN``): one ``inspect_archive``
(the archive downloaded and listed), then ``extract_pattern``. Replay: a fresh daemon
with ``TSUKU_LLM_REPLAY_DIR`` and no provider configured serves those turns from disk,
so the figure is the pipeline's own cost with an LLM in the loop: admission, budget
reservation and settlement, two durable priced ``llm.turn`` events, the tool call, the
static checks, the write. Each round times, interleaved, a replayed create and a
deterministic create of another copy (same releases, no LLM).
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from pathlib import Path

from _common import fmt, header, line, median, note, parse_args, temp_home, wait_ping
from _create_world import CLAUDE_KEY, create, docker_available, script, world, world_env

NAME = "create_replayed"
IMAGE = "tsuku/validate-debian:local"  # the daemon's default validation image


def main() -> int:
    args = parse_args(__doc__ or "")
    rounds = 3 if args.quick else 7
    header(NAME, args.quick)
    container = docker_available(IMAGE)
    modes = [("--skip-validation",), ()] if container else [("--skip-validation",)]
    replayed = [f"bench/stern{i}" for i in range(len(modes) * (rounds + 1))]
    copies = 2 * len(replayed)
    fake = world(copies)
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from tests.fakes.anthropic_server import FakeAnthropic

    recordings = Path(tempfile.mkdtemp(prefix="tkb-rec-", dir="/tmp"))
    try:
        with FakeAnthropic() as claude, temp_home("tkb-cr1-") as h:
            h.env.update(world_env(fake))
            h.env.update(
                ANTHROPIC_API_KEY=CLAUDE_KEY,
                ANTHROPIC_BASE_URL=claude.url,
                TSUKU_LLM_RECORD_DIR=str(recordings),
                TSUKU_LLM_HOURLY_LIMIT="1000",  # more generations than the default 10/h
            )
            h.spawn()
            wait_ping(h.socket, h.proc)
            for repo in replayed:
                script(claude)
                create(h.env, repo, "--llm", "--skip-validation")
        results: dict[tuple[str, ...], tuple[list[float], list[float]]] = {}
        with temp_home("tkb-cr2-") as h:
            h.env.update(world_env(fake))
            h.env["TSUKU_LLM_REPLAY_DIR"] = str(recordings)
            h.env["TSUKU_LLM_HOURLY_LIMIT"] = "1000"
            h.spawn()
            wait_ping(h.socket, h.proc)
            fresh = iter(range(len(replayed), copies))
            todo = iter(replayed)
            for mode in modes:
                llm: list[float] = []
                det: list[float] = []
                for i in range(rounds + 1):
                    dt, res = create(h.env, next(todo), "--llm", *mode)
                    assert res["generated_by"] == "claude:claude-sonnet-5-5", res
                    # the recorded session's two turns, answered by the recording: spent $0
                    assert res["turns"] == 2 and res["cost_usd"] == 0, res
                    dt2, res2 = create(
                        h.env, f"bench/stern{next(fresh)}", "--deterministic-only", *mode
                    )
                    assert res2["generated_by"] == "deterministic"
                    if i > 0:
                        llm.append(dt)
                        det.append(dt2)
                results[mode] = (llm, det)
        note(
            NAME,
            f"median of {rounds} runs after 1 warm-up; sessions recorded through the real "
            "Claude SDK against a loopback fake, replayed by a fresh daemon with no key; "
            "baseline: `--deterministic-only` on another copy of the same releases",
        )
        for mode, (llm, det) in results.items():
            suffix = "" if mode else ".with_container"
            m, b = median(llm), median(det)
            line(
                f"{NAME}{suffix}",
                m,
                "s",
                m / b,
                "deterministic create",
                f"deterministic {fmt(b)} s",
            )
            print(f"{NAME}{suffix}.runs: " + ", ".join(fmt(x) for x in llm), flush=True)
        if not container:
            print(f"{NAME}.with_container: skipped (no runtime or no {IMAGE})", flush=True)
    finally:
        fake.close()
        shutil.rmtree(recordings, ignore_errors=True)
    return 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONDONTWRITEBYTECODE", "1")
    sys.exit(main())
