"""Every human-written recipe of the shared reference data (:mod:`tests.shared`)
installs for the host platform from the fake registry and GitHub, verifies, lists,
re-verifies and removes.
Plus recipes written here for two recorded releases (jid's zip, buf's bare binaries)."""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Iterator

import pytest

from tests.conftest import Tsuku
from tests.fakes.github import FakeGitHub, fixture_recipe_paths
from tests.integration.install.conftest import NO_SYSTEM_COMMANDS, make_tsuku
from tsukud.recipe import host_platform, load_recipe, require_supported

RECORDED_RECIPES = {
    # A zip from a recorded release whose older tags have no "v" (0.7.2).
    "jid": (
        '[metadata]\nname = "jid"\n\n[[steps]]\naction = "github_archive"\n'
        'repo = "simeji/jid"\nasset_pattern = "jid_{os}_{arch}.zip"\nbinaries = ["jid"]\n\n'
        '[verify]\ncommand = "jid --version"\npattern = "{version}"\n',
        "0.7.2",
    ),
    # Bare binaries with mapped names, from a recorded release with GitHub digests.
    "buf": (
        '[metadata]\nname = "buf"\n\n[[steps]]\naction = "github_file"\n'
        'repo = "bufbuild/buf"\nasset_pattern = "buf-{os}-{arch}"\nbinary = "buf"\n'
        'os_mapping = { linux = "Linux", darwin = "Darwin" }\n'
        'arch_mapping = { amd64 = "x86_64", arm64 = "arm64" }\n\n'
        '[verify]\ncommand = "buf --version"\npattern = "{version}"\n',
        None,
    ),
}


@pytest.fixture(scope="module")
def shared_daemon(gh: FakeGitHub) -> Iterator[Tsuku]:
    t = make_tsuku(gh)
    (t.home / "recipes").mkdir(parents=True)
    for name, (text, _version) in RECORDED_RECIPES.items():
        (t.home / "recipes" / f"{name}.toml").write_text(text)
    try:
        t.start()
        yield t
    finally:
        t.stop_all()
        shutil.rmtree(t.home, ignore_errors=True)


def _cycle(t: Tsuku, spec: str) -> dict[str, object]:
    name = spec.split("@")[0]
    cp = t.ctl("install", spec, "--json", shell_env=NO_SYSTEM_COMMANDS)
    assert cp.returncode == 0, f"install {spec} failed:\n{cp.stderr}"
    res = json.loads(cp.stdout)
    assert res["already_installed"] is False
    for b in res["binaries"]:
        link = t.home / "bin" / b
        assert link.is_symlink() and link.resolve().is_file()
        out = subprocess.run([str(link)], capture_output=True, text=True, check=True).stdout
        assert res["version"] in out
    listed = {r["tool"]: r for r in json.loads(t.ctl("list", "--json", check=True).stdout)["tools"]}
    assert listed[name]["version"] == res["version"]
    cp = t.ctl("verify", name)
    assert cp.returncode == 0, cp.stderr
    cp = t.ctl("remove", name)
    assert cp.returncode == 0, cp.stderr
    assert not any((t.home / "bin" / b).is_symlink() for b in res["binaries"])
    assert not (t.home / "tools" / f"{name}-{res['version']}").exists()
    return res


@pytest.mark.parametrize("path", fixture_recipe_paths(), ids=lambda p: p.stem)
def test_fixture_recipe_installs(shared_daemon: Tsuku, path: object) -> None:
    recipe = load_recipe(path)  # type: ignore[arg-type]
    require_supported(recipe, host_platform())  # every fixture recipe supports linux/amd64
    res = _cycle(shared_daemon, recipe.metadata.name)
    assert res["assets"]  # downloaded, hashed, checked
    assert all(a["digest_checked"] for a in res["assets"])  # type: ignore[union-attr]


@pytest.mark.parametrize("name", sorted(RECORDED_RECIPES))
def test_recorded_release_installs(shared_daemon: Tsuku, name: str) -> None:
    _text, version = RECORDED_RECIPES[name]
    res = _cycle(shared_daemon, f"{name}@{version}" if version else name)
    if name == "jid":
        assert res["tag"] == "0.7.2"
        assert res["assets"][0]["digest_checked"] is False  # type: ignore[index]
    else:
        assert res["version"] == "1.61.0"
        assert res["assets"][0]["digest_checked"] is True  # type: ignore[index]
