"""`tsukuctl install|list|verify|info|remove|update-registry` against a real daemon and
the fake GitHub: the issue's "done when" walk and the behaviour around it."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import threading
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import Tsuku
from tests.fakes.github import FakeGitHub
from tests.integration.install.conftest import events, installed, make_tsuku, tree
from tests.shared import recipe_text
from tsukud.errors import ExitCode


def run_bin(t: Tsuku, name: str, *args: str) -> str:
    cp = subprocess.run(
        [str(t.home / "bin" / name), *args], capture_output=True, text=True, check=True
    )
    return cp.stdout.strip()


def test_done_when_walk(inst: Tsuku, world: FakeGitHub) -> None:
    cp = inst.ctl("install", "stern")
    assert cp.returncode == 0, cp.stderr
    assert cp.stdout.startswith("installed stern 1.32.0 (stern) in ")
    assert "resolving stern" in cp.stderr and "matches GitHub's digest" in cp.stderr
    assert "verifying: stern --version" in cp.stderr
    assert run_bin(inst, "stern", "--version") == "stern v1.32.0"

    cp = inst.ctl("install", "age@1.1.1")
    assert cp.returncode == 0, cp.stderr
    assert cp.stdout.startswith("installed age 1.1.1 (age, age-keygen)")
    assert run_bin(inst, "age-keygen") == "age-keygen v1.1.1"

    cp = inst.ctl("list", check=True)
    lines = cp.stdout.splitlines()
    assert lines[0].split() == ["TOOL", "VERSION", "BINARIES", "INSTALLED", "(UTC)", "RECIPE"]
    assert lines[1].split()[:4] == ["age", "1.1.1", "age,", "age-keygen"]
    assert lines[2].split()[:3] == ["stern", "1.32.0", "stern"]

    for tool in ("stern", "age"):
        cp = inst.ctl("verify", tool)
        assert cp.returncode == 0, cp.stderr
        assert " ok: " in cp.stdout

    cp = inst.ctl("remove", "stern", check=True)
    assert cp.stdout.strip() == "removed stern 1.32.0"
    assert not (inst.home / "bin" / "stern").is_symlink()
    assert tree(inst.home) == [
        "tools/age-1.1.1",
        "bin/age",
        "bin/age-keygen",
    ]
    assert list(installed(inst)) == ["age"]

    evs = events(inst)
    types = [e["type"] for e in evs]
    assert types == [
        "install.started",
        "install.completed",
        "install.started",
        "install.completed",
        "install.verified",
        "install.verified",
        "install.removed",
    ]
    done = evs[1]["payload"]
    assert done["tool"] == "stern" and done["version"] == "1.32.0" and done["tag"] == "v1.32.0"
    assert done["recipe_source"] == "registry" and done["platform"].startswith("linux/amd64")
    asset = done["assets"][0]
    assert asset["name"] == "stern_1.32.0_linux_amd64.tar.gz" and asset["digest_checked"]
    assert asset["sha256"] == world.release_asset("stern/stern", "v1.32.0", asset["name"]).sha256
    assert set(done["binaries"]) == {"stern"} and len(done["binaries"]["stern"]["sha256"]) == 64
    assert evs[0]["session"] == evs[1]["session"] != evs[2]["session"]
    assert evs[4]["payload"]["ok"] is True
    assert evs[6]["payload"] == {"tool": "stern", "version": "1.32.0"}
    # Every run has its own session, so `events --session` tells each one's story.
    sessions = [e["session"] for e in evs]
    assert all(sessions) and len(set(sessions)) == 5  # two installs, two verifies, a removal
    assert [s.split("-")[0] for s in sessions[4:]] == ["verify", "verify", "remove"]
    for e in evs[4:]:
        cp = inst.ctl("events", "--json", "--session", e["session"], check=True)
        assert [json.loads(line)["type"] for line in cp.stdout.splitlines()] == [e["type"]]


def test_verify_and_remove_return_their_session(inst: Tsuku) -> None:
    inst.ctl("install", "kind", check=True)
    verified = json.loads(inst.ctl("verify", "kind", "--json", check=True).stdout)
    removed = json.loads(inst.ctl("remove", "kind", "--json", check=True).stdout)
    by_session = {e["session"]: e["type"] for e in events(inst)}
    assert by_session[verified["session"]] == "install.verified"
    assert by_session[removed["session"]] == "install.removed"


def test_json_already_installed_and_force(inst: Tsuku) -> None:
    cp = inst.ctl("install", "kind", "--json", check=True)
    res = json.loads(cp.stdout)
    assert res["version"] == "2.5.0" and res["binaries"] == ["kind"] and cp.stderr == ""
    assert res["verify_output"] == "kind v2.5.0"
    cp = inst.ctl("install", "kind", check=True)
    assert cp.stdout.strip() == "kind 2.5.0 is already installed (--force reinstalls it)"
    cp = inst.ctl("install", "kind", "--force", check=True)
    assert cp.stdout.startswith("installed kind 2.5.0")
    assert tree(inst.home) == ["tools/kind-2.5.0", "bin/kind"]
    completed = [e for e in events(inst) if e["type"] == "install.completed"]
    assert len(completed) == 2


def test_upgrade_replaces_the_old_version(inst: Tsuku) -> None:
    inst.ctl("install", "age@1.1.1", check=True)
    cp = inst.ctl("install", "age", check=True)
    assert "installed age 1.2.1" in cp.stdout and "replacing 1.1.1" in cp.stdout
    assert tree(inst.home) == ["tools/age-1.2.1", "bin/age", "bin/age-keygen"]
    assert run_bin(inst, "age") == "age v1.2.1"
    cp = inst.ctl("install", "age@1.2.0", check=True)  # downgrade works the same way
    assert run_bin(inst, "age") == "age v1.2.0"
    assert installed(inst)["age"]["version"] == "1.2.0"
    cp = inst.ctl("install", "age@latest", check=True)  # as npm, mise and uv read it
    assert "installed age 1.2.1" in cp.stdout and "replacing 1.2.0" in cp.stdout
    plan = inst.ctl("plan", "age@LATEST", check=True)
    assert plan.stdout.startswith("age 1.2.1 for ")


def test_concurrent_installs_of_one_tool_are_serialised(inst: Tsuku, world: FakeGitHub) -> None:
    world.download_rate = 1000.0  # ~0.2 s per download: the two requests overlap
    results: list[Any] = []

    def go() -> None:
        with inst.client() as c:
            results.append(c.call("install", {"tool": "k9s"}))

    threads = [threading.Thread(target=go) for _ in range(3)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(timeout=30)
    assert sorted(r["already_installed"] for r in results) == [False, True, True]
    assert [e["type"] for e in events(inst)] == ["install.started", "install.completed"]
    assert len(world.requests_to("k9s_Linux_amd64.tar.gz", role="assets")) == 1  # one download


def test_progress_frames(inst: Tsuku) -> None:
    frames: list[dict[str, Any]] = []
    with inst.client() as c:
        c.call("install", {"tool": "tflint@2.4.1"}, on_progress=frames.append)
    stages = [f["stage"] for f in frames]
    for stage in (
        "resolving",
        "downloading",
        "verifying_checksum",
        "verified_checksum",
        "extracting",
        "installing",
        "verifying",
    ):
        assert stage in stages
    dl = [f for f in frames if f["stage"] == "downloading"]
    assert dl[-1]["bytes"] == dl[-1]["total"] > 0 and dl[-1]["file"] == "tflint_linux_amd64.zip"


def test_info(inst: Tsuku) -> None:
    cp = inst.ctl("info", "helix", check=True)
    assert "helix: A post-modern text editor" in cp.stdout or cp.stdout.startswith("helix")
    assert "supported (github_archive helix-editor/helix" in cp.stdout
    assert "installed    no" in cp.stdout
    inst.ctl("install", "hx", check=True)  # the manifest's alias
    res = json.loads(inst.ctl("info", "helix", "--json", check=True).stdout)
    assert res["installed"]["version"] == "2.5.0" and res["supported"] is True
    assert res["verify"]["command"] == "hx --version"
    cp = inst.ctl("info", "gotop", check=True)
    assert "supported" in cp.stdout


# Among the slowest tests (issue 26): installs, a registry refresh, and an install against a
# registry that answers 503 (retried with the product's backoff).
@pytest.mark.slow  # installs, a registry refresh, a 503 retried with the backoff
def test_update_registry_and_offline_cache(inst: Tsuku, world: FakeGitHub) -> None:
    inst.ctl("install", "gobuster", check=True)
    cp = inst.ctl("update-registry", check=True)
    assert "registry updated: 20 recipes listed" in cp.stdout
    assert "1 cached recipes refreshed" in cp.stdout
    inst.ctl("remove", "gobuster", check=True)
    # An hour later the cache is stale, and the registry is down: the cache still works.
    cached = inst.home / "registry" / "g" / "gobuster.toml"
    old = cached.stat().st_mtime - 7200
    os.utime(cached, (old, old))
    os.utime(inst.home / "registry" / "manifest.json", (old, old))
    world.override("^/registry/", status=503, body=b"unavailable", role="web")
    cp = inst.ctl("install", "gobuster")
    assert cp.returncode == 0, cp.stderr
    cp = inst.ctl("install", "cosign")  # never cached: a clear network error
    assert cp.returncode == 5 and "cannot fetch the recipe for cosign" in cp.stderr


@pytest.mark.parametrize("var", ["GITHUB_TOKEN", "GH_TOKEN"])
def test_github_token_is_used_and_never_recorded(world: FakeGitHub, var: str) -> None:
    token = world.add_token("ghp_integrationToken0123456789abcd")
    t = make_tsuku(world, **{var: token})
    (t.home / "recipes").mkdir(parents=True)
    trivy = recipe_text("t/trivy.toml")
    (t.home / "recipes" / "trivy.toml").write_text(
        trivy.replace('command = "trivy --version"', 'command = "trivy --version; env"')
    )
    try:
        t.start()
        res = json.loads(t.ctl("install", "trivy", "--json", check=True).stdout)
        assert "trivy v" in res["verify_output"] and token not in res["verify_output"]
        assert "TSUKU_" not in res["verify_output"]  # the daemon's environment stays home
        api = world.requests_to("/repos/aquasecurity/trivy", role="api")
        assert api and all(r.headers.get("authorization") == f"Bearer {token}" for r in api)
        hops = world.requests_to("trivy_")
        assert {r.role for r in hops} == {"web", "assets"}  # github.com, then the asset host
        assert all("authorization" not in r.headers for r in hops)
        world.rate_limit_remaining = 0
        cp = t.ctl("install", "kopia")
        assert cp.returncode == 5 and token not in cp.stderr
        t.stop_all()
        for path in [t.home / "tsuku.db", *(t.home / "logs").glob("*")]:
            assert token.encode() not in Path(path).read_bytes(), path
    finally:
        t.stop_all()
        shutil.rmtree(t.home, ignore_errors=True)


def test_one_file_installed_under_two_names(inst: Tsuku) -> None:
    recipe = recipe_text("s/stern.toml")
    twice = 'binaries = ["stern", { src = "stern", dest = "bin/stern-copy" }]'
    (inst.home / "recipes").mkdir()
    (inst.home / "recipes" / "stern.toml").write_text(
        recipe.replace('binaries = ["stern"]', twice, 1)
    )
    res = json.loads(inst.ctl("install", "stern", "--json", check=True).stdout)
    assert res["binaries"] == ["stern", "stern-copy"]
    assert run_bin(inst, "stern-copy") == run_bin(inst, "stern") == "stern v1.32.0"
    assert inst.ctl("verify", "stern").returncode == 0


def test_a_missing_version_lists_the_versions_that_exist(inst: Tsuku) -> None:
    cp = inst.ctl("install", "age@9.9.9")
    assert cp.returncode == ExitCode.VERSION_NOT_FOUND, cp.stderr
    assert cp.stdout == ""
    message, hint = cp.stderr.strip().splitlines()[-2:]
    assert message == "tsukuctl: version 9.9.9 not found for FiloSottile/age"
    assert hint.startswith("hint: Versions that exist near 9.9.9: ")
    assert "1.2.0" in hint and "1.1.1" in hint and "Fix the recipe" not in hint


def test_one_bad_gateway_from_github_and_the_download_host_does_not_fail_an_install(
    inst: Tsuku, world: FakeGitHub
) -> None:
    api = world.override(r"^/repos/derailed/k9s", status=502, body=b"bad", role="api", times=1)
    cdn = world.override(r"k9s_Linux_amd64\.tar\.gz$", status=503, body=b"", role="web", times=1)
    # The fake is shared by the module: count only this test's requests.
    web_before = len(world.requests_to("k9s_Linux_amd64.tar.gz", role="web"))
    assets_before = len(world.requests_to("k9s_Linux_amd64.tar.gz", role="assets"))
    cp = inst.ctl("install", "k9s")
    assert cp.returncode == 0, cp.stderr
    assert cp.stdout.startswith("installed k9s ")
    assert len(world.requests_to("k9s_Linux_amd64.tar.gz", role="web")) - web_before == 2
    assert len(world.requests_to("k9s_Linux_amd64.tar.gz", role="assets")) - assets_before == 1
    assert api.used == 1 and cdn.used == 1  # each failed once, and was tried again
    # Each retry is said as it happens, not left as seconds of nothing (issue 29, 4).
    retries = [line for line in cp.stderr.splitlines() if "; trying again in " in line]
    assert len(retries) == 2, cp.stderr
    assert "/repos/derailed/k9s" in retries[0] and "502" in retries[0]
    assert "k9s_Linux_amd64.tar.gz" in retries[1] and "503" in retries[1]
    assert all("(try 2 of at most " in line for line in retries)


def test_several_tools_in_one_command_and_errors_as_json(inst: Tsuku) -> None:
    """`install fd jq` and `remove fd jq` as `upgrade fd jq` already read them (issue 29,
    point 2): each in turn, one failure named without stopping the rest, exit 15 when
    some of several failed. With --json every outcome is a JSON line on stdout, an error
    included ({"error": {code, message, hint, exit_code}}, docs/cli.md)."""
    cp = inst.ctl("install", "kind", "age@1.1.1")
    assert cp.returncode == 0, cp.stderr
    assert [line.split()[:3] for line in cp.stdout.splitlines()] == [
        ["installed", "kind", "2.5.0"],
        ["installed", "age", "1.1.1"],
    ]
    cp = inst.ctl("install", "nosuchtool", "stern", "--no-discover")
    assert cp.returncode == ExitCode.PARTIAL_FAILURE, cp.stderr
    assert cp.stdout.startswith("installed stern 1.32.0")
    assert "tsukuctl: nosuchtool: " in cp.stderr and "\nhint: " in cp.stderr

    cp = inst.ctl("remove", "kind", "nosuchtool", "--json")
    assert cp.returncode == ExitCode.PARTIAL_FAILURE, cp.stderr
    removed, failed = (json.loads(line) for line in cp.stdout.splitlines())
    assert removed["tool"] == "kind" and removed["version"] == "2.5.0"
    assert failed["tool"] == "nosuchtool"
    assert set(failed["error"]) >= {"code", "message", "hint", "exit_code"}
    not_installed = failed["error"]["exit_code"]

    # Every tool failing the same way exits with that failure's code, not 15.
    cp = inst.ctl("remove", "kind", "nosuchtool")
    assert cp.returncode == not_installed != ExitCode.PARTIAL_FAILURE, cp.stderr
    assert cp.stderr.count("tsukuctl: ") == 2

    # One tool: the error exactly as before, and as one JSON object with --json.
    cp = inst.ctl("remove", "kind", "--json")
    assert cp.returncode == not_installed and cp.stderr == ""
    error = json.loads(cp.stdout)["error"]
    assert error["exit_code"] == not_installed and error["code"] == failed["error"]["code"]
    assert error["hint"]

    # A typo of an installed tool is named as such by every command that takes one
    # (issue 29, point 3).
    for command in ("remove", "verify", "upgrade", "info"):
        cp = inst.ctl(command, "stren")
        assert cp.returncode != 0 and "Did you mean stern?" in cp.stderr, (command, cp.stderr)

    cp = inst.ctl("install", "kind", "jq", "--from", "github:kubernetes-sigs/kind")
    assert cp.returncode == ExitCode.USAGE and "--from names the source of one tool" in cp.stderr
    assert sorted(installed(inst)) == ["age", "stern"]
