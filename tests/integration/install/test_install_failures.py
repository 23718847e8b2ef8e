"""Failures leave nothing behind: checksum mismatch, missing asset, rate limit, hostile
archive, failed verify, bad recipes. Each says what went wrong and exits with its code."""

from __future__ import annotations

import gzip
import hashlib
import io
import os
import shutil
import tarfile

import pytest

from tests.conftest import Tsuku
from tests.fakes.github import FakeGitHub
from tests.fakes.http import breaking_server
from tests.fakes.releases import FakeAsset, FakeRelease, FakeRepo, raw_tar, script, tar_gz
from tests.integration.install.conftest import events, installed, make_tsuku, tree
from tests.shared import recipe_text
from tsukuctl.client import RemoteError
from tsukud.errors import ExitCode


def local_recipe(t: Tsuku, name: str, text: str) -> None:
    d = t.home / "recipes"
    d.mkdir(exist_ok=True)
    (d / f"{name}.toml").write_text(text)


def failed_event(t: Tsuku) -> dict[str, object]:
    evs = [e for e in events(t) if e["type"] == "install.failed"]
    assert evs, "no install.failed event"
    return evs[-1]["payload"]  # type: ignore[no-any-return]


def assert_nothing_installed(t: Tsuku) -> None:
    assert tree(t.home) == [] or all(p == "tools" for p in tree(t.home)), tree(t.home)
    assert installed(t) == {}


def test_checksum_mismatch_against_digest(inst: Tsuku, world: FakeGitHub) -> None:
    name = "k9s_Linux_amd64.tar.gz"
    published = world.release_asset("derailed/k9s", "v2.5.0", name).sha256
    tampered = tar_gz({"k9s": (b"#!/bin/sh\necho evil\n", 0o755)})
    world.cdn_replacements[name] = tampered
    cp = inst.ctl("install", "k9s")
    assert cp.returncode == 6, cp.stderr
    err = cp.stderr
    assert f"checksum mismatch for {name}" in err
    assert published in err and hashlib.sha256(tampered).hexdigest() in err
    assert "GitHub's asset digest" in err and "nothing was installed" in err
    assert_nothing_installed(inst)
    ev = failed_event(inst)
    assert ev["stage"] == "checksum" and ev["error_code"] == "checksum_mismatch"
    world.cdn_replacements.clear()
    assert inst.ctl("install", "k9s").returncode == 0  # the real file installs


def test_asset_404(inst: Tsuku, world: FakeGitHub) -> None:
    world.override(r"/releases/download/.*tflint_linux_amd64\.zip$", status=404, role="web")
    cp = inst.ctl("install", "tflint")
    assert cp.returncode == 5, cp.stderr
    assert "tflint_linux_amd64.zip: not found (HTTP 404)" in cp.stderr
    assert "does not (or no longer) provide this file" in cp.stderr
    assert_nothing_installed(inst)
    assert failed_event(inst)["error_code"] == "asset_download_not_found"


def test_asset_missing_from_the_release_listing(inst: Tsuku, world: FakeGitHub) -> None:
    local_recipe(
        inst,
        "jid",
        '[metadata]\nname = "jid"\n\n[[steps]]\naction = "github_archive"\nrepo = "simeji/jid"\n'
        'asset_pattern = "jid_{os}_{arch}.tar.gz"\nbinaries = ["jid"]\n',
    )
    cp = inst.ctl("install", "jid")
    assert cp.returncode == 6
    assert "no release asset named jid_linux_amd64.tar.gz" in cp.stderr
    assert "jid_linux_amd64.zip" in cp.stderr  # the candidates are listed
    assert not world.requests_to("jid_linux_amd64.tar.gz", role="web")


def test_rate_limited_api(inst: Tsuku, world: FakeGitHub) -> None:
    world.rate_limit_remaining = 0
    cp = inst.ctl("install", "atlantis")
    assert cp.returncode == 5, cp.stderr
    assert "GitHub API rate limit exceeded" in cp.stderr
    assert "hint:" in cp.stderr and "GITHUB_TOKEN" in cp.stderr
    assert_nothing_installed(inst)
    ev = failed_event(inst)
    assert ev["stage"] == "resolve" and ev["error_code"] == "github_rate_limited"


def test_secondary_rate_limit_says_when_to_retry(inst: Tsuku, world: FakeGitHub) -> None:
    world.secondary_retry_after = 90
    cp = inst.ctl("install", "atlantis")
    assert cp.returncode == 5, cp.stderr
    assert "secondary rate limit" in cp.stderr and "wait 90 seconds" in cp.stderr
    assert "a token does not lift this limit" in cp.stderr
    assert_nothing_installed(inst)
    ev = failed_event(inst)
    assert ev["stage"] == "resolve" and ev["error_code"] == "github_secondary_rate_limited"


@pytest.mark.parametrize("var", ["GITHUB_TOKEN", "GH_TOKEN"])
def test_bad_github_token_is_named_in_the_hint(world: FakeGitHub, var: str) -> None:
    token = "ghp_revokedIntegrationToken0000000"
    t = make_tsuku(world, **{var: token})
    try:
        t.start()
        cp = t.ctl("install", "atlantis")
        assert cp.returncode == 5, cp.stderr
        assert "Bad credentials" in cp.stderr and token not in cp.stderr
        assert "GITHUB_TOKEN" in cp.stderr and "GH_TOKEN" in cp.stderr
        assert_nothing_installed(t)
        assert failed_event(t)["error_code"] == "github_bad_credentials"
    finally:
        t.stop_all()
        shutil.rmtree(t.home, ignore_errors=True)
    refused = world.take_violations()
    assert refused and all("Bad credentials" in v.reason for v in refused)


def test_tar_slip_release_fails_cleanly(inst: Tsuku, world: FakeGitHub) -> None:
    good = tarfile.TarInfo("slip/slip")
    good.mode = 0o755
    evil = tarfile.TarInfo("slip/../../../../escaped-by-tsuku-test.txt")
    evil.mode = 0o644
    data = raw_tar([(good, script("slip", "1.0.0")), (evil, b"owned\n")])
    world.add_repo(
        FakeRepo("evil/slip", [FakeRelease("v1.0.0", [FakeAsset("slip-1.0.0.tar.gz", data)])])
    )
    local_recipe(
        inst,
        "slip",
        '[metadata]\nname = "slip"\n\n[[steps]]\naction = "github_archive"\nrepo = "evil/slip"\n'
        'asset_pattern = "slip-{version}.tar.gz"\nstrip_dirs = 1\nbinaries = ["slip"]\n',
    )
    cp = inst.ctl("install", "slip")
    assert cp.returncode == 6, cp.stderr
    assert "slip-1.0.0.tar.gz" in cp.stderr and ".." in cp.stderr
    assert "nothing was installed" in cp.stderr
    # Nowhere inside the home, nor in any directory the `..`s could reach from staging
    # (globbing all of /tmp would race with other tests' temp dirs).
    # (os.walk, not glob: the daemon may be emptying its staging trash meanwhile, and a
    # directory that vanishes mid-walk is skipped instead of failing the test.)
    assert not [d for d, _, names in os.walk(inst.home) if "escaped-by-tsuku-test.txt" in names]
    for ancestor in (inst.home / "tools" / "x" / "y").parents:
        assert not (ancestor / "escaped-by-tsuku-test.txt").exists()
    assert_nothing_installed(inst)
    assert failed_event(inst)["error_code"] == "archive_unsafe"


def test_failed_verify_keeps_the_previous_version(inst: Tsuku) -> None:
    inst.ctl("install", "age@1.1.1", check=True)
    recipe = recipe_text("a/age.toml")
    local_recipe(
        inst, "age", recipe.replace('pattern = "v{version}"', 'pattern = "v{version}-xyz"')
    )
    cp = inst.ctl("install", "age@1.2.0")
    assert cp.returncode == 7, cp.stderr
    assert "pattern mismatch" in cp.stderr and "Missing: v1.2.0-xyz" in cp.stderr
    assert "Got: age v1.2.0" in cp.stderr
    assert tree(inst.home) == ["tools/age-1.1.1", "bin/age", "bin/age-keygen"]
    assert installed(inst)["age"]["version"] == "1.1.1"
    assert inst.ctl("verify", "age").returncode == 0
    assert failed_event(inst)["stage"] == "verify"


def test_binary_not_in_archive(inst: Tsuku) -> None:
    recipe = recipe_text("s/stern.toml")
    local_recipe(
        inst, "stern", recipe.replace('binaries = ["stern"]', 'binaries = ["bin/stern"]', 1)
    )
    cp = inst.ctl("install", "stern")
    assert cp.returncode == 6
    assert "bin/stern is not a file in stern_1.32.0_linux_amd64.tar.gz" in cp.stderr
    assert "it has: LICENSE, stern" in cp.stderr
    assert_nothing_installed(inst)


def test_unsupported_recipes(inst: Tsuku) -> None:
    local_recipe(
        inst,
        "maconly",
        '[metadata]\nname = "maconly"\nsupported_os = ["darwin"]\n'
        'unsupported_reason = "Only macOS builds are published."\n\n'
        '[[steps]]\naction = "github_file"\nrepo = "a/b"\nasset_pattern = "x"\nbinary = "x"\n',
    )
    cp = inst.ctl("install", "maconly")
    assert cp.returncode == 6 and "not available for linux/amd64" in cp.stderr
    assert "hint: Only macOS builds are published." in cp.stderr
    local_recipe(
        inst,
        "brewed",
        '[metadata]\nname = "brewed"\n\n[[steps]]\naction = "pkgsrc_install"\nname = "brewed"\n',
    )
    cp = inst.ctl("install", "brewed")
    assert cp.returncode == 6 and "action pkgsrc_install is not supported yet" in cp.stderr


@pytest.mark.slow  # real-time retry backoff; unit test_http covers the policy
def test_not_found(inst: Tsuku) -> None:
    cp = inst.ctl("install", "no-such-tool")
    assert cp.returncode == 3 and "no recipe for no-such-tool" in cp.stderr
    cp = inst.ctl("install", "age@9.9.9")
    assert cp.returncode == 4 and "version 9.9.9 not found for FiloSottile/age" in cp.stderr
    cp = inst.ctl("remove", "age")
    assert cp.returncode == 1 and "age is not installed" in cp.stderr
    cp = inst.ctl("verify", "age")
    assert cp.returncode == 1


def test_binary_names_are_not_taken_over(inst: Tsuku) -> None:
    inst.ctl("install", "kind", check=True)
    local_recipe(
        inst,
        "kind2",
        '[metadata]\nname = "kind2"\n\n[[steps]]\naction = "github_file"\n'
        'repo = "kubernetes-sigs/kind"\nasset_pattern = "kind-{os}-{arch}"\nbinary = "kind"\n',
    )
    cp = inst.ctl("install", "kind2")
    assert cp.returncode == 6 and "belongs to kind" in cp.stderr
    assert tree(inst.home) == ["tools/kind-2.5.0", "bin/kind"]


def test_tampered_binary_fails_verify(inst: Tsuku) -> None:
    inst.ctl("install", "cosign", check=True)
    target = inst.home / "tools" / "cosign-2.5.0" / "bin" / "cosign"
    target.write_text('#!/bin/sh\necho "cosign v2.5.0"\n# changed\n')
    cp = inst.ctl("verify", "cosign")
    assert cp.returncode == 7
    assert "changed since install" in cp.stderr and "--force" in cp.stderr
    verified = [e for e in events(inst) if e["type"] == "install.verified"]
    assert verified[-1]["payload"]["ok"] is False
    assert verified[-1]["session"].startswith("verify-")
    with inst.client() as c, pytest.raises(RemoteError) as err:
        c.call("tools.verify", {"tool": "cosign"})
    failed = [e for e in events(inst) if e["type"] == "install.verified"][-1]
    assert err.value.data["session"] == failed["session"] != verified[-1]["session"]


def test_recipe_checksum_mismatch(inst: Tsuku, world: FakeGitHub) -> None:
    name = "stern_1.32.0_linux_amd64.tar.gz"
    real = world.release_asset("stern/stern", "v1.32.0", name).sha256
    pinned = "0" * 64
    pins = f'validated_version = "1.32.0"\n\n[metadata.asset_sha256]\n"{name}" = "{pinned}"\n'
    text = recipe_text("s/stern.toml").replace("curated = true\n", "curated = true\n" + pins, 1)
    local_recipe(inst, "stern", text)
    cp = inst.ctl("install", "stern")
    assert cp.returncode == 6, cp.stderr
    assert (
        f"checksum mismatch for {name}: the recipe's asset_sha256 says sha256 {pinned}" in cp.stderr
    )
    assert real in cp.stderr
    assert_nothing_installed(inst)
    # A recipe pinned at validated_version installs no other version (pins.py): 1.31.0
    # was never validated, so it is refused before anything is downloaded.
    downloads = len(world.requests_to("/stern_1.31.0_"))
    cp = inst.ctl("install", "stern@1.31.0")
    assert cp.returncode == ExitCode.FORBIDDEN, cp.stderr
    assert "stern 1.31.0 was never validated" in cp.stderr
    assert "--version 1.31.0 --force" in cp.stderr
    assert len(world.requests_to("/stern_1.31.0_")) == downloads
    assert_nothing_installed(inst)


def test_a_generated_recipe_installs_only_files_it_pins(inst: Tsuku, world: FakeGitHub) -> None:
    """At its validated version, a generated recipe's file for this platform that it
    does not pin (validated elsewhere only) is refused before it is fetched (pins.py)."""
    other = "stern_1.32.0_darwin_arm64.tar.gz"
    real = world.release_asset("stern/stern", "v1.32.0", other).sha256
    pins = f'validated_version = "1.32.0"\n\n[metadata.asset_sha256]\n"{other}" = "{real}"\n'
    text = recipe_text("s/stern.toml").replace("curated = true\n", "curated = true\n" + pins, 1)
    local_recipe(inst, "stern", text)
    fetched = len(world.requests_to("/stern_1.32.0_linux_amd64"))
    cp = inst.ctl("install", "stern")
    assert cp.returncode == ExitCode.FORBIDDEN, cp.stderr
    assert "stern_1.32.0_linux_amd64.tar.gz was never validated: the recipe pins " in cp.stderr
    assert other in cp.stderr and "hint: " in cp.stderr
    assert len(world.requests_to("/stern_1.32.0_linux_amd64")) == fetched
    assert_nothing_installed(inst)


def test_checksum_file_from_the_release(inst: Tsuku, world: FakeGitHub) -> None:
    text = recipe_text("s/stern.toml").replace(
        'binaries = ["stern"]', 'binaries = ["stern"]\nchecksum_asset = "checksums.txt"', 1
    )
    local_recipe(inst, "stern", text)
    res = inst.ctl("install", "stern", "--json", check=True)
    assert '"checked_against":["github_digest","checksum_file"]' in res.stdout
    inst.ctl("remove", "stern", check=True)
    # A release whose checksum file disagrees with the download is refused.
    world.cdn_replacements["checksums.txt"] = (
        b"1111111111111111111111111111111111111111111111111111111111111111  "
        b"stern_1.32.0_linux_amd64.tar.gz\n"
    )
    cp = inst.ctl("install", "stern")
    assert cp.returncode == 6 and "checksum file" in cp.stderr and "1111" in cp.stderr
    assert_nothing_installed(inst)


def test_wildcard_patterns_use_the_release_asset_list(inst: Tsuku) -> None:
    """A recipe this project wrote stays strict over several matches (a person's or
    the registry's recipe takes the first, as tsuku does: tests/.../test_first_match.py)."""

    def jid(pattern: str) -> str:
        return (
            '[metadata]\nname = "jid"\ngenerated_by = "tsuku 0.1.0 (test)"\n\n'
            '[[steps]]\naction = "github_archive"\n'
            f'repo = "simeji/jid"\nasset_pattern = "{pattern}"\nbinaries = ["jid"]\n'
        )

    local_recipe(inst, "jid", jid("jid_{os}_*64.zip"))
    cp = inst.ctl("install", "jid")
    assert cp.returncode == 6
    assert (
        "jid_linux_*64.zip matches 2 assets: jid_linux_amd64.zip, jid_linux_arm64.zip" in cp.stderr
    )
    local_recipe(inst, "jid", jid("jid_{os}_am*.zip"))
    res = inst.ctl("install", "jid", "--json", check=True)
    assert '"name":"jid_linux_amd64.zip"' in res.stdout


# Among the slowest tests (issue 26): the download is retried with the product's own backoff
# before it fails (real time; the retry policy is what gives exit 5).
@pytest.mark.slow  # real-time retry backoff; unit test_http covers the policy
def test_download_breaking_mid_body_leaves_the_previous_version(
    inst: Tsuku, world: FakeGitHub
) -> None:
    inst.ctl("install", "age@1.1.1", check=True)
    before = tree(inst.home)
    name = "age-v1.2.0-linux-amd64.tar.gz"
    data = world.release_asset("FiloSottile/age", "v1.2.0", name).content()
    with breaking_server(data[:100], declared=len(data) + 50_000, path="/" + name) as url:
        world.override(rf"/releases/download/v1\.2\.0/{name}$", status=302,
                       headers={"location": url}, role="web")  # fmt: skip
        cp = inst.ctl("install", "age@1.2.0")
    assert cp.returncode == 5, cp.stderr  # a network error, worth retrying
    assert "download failed" in cp.stderr and name in cp.stderr
    assert "ExceptionGroup" not in cp.stderr
    assert tree(inst.home) == before  # no new version, no staging, no partial file
    assert installed(inst)["age"]["version"] == "1.1.1"
    ev = failed_event(inst)
    assert ev["stage"] == "download" and ev["error_code"] == "download_failed"
    assert inst.ctl("verify", "age").returncode == 0


def test_failed_forced_reinstall_restores_the_old_copy(inst: Tsuku) -> None:
    inst.ctl("install", "age@1.1.1", check=True)
    old_dir = inst.home / "tools" / "age-1.1.1"
    (old_dir / "marker").write_text("the copy installed first")
    inode = (old_dir / "bin" / "age").stat().st_ino
    before = tree(inst.home)
    recipe = recipe_text("a/age.toml")
    local_recipe(
        inst, "age", recipe.replace('pattern = "v{version}"', 'pattern = "v{version}-xyz"')
    )
    # The new copy is moved in (the old one aside) and verified there; verify fails.
    cp = inst.ctl("install", "--force", "age@1.1.1")
    assert cp.returncode == 7, cp.stderr
    assert "pattern mismatch" in cp.stderr
    assert tree(inst.home) == before  # nothing .old-* or .staging-* is left
    assert (old_dir / "marker").read_text() == "the copy installed first"
    assert (old_dir / "bin" / "age").stat().st_ino == inode
    assert os.readlink(inst.home / "bin" / "age") == str(old_dir / "bin" / "age")
    assert failed_event(inst)["stage"] == "verify"
    assert inst.ctl("verify", "age").returncode == 0


def test_a_compression_bomb_is_named_with_its_real_compressed_size(
    inst: Tsuku, world: FakeGitHub
) -> None:
    # Issue 31: unpacked while downloading, the archive's file had no size yet, and the
    # refusal said "from 0 compressed bytes" for a 200 KB download.
    out = io.BytesIO()
    with gzip.GzipFile(fileobj=out, mode="wb", compresslevel=9, mtime=0) as gz:
        info = tarfile.TarInfo("zeros")
        info.size = 160 * 1024 * 1024
        gz.write(info.tobuf())
        chunk = bytes(1024 * 1024)
        for _ in range(160):
            gz.write(chunk)
    data = out.getvalue()
    assert info.size // len(data) > 500
    world.add_repo(
        FakeRepo("evil/zeros", [FakeRelease("v1.0.0", [FakeAsset("zeros-1.0.0.tar.gz", data)])])
    )
    local_recipe(
        inst,
        "zeros",
        '[metadata]\nname = "zeros"\n\n[[steps]]\naction = "github_archive"\n'
        'repo = "evil/zeros"\nasset_pattern = "zeros-{version}.tar.gz"\nbinaries = ["zeros"]\n',
    )
    cp = inst.ctl("install", "zeros")
    assert cp.returncode != 0, cp.stderr
    assert f"from {len(data)} compressed bytes" in cp.stderr, cp.stderr
    assert "compression ratio limit 200:1" in cp.stderr
    assert_nothing_installed(inst)
