"""``tsukuctl plan``: every fixture recipe plans (by name from the registry and from
its file) with exit 0 and nothing installed; composite actions come out decomposed as
tsuku decomposes them, URL recipes resolve their URLs, checksums and destinations, and
an action or platform tsuku cannot serve gets an honest line, not a failure."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.conftest import Tsuku
from tests.fakes.github import FakeGitHub, fixture_recipe_paths
from tests.integration.install.conftest import events
from tests.integration.install.test_recipe_errors import local_recipe
from tests.integration.install.test_url_actions import host, kubectl_recipe, node_recipe
from tsukud.testing.download_host import FakeDownloadHost

__all__ = ["host"]  # the download host fixture, shared with test_url_actions


def plan(t: Tsuku, *args: str) -> dict[str, Any]:
    cp = t.ctl("plan", *args, "--json")
    assert cp.returncode == 0, cp.stderr
    result: dict[str, Any] = json.loads(cp.stdout)
    return result


def test_every_fixture_recipe_plans_by_name_and_from_its_file(
    inst: Tsuku, world: FakeGitHub
) -> None:
    paths = fixture_recipe_paths()
    assert len(paths) >= 20
    for path in paths:
        name = path.stem
        by_name = inst.ctl("plan", name)
        assert by_name.returncode == 0, (name, by_name.stderr)
        assert by_name.stdout.startswith(f"{name} "), by_name.stdout
        from_file = plan(inst, str(path))
        assert from_file["format_version"] == 5 and from_file["tool"] == name
        assert from_file["storage_version"] == 1
        assert set(from_file) >= {"tool", "version", "platform", "steps", "verify"}
        if from_file["unsupported"]:  # an honest line per gap, never a failure
            assert "unsupported on" in by_name.stdout
            continue
        actions = [s["action"] for s in from_file["steps"]]
        assert actions[0] == "download_file" and actions[-1] == "install_binaries", name
        first = from_file["steps"][0]
        assert first["url"].startswith(world.web_url) and first["params"]["dest"]
        assert len(first["checksum"]) == 64  # the fake GitHub's digests, hex as tsuku writes
        assert first["params"]["checksum"] == first["checksum"] and first["size"] > 0
    assert [e for e in events(inst) if e["type"] != "install.started"] == []
    assert not (inst.home / "tools").exists() or list((inst.home / "tools").iterdir()) == []


def test_github_archive_decomposes_like_tsuku(inst: Tsuku, world: FakeGitHub) -> None:
    p = plan(inst, "stern", "--version", "1.30.0", "--platform", "darwin/arm64")
    assert p["version"] == "1.30.0" and p["platform"] == {"os": "darwin", "arch": "arm64"}
    assert [s["action"] for s in p["steps"]] == [
        "download_file",
        "extract",
        "chmod",
        "install_binaries",
    ]
    fetch, extract, chmod, install = p["steps"]
    assert fetch["url"].endswith("/stern_1.30.0_darwin_arm64.tar.gz")
    assert fetch["params"]["dest"] == "stern_1.30.0_darwin_arm64.tar.gz"
    assert extract["params"]["archive"] == fetch["params"]["dest"]
    assert extract["params"]["format"] == "tar.gz"
    assert chmod["params"]["files"] == ["stern"]
    assert install["params"] == {"binaries": ["stern"], "install_mode": "binaries"}
    assert p["verify"]["command"]  # as the recipe writes it


def test_url_recipes_plan_urls_checksums_and_signature(inst: Tsuku, host: FakeDownloadHost) -> None:
    host.add_json("/release/stable.json", {"version": "v1.30.2"})
    local_recipe(inst, "kubectl", kubectl_recipe(host))
    p = plan(inst, "kubectl", "--platform", "linux/arm64")
    assert p["tag"] == "v1.30.2"
    fetch, chmod, install = p["steps"]
    url = f"{host.url}/release/v1.30.2/bin/linux/arm64/kubectl"
    assert (fetch["action"], fetch["url"], fetch["params"]["dest"]) == (
        "download_file",
        url,
        "kubectl",
    )
    assert fetch["params"]["checksum_url"] == url + ".sha256"
    # No checksum in the recipe: tsuku's plan holds the sha256 of the file it fetched.
    assert fetch["computed_at_download"] == [
        "checksum",
        "size",
        "params.checksum",
        "params.checksum_algo",
    ]
    assert chmod["params"] == {"files": ["kubectl"]}
    assert install["params"] == {"binaries": ["kubectl"]}  # as written
    assert p["unsupported"] == []
    # Nothing was downloaded to make the plan: only the version document was read.
    assert host.fetched() == ["/release/stable.json"]

    text = inst.ctl("plan", "kubectl", "--platform", "linux/arm64")
    assert text.returncode == 0
    assert f"download_file     {url} -> kubectl  (checksum from {url}.sha256)" in text.stdout


def test_download_archive_and_a_signed_download_decompose(
    inst: Tsuku, host: FakeDownloadHost, tmp_path: Path
) -> None:
    fpr = "FB5DB77FD5C118B80511ADA8A6310ACC4672475C"
    recipe = tmp_path / "node.toml"
    recipe.write_text(
        node_recipe(
            host,
            f"""
[[steps]]
action = "download"
url = "{host.url}/extra-{{version}}.zip"
checksum = "sha256:{"ab" * 32}"
signature_url = "{host.url}/extra-{{version}}.zip.sig"
signature_key_url = "{host.url}/key.asc"
signature_key_fingerprint = "{fpr}"

[[steps]]
action = "nix_install"
packages = ["corepack"]
""",
        )
    )
    p = plan(inst, str(recipe), "--version", "22.1.0", "--platform", "linux/amd64")
    actions = [s["action"] for s in p["steps"]]
    assert actions == ["download_file", "extract", "chmod", "install_binaries", "download_file"]
    assert p["steps"][1]["params"] == {
        "archive": "node-v22.1.0-linux-amd64.tar.gz",
        "format": "tar.gz",
        "strip_dirs": 1,
    }
    assert p["steps"][3]["params"] == {"binaries": ["bin/node"], "install_mode": "directory"}
    signed = p["steps"][4]
    assert signed["checksum"] == "ab" * 32
    assert signed["params"]["signature_key_fingerprint"] == fpr
    assert signed["params"]["signature_url"] == f"{host.url}/extra-22.1.0.zip.sig"
    assert p["unsupported"] == [
        {
            "action": "nix_install",
            "platform": "linux/amd64 (glibc)",
            "reason": "action nix_install is not supported yet",
            "index": 2,
        }
    ]
    assert p["verify"]["command"] == "{install_dir}/bin/node --version"  # as written
    assert host.fetched() == []  # an explicit version with http_json: nothing fetched

    text = inst.ctl("plan", str(recipe), "--version", "22.1.0", "--platform", "linux/amd64")
    assert text.returncode == 0, text.stderr
    assert (
        "unsupported on linux/amd64 (glibc): steps[2] nix_install: "
        "action nix_install is not supported yet"
    ) in text.stdout


def test_a_platform_the_recipe_excludes_is_named(inst: Tsuku, host: FakeDownloadHost) -> None:
    host.add_json("/release/stable.json", {"version": "v1.30.2"})
    local_recipe(inst, "kubectl", kubectl_recipe(host))
    cp = inst.ctl("plan", "kubectl", "--platform", "windows/amd64")
    assert cp.returncode == 0, cp.stderr
    assert "unsupported on windows/amd64" in cp.stdout and "supported_os" in cp.stdout
    bad = inst.ctl("plan", "kubectl", "--platform", "linux")
    assert bad.returncode == 2 and "linux/amd64" in bad.stderr


def test_a_version_source_tsuku_cannot_query_is_named(inst: Tsuku, host: FakeDownloadHost) -> None:
    """``[version] source = "nixpkgs"``: plan says so by name (exit 0, a report); with a
    version named it plans the steps; install refuses, naming the source and the plan
    that still works."""
    odd = f"""
[metadata]
name = "oddtool"
description = "a tool whose versions come from a source tsuku does not know"

[version]
source = "nixpkgs"

[[steps]]
action = "download"
url = "{host.url}/oddtool-{{version}}.tar.gz"

[verify]
command = "oddtool --version"
"""
    local_recipe(inst, "oddtool", odd)
    cp = inst.ctl("plan", "oddtool")
    assert cp.returncode == 0, cp.stderr
    assert cp.stdout.startswith("oddtool (no version resolved) for ")
    assert "version: oddtool: version source 'nixpkgs' is not supported yet" in cp.stdout
    assert "--version V" in cp.stdout
    p = plan(inst, "oddtool")
    assert p["steps"] == [] and p["unsupported"][0]["action"] == "version"
    named = plan(inst, "oddtool", "--version", "2.1.0")
    assert named["version"] == "2.1.0" and not named["unsupported"]
    assert named["steps"][0]["url"] == f"{host.url}/oddtool-2.1.0.tar.gz"
    cp = inst.ctl("install", "oddtool")
    assert cp.returncode == 6, cp.stderr
    assert "oddtool: version source 'nixpkgs' is not supported yet" in cp.stderr
    assert "hint: `tsukuctl plan oddtool --version <version>` shows what" in cp.stderr
    assert host.requests == []  # nothing fetched for either


def test_unknown_keys_are_listed_in_the_plan_and_empty_ones_are_not(
    inst: Tsuku, host: FakeDownloadHost, tmp_path: Path
) -> None:
    """The parser keeps keys it does not model; the plan is where an author sees them
    (JSON ``unknown_keys`` and one text line). ``= ""`` is the registry's unset."""
    host.add_json("/release/stable.json", {"version": "v1.30.2"})
    text = kubectl_recipe(host).replace(
        "[metadata]\n", '[metadata]\nshiny_new_key = ["zig"]\nshiny = ""\n', 1
    )
    assert "shiny_new_key" in text
    path = tmp_path / "kubectl.toml"
    path.write_text(text, encoding="utf-8")
    p = plan(inst, str(path), "--platform", "linux/amd64")
    assert p["unknown_keys"] == ["metadata.shiny_new_key"]
    assert p["unsupported"] == [] and p["steps"]
    cp = inst.ctl("plan", str(path), "--platform", "linux/amd64")
    assert cp.returncode == 0, cp.stderr
    last = cp.stdout.splitlines()[-1]
    assert last == "unknown keys (kept, not used): metadata.shiny_new_key"
    local_recipe(inst, "kubectl", kubectl_recipe(host))
    assert plan(inst, "kubectl", "--platform", "linux/amd64")["unknown_keys"] == []


def test_a_dependency_s_plan_is_nested_and_a_missing_one_is_named(
    inst: Tsuku, host: FakeDownloadHost
) -> None:
    """``dependencies``: each one's plan (its own version resolved) nested in the
    plan, as tsuku nests them, the tool itself never again; one the registry does not
    have is an ``unsupported`` line naming it, not a failure."""
    host.add_json("/release/stable.json", {"version": "v1.30.2"})
    local_recipe(inst, "kubectl", kubectl_recipe(host))
    tools = kubectl_recipe(host).replace(
        'name = "kubectl"', 'name = "kube-tools"\ndependencies = ["kubectl", "kube-tools"]'
    )
    local_recipe(inst, "kube-tools", tools)
    p = plan(inst, "kube-tools", "--platform", "linux/arm64")
    (dep,) = p["dependencies"]
    alone = plan(inst, "kubectl", "--platform", "linux/arm64")
    assert dep == {k: alone[k] for k in ("tool", "version", "steps", "verify")}
    assert p["unsupported"] == []
    assert list(p)[list(p).index("deterministic") + 1] == "dependencies"
    text = inst.ctl("plan", "kube-tools", "--platform", "linux/arm64", check=True).stdout
    assert "  needs kubectl 1.30.2 first (3 steps)" in text.splitlines()

    local_recipe(inst, "kube-tools", tools.replace('"kube-tools"]', '"no-such-tool"]'))
    p = plan(inst, "kube-tools", "--platform", "linux/arm64")
    assert [d["tool"] for d in p["dependencies"]] == ["kubectl", "no-such-tool"]
    (gap,) = p["unsupported"]
    assert gap["action"] == "dependency"
    assert gap["reason"].startswith("no-such-tool (a dependency): ")
