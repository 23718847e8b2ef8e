"""Shared pieces of the create benchmarks: a fake GitHub with many copies of stern's
releases (each run creates from a repository nobody fetched yet, so the daemon's 5-minute
API cache never answers for GitHub), the scripted model answers, and a timed
``tsukuctl create``.
"""

from __future__ import annotations

import json
import subprocess
import time
from typing import Any

from _common import BIN, REPO

CLAUDE_KEY = "sk-ant-api03-BENCHCANARY0123456789abcdef"


def world(copies: int) -> Any:
    """A started FakeGitHub with ``bench/stern0`` ... ``bench/stern<copies-1>``."""
    import sys

    sys.path.insert(0, str(REPO))
    from tests.fakes.github import RECIPES_DIR, FakeGitHub
    from tests.fakes.releases import recipe_repo
    from tsukud.recipe import load_recipe

    recipe = load_recipe(RECIPES_DIR / "s" / "stern.toml")
    fake = FakeGitHub()
    for i in range(copies):
        fake.add_repo(recipe_repo(recipe, ["1.30.0", "1.31.0", "1.32.0"], repo=f"bench/stern{i}"))
    fake.add_token(BENCH_TOKEN)
    return fake.start()


# The benchmarks create dozens of repositories a run: past GitHub's 60 anonymous requests
# an hour, so the daemon authenticates to the fake (which refuses unknown tokens) as a
# user with a token would.
BENCH_TOKEN = "ghp_bench_token_for_the_fake_github_only"


def world_env(fake: Any) -> dict[str, str]:
    """The environment that points a daemon at the fake, with the token it accepts."""
    return {**fake.env(), "GITHUB_TOKEN": BENCH_TOKEN}


def script(fake_anthropic: Any) -> None:
    """One create's conversation: inspect the linux archive, then answer."""
    import sys

    sys.path.insert(0, str(REPO))
    from tests.fakes import anthropic_server as anth
    from tests.integration.create.helpers import STERN  # the answer the create tests use

    fake_anthropic.reply(
        [
            anth.tool_use(
                "toolu_1", "inspect_archive", {"asset_name": "stern_1.32.0_linux_amd64.tar.gz"}
            )
        ],
        "tool_use",
        usage_=anth.usage(3000, 80),
    )
    fake_anthropic.reply(
        [anth.tool_use("toolu_2", "extract_pattern", STERN)],
        "tool_use",
        usage_=anth.usage(3500, 150),
    )


def create(env: dict[str, str], repo: str, *extra: str) -> tuple[float, dict[str, Any]]:
    """Wall seconds of one ``tsukuctl create stern --from github:<repo> --yes --force
    --json <extra>`` and its result."""
    argv = [str(BIN / "tsukuctl"), "create", "stern", "--from", f"github:{repo}"]
    argv += ["--yes", "--force", "--json", *extra]
    t0 = time.perf_counter()
    cp = subprocess.run(argv, env=env, capture_output=True, text=True, check=False)
    dt = time.perf_counter() - t0
    if cp.returncode != 0:
        raise RuntimeError(f"create from {repo} failed ({cp.returncode}): {cp.stderr}")
    return dt, json.loads(cp.stdout)


def docker_true(image: str) -> float:
    """Wall seconds of ``docker run --rm <image> true``."""
    t0 = time.perf_counter()
    cp = subprocess.run(
        ["docker", "run", "--rm", image, "true"], capture_output=True, text=True, check=False
    )
    dt = time.perf_counter() - t0
    if cp.returncode != 0:
        raise RuntimeError(f"docker run --rm {image} true failed: {cp.stderr}")
    return dt


def docker_available(image: str) -> bool:
    try:
        cp = subprocess.run(
            ["docker", "image", "inspect", image], capture_output=True, text=True, check=False
        )
    except FileNotFoundError:
        return False
    return cp.returncode == 0
