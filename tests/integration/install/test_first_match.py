"""A registry recipe whose wildcard matches several assets of a release installs the
first, as tsuku does, and says which it took and which it did not; a recipe this
project wrote (``generated_by``) stays strict and installs nothing."""

from __future__ import annotations

import json

from tests.conftest import Tsuku
from tests.integration.install.conftest import installed
from tests.integration.install.test_recipe_errors import local_recipe
from tests.integration.install.test_url_actions import HOST, run
from tsukud.testing.github import FakeGitHub
from tsukud.testing.releases import FakeAsset, FakeRelease, FakeRepo, script, tar_gz

FIRST = f"multi-a-{HOST.os}-{HOST.arch}.tar.gz"
SECOND = f"multi-b-{HOST.os}-{HOST.arch}.tar.gz"


def multi_recipe(extra_metadata: str = "") -> str:
    return f"""[metadata]
name = "multi"
{extra_metadata}
[[steps]]
action = "github_archive"
repo = "o/multi"
asset_pattern = "multi-*-{{os}}-{{arch}}.tar.gz"
binaries = ["multi"]

[verify]
command = "multi"
pattern = "v{{version}}"
"""


def _publish(world: FakeGitHub) -> None:
    assets = [
        FakeAsset(FIRST, tar_gz({"multi": (script("multi", "1.0.0"), 0o755)})),
        FakeAsset(SECOND, tar_gz({"multi": (script("other", "1.0.0"), 0o755)})),
    ]
    world.add_repo(FakeRepo("o/multi", [FakeRelease("v1.0.0", assets)]))


def test_a_registry_recipe_takes_the_first_match_and_names_the_others(
    inst: Tsuku, world: FakeGitHub
) -> None:
    _publish(world)
    local_recipe(inst, "multi", multi_recipe())
    cp = inst.ctl("install", "multi")
    assert cp.returncode == 0, cp.stderr
    said = cp.stdout + cp.stderr
    assert f"took {FIRST} as tsuku does (not {SECOND})" in said
    assert run(inst.home / "bin" / "multi").strip() == "multi v1.0.0"

    plan = json.loads(inst.ctl("plan", "multi", "--json", check=True).stdout)
    assert plan["steps"][0]["params"]["dest"] == FIRST
    (warning,) = plan["warnings"]
    assert f"took {FIRST}" in warning and SECOND in warning


def test_a_recipe_this_project_wrote_refuses_several_matches(
    inst: Tsuku, world: FakeGitHub
) -> None:
    _publish(world)
    local_recipe(inst, "multi", multi_recipe('generated_by = "tsuku 0.1.0 (test)"\n'))
    cp = inst.ctl("install", "multi")
    assert cp.returncode != 0
    assert "matches 2 assets" in cp.stderr and FIRST in cp.stderr and SECOND in cp.stderr
    assert installed(inst) == {}
    assert not (inst.home / "bin" / "multi").exists()
