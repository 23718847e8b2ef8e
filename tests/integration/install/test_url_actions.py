"""Recipes in the registry's URL style (kubectl, terraform, helm, node) install through
the daemon from a plain download host on loopback, then verify and remove, exactly as
a new user runs them: ``download`` + ``checksum_url``, ``download`` + ``extract``,
``download_archive`` in directory mode, versions from ``http_json``; a wrong checksum is
refused (signed downloads: ``test_signed_download.py``; ``run_command``:
``test_run_command.py``)."""

from __future__ import annotations

import hashlib
import io
import subprocess
import tarfile
import zipfile
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.conftest import Tsuku
from tests.fakes.github import FakeGitHub
from tests.integration.install.conftest import events, from_the_registry, installed, tree
from tests.integration.install.test_recipe_errors import local_recipe
from tsukud.recipe import host_platform
from tsukud.testing.download_host import FakeDownloadHost

HOST = host_platform()


def script(text: str) -> bytes:
    return f"#!/bin/sh\necho '{text}'\n".encode()


def tar_gz(members: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            info.mode = 0o644  # not executable: chmod / install_binaries must make it so
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def zip_of(members: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    return buf.getvalue()


@pytest.fixture
def host() -> Iterator[FakeDownloadHost]:
    with FakeDownloadHost() as fake:
        yield fake


def run(path: Path, *args: str) -> str:
    return subprocess.run([str(path), *args], capture_output=True, text=True, check=True).stdout


def kubectl_recipe(host: FakeDownloadHost) -> str:
    return f"""[metadata]
name = "kubectl"
description = "Kubernetes command-line tool"
supported_os = ["linux", "darwin"]
unsupported_platforms = ["linux/arm64/musl"]

[version]
source = "http_json"
url = "{host.url}/release/stable.json"
version_path = "version"
github_repo = ""
tag_prefix = ""

[[steps]]
action = "download"
url = "{host.url}/release/{{version_tag}}/bin/{{os}}/{{arch}}/kubectl"
checksum_url = "{host.url}/release/{{version_tag}}/bin/{{os}}/{{arch}}/kubectl.sha256"

[[steps]]
action = "chmod"
files = ["kubectl"]

[[steps]]
action = "install_binaries"
binaries = ["kubectl"]

[verify]
command = "kubectl version --client"
pattern = "{{version}}"
"""


def verify_then_remove(inst: Tsuku, tool: str, printed: str) -> None:
    """``tsukuctl verify`` (the recorded sha256 and the verify command, run again outside
    the install), then ``tsukuctl remove``: the tool's directory and its links are gone
    and the tree is empty, as a new user would see it."""
    row = installed(inst)[tool]
    tool_dir = Path(row["install_dir"])
    links = [inst.home / "bin" / name for name in row["binaries"]]
    assert links and all(link.is_symlink() for link in links)
    cp = inst.ctl("verify", tool)
    assert cp.returncode == 0, cp.stderr
    assert cp.stdout.startswith(f"{tool} {row['version']} ok: ") and printed in cp.stdout
    cp = inst.ctl("remove", tool)
    assert cp.returncode == 0, cp.stderr
    assert installed(inst) == {}
    assert not tool_dir.exists()
    assert not any(link.exists() or link.is_symlink() for link in links)
    assert tree(inst.home) == []


def test_kubectl_like_download_with_checksum_url(inst: Tsuku, host: FakeDownloadHost) -> None:
    host.add_json("/release/stable.json", {"version": "v1.30.2"})
    body = script("Client Version: v1.30.2")
    host.add(f"/release/v1.30.2/bin/{HOST.os}/{HOST.arch}/kubectl", body)
    local_recipe(inst, "kubectl", kubectl_recipe(host))

    cp = inst.ctl("install", "kubectl")
    assert cp.returncode == 0, cp.stderr
    assert "Client Version: v1.30.2" in run(inst.home / "bin" / "kubectl", "version")
    row = installed(inst)["kubectl"]
    assert row["version"] == "1.30.2"
    done = [e for e in events(inst) if e["type"] == "install.completed"][-1]["payload"]
    (asset,) = done["assets"]
    assert asset["sha256"] == hashlib.sha256(body).hexdigest()
    assert asset["checked_against"] == ["checksum_file"]
    assert host.fetched()[-2:] == [
        f"/release/v1.30.2/bin/{HOST.os}/{HOST.arch}/kubectl",
        f"/release/v1.30.2/bin/{HOST.os}/{HOST.arch}/kubectl.sha256",
    ]

    assert inst.ctl("remove", "kubectl").returncode == 0
    assert installed(inst) == {}
    assert tree(inst.home) == []


def test_a_new_user_installs_kubectl_from_the_registrys_recipe(
    inst: Tsuku,
    world: FakeGitHub,
    registry: Callable[[str, str], None],
    host: FakeDownloadHost,
) -> None:
    """``tsukuctl install kubectl`` with no recipe of one's own: the recipe comes from
    the registry, its binary from the download host, checked against its ``.sha256``."""
    host.add_json("/release/stable.json", {"version": "v1.31.0"})
    body = script("Client Version: v1.31.0")
    host.add(f"/release/v1.31.0/bin/{HOST.os}/{HOST.arch}/kubectl", body)
    text = kubectl_recipe(host)
    registry("kubectl", text)
    assert not (inst.home / "recipes" / "kubectl.toml").exists()

    cp = inst.ctl("install", "kubectl")
    assert cp.returncode == 0, cp.stderr
    from_the_registry(inst, world, "kubectl", text)
    assert "Client Version: v1.31.0" in run(inst.home / "bin" / "kubectl", "version")
    done = [e for e in events(inst) if e["type"] == "install.completed"][-1]["payload"]
    assert done["version"] == "1.31.0"
    assert done["assets"][0]["checked_against"] == ["checksum_file"]
    verify_then_remove(inst, "kubectl", "Client Version: v1.31.0")


def test_a_wrong_checksum_is_refused_and_nothing_installed(
    inst: Tsuku, host: FakeDownloadHost
) -> None:
    host.add_json("/release/stable.json", {"version": "v1.30.2"})
    path = f"/release/v1.30.2/bin/{HOST.os}/{HOST.arch}/kubectl"
    host.add(path, script("Client Version: v1.30.2"))
    host.files[path + ".sha256"] = b"0" * 64 + b"\n"
    local_recipe(inst, "kubectl", kubectl_recipe(host))

    cp = inst.ctl("install", "kubectl")
    assert cp.returncode == 6, cp.stderr
    assert "checksum" in cp.stderr.lower()
    assert installed(inst) == {}
    assert not (inst.home / "bin" / "kubectl").exists()


def test_terraform_like_download_then_extract_with_a_pinned_checksum(
    inst: Tsuku, host: FakeDownloadHost
) -> None:
    archive = zip_of({"terraform": script("Terraform v1.9.0")})
    digest = hashlib.sha256(archive).hexdigest()
    host.add_json("/checkpoint/terraform", {"current_version": "1.9.0", "x": [1]})
    name = f"terraform_1.9.0_{HOST.os}_{HOST.arch}.zip"
    host.add(f"/terraform/1.9.0/{name}", archive, sha256_file=False)
    local_recipe(
        inst,
        "terraform",
        f"""[metadata]
name = "terraform"

[version]
source = "http_json"
url = "{host.url}/checkpoint/terraform"
version_path = "current_version"

[[steps]]
action = "download_file"
url = "{host.url}/terraform/1.9.0/{name}"
checksum = "{digest}"

[[steps]]
action = "extract"
archive = "{name}"
format = "zip"

[[steps]]
action = "install_binaries"
binaries = ["terraform"]

[verify]
command = "terraform version"
pattern = "v{{version}}"
""",
    )
    cp = inst.ctl("install", "terraform")
    assert cp.returncode == 0, cp.stderr
    assert "Terraform v1.9.0" in run(inst.home / "bin" / "terraform")
    done = [e for e in events(inst) if e["type"] == "install.completed"][-1]["payload"]
    assert done["assets"][0]["checked_against"] == ["recipe_checksum"]
    verify_then_remove(inst, "terraform", "Terraform v1.9.0")


def test_helm_like_download_extract_with_strip_dirs_and_os_mapping(
    inst: Tsuku, host: FakeDownloadHost
) -> None:
    mapped_os = {"linux": "Linux", "darwin": "Darwin"}[HOST.os]
    archive = tar_gz({f"{HOST.os}-{HOST.arch}/helm": script("v3.15.1+gabc")})
    host.add_json("/helm/latest.json", {"releases": [{"tag": "v3.15.1"}]})
    host.add(f"/helm-v3.15.1-{mapped_os}-{HOST.arch}.tar.gz", archive)
    local_recipe(
        inst,
        "helm",
        f"""[metadata]
name = "helm"

[version]
source = "http_json"
url = "{host.url}/helm/latest.json"
version_path = "releases.0.tag"

[[steps]]
action = "download"
url = "{host.url}/helm-{{version_tag}}-{{os}}-{{arch}}.tar.gz"
checksum_url = "{host.url}/helm-{{version_tag}}-{{os}}-{{arch}}.tar.gz.sha256"
os_mapping = {{ linux = "Linux", darwin = "Darwin" }}

[[steps]]
action = "extract"
archive = "helm-v{{version}}-{mapped_os}-{{arch}}.tar.gz"
strip_dirs = 1

[[steps]]
action = "install_binaries"
binaries = ["helm"]

[verify]
command = "helm version"
pattern = "{{version}}"
""",
    )
    cp = inst.ctl("install", "helm")
    assert cp.returncode == 0, cp.stderr
    assert installed(inst)["helm"]["version"] == "3.15.1"
    assert "v3.15.1" in run(inst.home / "bin" / "helm")
    verify_then_remove(inst, "helm", "v3.15.1+gabc")


def node_recipe(host: FakeDownloadHost, more_steps: str = "") -> str:
    """node's recipe shape: one ``download_archive`` in directory mode (``more_steps``
    go after it)."""
    return f"""[metadata]
name = "node"

[version]
source = "http_json"
url = "{host.url}/dist/index.json"
version_path = "0.version"

[[steps]]
action = "download_archive"
url = "{host.url}/dist/v{{version}}/node-v{{version}}-{{os}}-{{arch}}.tar.gz"
strip_dirs = 1
install_mode = "directory"
binaries = ["bin/node"]
{more_steps}
[verify]
command = "{{install_dir}}/bin/node --version"
pattern = "v{{version}}"
"""


def test_download_archive_in_directory_mode_keeps_the_tree(
    inst: Tsuku, host: FakeDownloadHost
) -> None:
    archive = tar_gz(
        {
            "node-v22.1.0/bin/node": script("v22.1.0"),
            "node-v22.1.0/lib/node_modules/npm/package.json": b"{}",
        }
    )
    host.add_json("/dist/index.json", [{"version": "v22.1.0"}])
    host.add(f"/dist/v22.1.0/node-v22.1.0-{HOST.os}-{HOST.arch}.tar.gz", archive)
    local_recipe(inst, "node", node_recipe(host))
    cp = inst.ctl("install", "node")
    assert cp.returncode == 0, cp.stderr
    row = installed(inst)["node"]
    tool = Path(row["install_dir"])
    assert (tool / "lib" / "node_modules" / "npm" / "package.json").is_file()
    assert "v22.1.0" in run(inst.home / "bin" / "node")
    verify_then_remove(inst, "node", "v22.1.0")  # {install_dir} filled in again


def branching_recipe(host: FakeDownloadHost) -> str:
    """One download per platform, chosen by ``when`` (os, arch, the platform form and a
    version range), as registry recipes for tools without a uniform asset scheme do."""
    return f"""[metadata]
name = "forked"
description = "a tool with a different download per platform"
supported_os = ["linux", "darwin"]
unsupported_platforms = ["linux/arm64/musl"]

[version]
source = "http_json"
url = "{host.url}/forked/latest.json"
version_path = "version"

[[steps]]
action = "download"
url = "{host.url}/forked/{{version}}/linux-x64/forked"
when = {{ os = ["linux"], arch = "amd64" }}

[[steps]]
action = "download"
url = "{host.url}/forked/{{version}}/linux-aarch64/forked"
when = {{ platform = ["linux/arm64"] }}

[[steps]]
action = "download"
url = "{host.url}/forked/{{version}}/macos/forked"
when = {{ os = ["darwin"] }}

[[steps]]
action = "download"
url = "{host.url}/forked/{{version}}/old-layout/forked"
when = {{ version = "<2.0" }}

[[steps]]
action = "chmod"
files = ["forked"]

[[steps]]
action = "install_binaries"
binaries = ["forked"]

[verify]
command = "forked --version"
pattern = "{{version}}"
"""


def test_the_step_for_this_platform_runs_and_no_other(inst: Tsuku, host: FakeDownloadHost) -> None:
    host.add_json("/forked/latest.json", {"version": "2.3.0"})
    mine = {"amd64": "linux-x64", "arm64": "linux-aarch64"}[HOST.arch]
    for where in ("linux-x64", "linux-aarch64", "macos", "old-layout"):
        host.add(f"/forked/2.3.0/{where}/forked", script(f"forked 2.3.0 ({where})"))
    local_recipe(inst, "forked", branching_recipe(host))

    cp = inst.ctl("install", "forked")
    assert cp.returncode == 0, cp.stderr
    assert run(inst.home / "bin" / "forked", "--version") == f"forked 2.3.0 ({mine})\n"
    downloads = [p for p in host.fetched() if p.endswith("/forked")]
    assert downloads == [f"/forked/2.3.0/{mine}/forked"]  # the others never fetched

    for platform, expected in (
        ("linux/amd64", "linux-x64"),
        ("linux/arm64", "linux-aarch64"),
        ("darwin/arm64", "macos"),
    ):
        cp = inst.ctl("plan", "forked", "--platform", platform)
        assert cp.returncode == 0, cp.stderr
        urls = [w for w in cp.stdout.split() if w.startswith(host.url)]
        assert urls == [f"{host.url}/forked/2.3.0/{expected}/forked"], (platform, cp.stdout)
    # A release the range names takes its own step too (1.x shipped another layout).
    cp = inst.ctl("plan", "forked", "--version", "1.9.0", "--platform", "linux/amd64")
    assert f"{host.url}/forked/1.9.0/old-layout/forked" in cp.stdout
    # A platform the recipe excludes is refused with the reason, before any download.
    before = len(host.requests)
    cp = inst.ctl("plan", "forked", "--platform", "windows/amd64")
    assert cp.returncode == 0 and "unsupported on windows/amd64" in cp.stdout
    assert "supported_os" in cp.stdout
    assert not [p for p in host.fetched()[before:] if p.endswith("/forked")]
