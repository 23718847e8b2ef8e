"""``download`` and ``download_archive`` with ``fallback_urls`` (tsuku's mirrors, zig's
recipe): when the primary URL fails the mirrors are tried in order, and whichever serves
is held to the recipe's checksum exactly as the primary would be, so a mirror cannot
serve other bytes."""

from __future__ import annotations

import hashlib

from tests.conftest import Tsuku
from tests.integration.install.conftest import events, installed
from tests.integration.install.test_recipe_errors import local_recipe
from tests.integration.install.test_url_actions import HOST, host, run, script, tar_gz
from tsukud.testing.download_host import FakeDownloadHost

__all__ = ["host"]  # the download host fixture, shared with test_url_actions

ARCHIVE = tar_gz({"zag-1.0.0/zag": script("zag 1.0.0")})
NAME = f"zag-{HOST.arch}-{HOST.os}-1.0.0.tar.gz"


def zag_recipe(host: FakeDownloadHost, checksum: str) -> str:
    return f"""[metadata]
name = "zag"

[version]
source = "http_json"
url = "{host.url}/zag.json"
version_path = "version"

[[steps]]
action = "download"
url = "{host.url}/primary/zag-{{arch}}-{{os}}-{{version}}.tar.gz"
fallback_urls = [
    "{host.url}/gone/zag-{{arch}}-{{os}}-{{version}}.tar.gz",
    "{host.url}/mirror/zag-{{arch}}-{{os}}-{{version}}.tar.gz",
]
checksum = "{checksum}"

[[steps]]
action = "extract"
archive = "zag-{{arch}}-{{os}}-{{version}}.tar.gz"
strip_dirs = 1

[[steps]]
action = "install_binaries"
binaries = ["zag"]

[verify]
command = "zag"
pattern = "zag {{version}}"
"""


def test_the_mirrors_are_tried_in_order_when_the_primary_fails(
    inst: Tsuku, host: FakeDownloadHost
) -> None:
    host.add_json("/zag.json", {"version": "1.0.0"})
    host.add(f"/mirror/{NAME}", ARCHIVE, sha256_file=False)  # primary and /gone/: 404
    local_recipe(inst, "zag", zag_recipe(host, hashlib.sha256(ARCHIVE).hexdigest()))

    cp = inst.ctl("install", "zag")
    assert cp.returncode == 0, cp.stderr
    assert "zag 1.0.0" in run(inst.home / "bin" / "zag")
    assert host.fetched() == ["/zag.json", f"/primary/{NAME}", f"/gone/{NAME}", f"/mirror/{NAME}"]
    done = [e for e in events(inst) if e["type"] == "install.completed"][-1]["payload"]
    (asset,) = done["assets"]
    assert asset["url"] == f"{host.url}/mirror/{NAME}"  # the one that served
    assert asset["checked_against"] == ["recipe_checksum"]


def test_a_mirror_is_held_to_the_same_checksum(inst: Tsuku, host: FakeDownloadHost) -> None:
    host.add_json("/zag.json", {"version": "1.0.0"})
    other = tar_gz({"zag-1.0.0/zag": script("not zag")})
    host.add(f"/mirror/{NAME}", other, sha256_file=False)
    local_recipe(inst, "zag", zag_recipe(host, hashlib.sha256(ARCHIVE).hexdigest()))

    cp = inst.ctl("install", "zag")
    assert cp.returncode == 6, cp.stderr
    assert "checksum" in cp.stderr.lower()
    assert installed(inst) == {}
    assert not (inst.home / "bin" / "zag").exists()


def test_the_primary_serves_and_no_mirror_is_asked(inst: Tsuku, host: FakeDownloadHost) -> None:
    host.add_json("/zag.json", {"version": "1.0.0"})
    host.add(f"/primary/{NAME}", ARCHIVE, sha256_file=False)
    host.add(f"/mirror/{NAME}", ARCHIVE, sha256_file=False)
    local_recipe(inst, "zag", zag_recipe(host, hashlib.sha256(ARCHIVE).hexdigest()))

    cp = inst.ctl("install", "zag")
    assert cp.returncode == 0, cp.stderr
    assert host.fetched() == ["/zag.json", f"/primary/{NAME}"]


def zag_archive_recipe(host: FakeDownloadHost) -> str:
    """tsuku's form of the same tool (zig's recipe): one ``download_archive`` whose
    mirrors share its mappings, its bytes held to a checksum file."""
    return f"""[metadata]
name = "zag"

[version]
source = "http_json"
url = "{host.url}/zag.json"
version_path = "version"

[[steps]]
action = "download_archive"
url = "{host.url}/primary/zag-{{arch}}-{{os}}-{{version}}.tar.gz"
fallback_urls = [
    "{host.url}/gone/zag-{{arch}}-{{os}}-{{version}}.tar.gz",
    "{host.url}/mirror/zag-{{arch}}-{{os}}-{{version}}.tar.gz",
]
checksum_url = "{host.url}/zag-{{version}}.sha256"
strip_dirs = 1
binaries = ["zag"]

[verify]
command = "zag"
pattern = "zag {{version}}"
"""


def _archive_world(inst: Tsuku, host: FakeDownloadHost, mirror_serves: bytes) -> None:
    host.add_json("/zag.json", {"version": "1.0.0"})
    host.add("/zag-1.0.0.sha256", hashlib.sha256(ARCHIVE).hexdigest().encode(), sha256_file=False)
    host.add(f"/mirror/{NAME}", mirror_serves, sha256_file=False)  # primary, /gone/: 404
    local_recipe(inst, "zag", zag_archive_recipe(host))


def test_download_archive_tries_its_mirrors_in_order(inst: Tsuku, host: FakeDownloadHost) -> None:
    _archive_world(inst, host, ARCHIVE)

    cp = inst.ctl("install", "zag")
    assert cp.returncode == 0, cp.stderr
    assert "zag 1.0.0" in run(inst.home / "bin" / "zag")
    downloads = [p for p in host.fetched() if p.endswith(".tar.gz")]
    assert downloads == [f"/primary/{NAME}", f"/gone/{NAME}", f"/mirror/{NAME}"]
    done = [e for e in events(inst) if e["type"] == "install.completed"][-1]["payload"]
    (asset,) = done["assets"]
    assert asset["url"] == f"{host.url}/mirror/{NAME}"
    assert asset["checked_against"] == ["checksum_file"]


def test_download_archive_holds_a_mirror_to_its_checksum(
    inst: Tsuku, host: FakeDownloadHost
) -> None:
    _archive_world(inst, host, tar_gz({"zag-1.0.0/zag": script("not zag")}))

    cp = inst.ctl("install", "zag")
    assert cp.returncode == 6, cp.stderr
    assert "checksum" in cp.stderr.lower()
    assert f"/mirror/{NAME}" in host.fetched()  # refused after the mirror served
    assert installed(inst) == {}
    assert not (inst.home / "bin" / "zag").exists()
