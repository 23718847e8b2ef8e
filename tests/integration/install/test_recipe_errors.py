"""Recipes that cannot be used as written and tags that cannot be versions: each is a
typed error with the exit code docs/install.md gives (6 for a recipe, 4 for a version),
never 'a bug in tsuku', and nothing is installed."""

from __future__ import annotations

import pytest

from tests.conftest import Tsuku
from tests.fakes.github import FakeGitHub
from tests.fakes.releases import FakeAsset, FakeRelease, FakeRepo, script
from tests.integration.install.conftest import installed
from tests.waiting import wait_until

STERN = """[metadata]
name = "stern"

[[steps]]
action = "github_archive"
repo = "stern/stern"
asset_pattern = "stern_{version}_linux_{arch}.tar.gz"
binaries = ["stern"]
"""

#: (what is wrong, the recipe's text, a fragment of the message). Each is a failure of
#: the recipe's validation; all of them leave with exit 6.
BAD_RECIPES: list[tuple[str, str, str]] = [
    ("not TOML", STERN + "binaries = [", "invalid TOML"),
    ("no name", STERN.replace('name = "stern"', 'description = "x"'), "metadata.name"),
    ("steps not tables", 'steps = 3\n[metadata]\nname = "stern"\n', "steps"),
    ("empty binaries", STERN.replace('["stern"]', "[]"), "non-empty array"),
    (
        "binary dest is '.'",
        STERN.replace('["stern"]', '[{src = "stern", dest = "."}]'),
        "the relative path of a file",
    ),
    (
        "binary dest is a directory",
        STERN.replace('["stern"]', '[{src = "stern", dest = "bin/"}]'),
        "the relative path of a file",
    ),
    ("binary leaves the tool", STERN.replace('["stern"]', '["../stern"]'), "without '..'"),
    ("repo with URL syntax", STERN.replace("stern/stern", "evil/x?x=@h#"), '"owner/repo"'),
    ("repo with '..'", STERN.replace("stern/stern", "stern/.."), '"owner/repo"'),
    ("asset pattern with '/'", STERN.replace("stern_{", "x/stern_{"), "asset file name"),
    ("unknown archive format", STERN + 'archive_format = "rar"\n', "one of tar.gz"),
    (
        "checksum asset and URL",
        STERN + 'checksum_asset = "sums.txt"\nchecksum_url = "https://x/sums"\n',
        "mutually exclusive",
    ),
    ("unclosed '[' in the pattern", STERN.replace("stern_{", "stern_[{"), "unclosed '['"),
]


def local_recipe(t: Tsuku, name: str, text: str | bytes) -> None:
    d = t.home / "recipes"
    d.mkdir(exist_ok=True)
    data = text.encode() if isinstance(text, str) else text
    (d / f"{name}.toml").write_bytes(data)


def test_each_recipe_validation_failure_exits_6(inst: Tsuku) -> None:
    cases = [*BAD_RECIPES, ("not UTF-8", STERN.replace("stern/stern", "st\xe9rn/x"), "UTF-8")]
    for what, text, fragment in cases:
        data = text.encode("latin-1") if what == "not UTF-8" else text
        local_recipe(inst, "stern", data)
        cp = inst.ctl("install", "stern")
        assert cp.returncode == 6, (what, cp.returncode, cp.stderr)
        assert fragment in cp.stderr, (what, cp.stderr)
        assert "bug in tsuku" not in cp.stderr, (what, cp.stderr)
    assert installed(inst) == {}


def test_repo_with_url_syntax_is_the_recipes_fault(inst: Tsuku, world: FakeGitHub) -> None:
    local_recipe(inst, "stern", STERN.replace("stern/stern", "evil/x?x=@h#"))
    cp = inst.ctl("install", "stern")
    assert cp.returncode == 6
    assert "steps[0].repo" in cp.stderr and "GitHub" not in cp.stderr.split("hint:")[-1]
    assert world.requests_to("evil") == []  # nothing was asked of GitHub


def _tool_repo(world: FakeGitHub, repo: str, tag: str) -> None:
    world.add_repo(FakeRepo(repo, [FakeRelease(tag, [FakeAsset("tool", script("tool", "1"))])]))


def _file_recipe(name: str, repo: str, version_section: str = "") -> str:
    return (
        f'[metadata]\nname = "{name}"\n{version_section}\n[[steps]]\naction = "github_file"\n'
        f'repo = "{repo}"\nasset_pattern = "tool"\nbinary = "tool"\n'
    )


@pytest.mark.parametrize(
    ("tag", "prefix"),
    [
        ("v1/..9", None),  # the latest release: normalised to "..9"
        ("tool-1.0/../../../x", "tool-"),  # a prefix keeps the rest as is
    ],
)
def test_a_tag_that_cannot_be_a_version_is_refused(
    inst: Tsuku, world: FakeGitHub, tag: str, prefix: str | None
) -> None:
    repo = f"k1/dots{len(tag)}"
    _tool_repo(world, repo, tag)
    section = f'\n[version]\ngithub_repo = "{repo}"\ntag_prefix = "{prefix}"\n' if prefix else ""
    local_recipe(inst, "dots", _file_recipe("dots", repo, section))
    cp = inst.ctl("install", "dots")
    assert cp.returncode == 4, cp.stderr
    assert "bug in tsuku" not in cp.stderr
    assert installed(inst) == {}
    tools = inst.home / "tools"
    # The staging directory is renamed to .trash-* and emptied in the background.
    wait_until(
        lambda: not tools.exists() or not any(tools.iterdir()), "the staging trash emptied", 10
    )
    assert not (inst.home / "x").exists()
