"""`tsukuctl demo`, the README's first command, end to end.

This also guards the bundled LLM recording: a change to the create prompts or tools
makes the replay miss here (regenerate with scripts/record_demo_llm.py).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

from tests.conftest import base_env, in_ci, short_home


# Among the slowest tests (issue 26): the demo runs the whole pipeline (its own daemon,
# fakes, a container validation) as a user would.
@pytest.mark.slow  # the whole offline demo: daemon, container validation, install
def test_demo_runs_the_whole_pipeline_offline() -> None:
    home = short_home()  # only for a clean env; the demo makes its own home
    env = base_env(home)
    env.pop("TSUKU_HOME")
    env.pop("TSUKU_SOCKET")
    cp = subprocess.run(
        [sys.executable, "-m", "tsukuctl", "demo"],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    out = cp.stdout
    assert cp.returncode == 0, out + cp.stderr
    # The bundled recording is of the scripted fake, and the demo must not call it more.
    assert "LLM         a scripted model, replayed: no network, no key" in out
    assert "Claude session" not in out
    assert "stern v1.32.0" in out and "age v1.2.1" in out
    assert "cost: $0 (deterministic matcher, no LLM)" in out
    # Each step's progress shows under its command line, before its result.
    step = out.split("$ tsukuctl create stern")[1].split("$ tsukuctl create age")[0]
    progress = step.index("  | fetching releases of stern/stern…")
    assert progress < step.index("  | matching the") < step.index("Recipe created:"), step
    assert "hash chain intact" in out
    validated = "validated in a container" in out
    if in_ci() or os.environ.get("TSUKU_REQUIRE_DOCKER") == "1":
        assert validated, "CI must run the demo's container validation"
    if not validated:
        assert "NO CONTAINER RUNTIME" in out
    else:
        # Each line proves what it says (issue 29, point 12): the Linux builds are real
        # programs, different per architecture, and darwin's scripts are called that.
        lines = [x for x in out.splitlines() if x.startswith("Validation: passed")]
        assert len(lines) == 2, out
        for line in lines:
            assert "linux/arm64 ran under emulation" in line, line
            assert "darwin/amd64 a script (platform-neutral" in line, line
            assert "headers checked" not in line, line
            sums = re.findall(r"linux_?-?(amd64|arm64)\.tar\.gz \(sha256 (\w+)", line)
            assert len({digest for _arch, digest in sums}) == 2, line
    # Money is counted once: the by-provider total equals the llm.turn events' cost.
    provider = out.split("summary --by provider")[1]
    total = re.search(r"^total\s+\d+\s+(\d+)\s+(\d+)\s+(\d+)\s+\$([\d.]+)", provider, re.M)
    assert total is not None, provider
    turns, tokens_in, tokens_out, cost = total.groups()
    # A recorded session answers: its turns are priced but never spent (a replay costs
    # nothing), and the summary says what the recording cost apart.
    assert (turns, tokens_in, tokens_out, cost) == ("2", "8900", "300", "0.00")
    assert "replayed: $0.02 not spent" in provider, provider
    home.rmdir()
