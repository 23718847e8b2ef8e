"""Fixtures for builds from source: the build image (built once per machine, under the
same lock as the other images), and a tiny C project as a release of the fake GitHub.

The project is a ``hello.c``, a hand-written ``configure`` (a shell script that writes
``config.mk``) and a Makefile, packed in the test's own temporary directory. Its
``configure`` also touches a marker file at a host path given to it: inside the
container that path does not exist (nothing of the host is mounted there), so the
marker appears only if the script ran on the host.
"""

from __future__ import annotations

import hashlib
import io
import tarfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.integration.sandbox.conftest import _ensure, docker_endpoint, image, runtime
from tsukud.sandbox.image import prepare_build_image
from tsukud.sandbox.runtime import BUILD_IMAGE
from tsukud.testing.github import FakeGitHub
from tsukud.testing.releases import FakeAsset, FakeRelease, FakeRepo

__all__ = ["docker_endpoint", "image", "runtime"]

VERSION = "1.0.0"
REPO = "o/hello-src"
TARBALL = f"hello-src-{VERSION}.tar.gz"

HELLO_C = b"""#include <stdio.h>
int main(void) {
    printf("hello from a build: %s %s\\n", GREETING, VERSION);
    return 0;
}
"""

MAKEFILE = b"""include config.mk
hello: hello.c
\t$(CC) -O2 -DGREETING='"$(GREETING)"' -DVERSION='"$(VERSION)"' -o hello hello.c
install: hello
\tmkdir -p $(PREFIX)/bin
\tcp hello $(PREFIX)/bin/hello
"""


def configure(marker: Path) -> bytes:
    return f"""#!/bin/sh
touch {marker} 2>/dev/null || true
prefix=/usr/local
greeting=hello
for arg in "$@"; do
    case "$arg" in
        --prefix=*) prefix="${{arg#--prefix=}}" ;;
        --greeting=*) greeting="${{arg#--greeting=}}" ;;
        *) echo "configure: unknown option $arg" >&2; exit 1 ;;
    esac
done
printf 'PREFIX=%s\\nGREETING=%s\\nVERSION={VERSION}\\n' "$prefix" "$greeting" > config.mk
echo "configured for $prefix"
""".encode()


def sources(marker: Path, makefile: bytes = MAKEFILE) -> dict[str, tuple[bytes, int]]:
    """The project's files and modes, under ``hello-src-<version>/``."""
    top = f"hello-src-{VERSION}"
    return {
        f"{top}/hello.c": (HELLO_C, 0o644),
        f"{top}/Makefile": (makefile, 0o644),
        f"{top}/configure": (configure(marker), 0o755),
    }


def tarball(members: dict[str, tuple[bytes, int]]) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for name, (data, mode) in members.items():
            info = tarfile.TarInfo(name)
            info.size, info.mode = len(data), mode
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


@dataclass(frozen=True)
class Project:
    """The served source release and the host paths that would record a host build."""

    gh: FakeGitHub
    sha256: str
    marker: Path  # touched by configure, if it ever runs on the host
    calls: Path  # appended to by the fake make/cc/gcc on the host PATH
    fake_bin: Path


@pytest.fixture(scope="session")
def build_image(docker_endpoint: str) -> str:
    """The build image (``bash scripts/dev setup`` builds it ahead, so CI finds it)."""
    return _ensure(docker_endpoint, BUILD_IMAGE, prepare_build_image)


@pytest.fixture
def project(tmp_path: Path) -> Iterator[Project]:
    marker = tmp_path / "configure-ran-on-the-host"
    calls = tmp_path / "host-toolchain-calls"
    fake_bin = tmp_path / "bin"
    fake_bin.mkdir()
    for tool in ("make", "cc", "gcc"):
        script = fake_bin / tool
        script.write_text(f'#!/bin/sh\necho "{tool} $*" >> {calls}\nexit 1\n')
        script.chmod(0o755)
    data = tarball(sources(marker))
    with FakeGitHub() as gh:
        gh.add_repo(FakeRepo(REPO, [FakeRelease(f"v{VERSION}", [FakeAsset(TARBALL, data)])]))
        yield Project(gh, hashlib.sha256(data).hexdigest(), marker, calls, fake_bin)


def recipe(project: Project, *, extra: str = "", verify: str = "{version}") -> str:
    url = f"{project.gh.web_url}/{REPO}/releases/download/v{{version}}/hello-src-{{version}}.tar.gz"
    return f"""[metadata]
name = "hello-src"
description = "A tiny C project built from source"

[version]
source = "github"
github_repo = "{REPO}"

[[steps]]
action = "download_file"
url = "{url}"
checksum = "{project.sha256}"

[[steps]]
action = "extract"
archive = "hello-src-{{version}}.tar.gz"

[[steps]]
action = "setup_build_env"

[[steps]]
action = "configure_make"
source_dir = "hello-src-{{version}}"
configure_args = ["--greeting=built-in-a-container"]
executables = ["hello"]
{extra}
[[steps]]
action = "install_binaries"
install_mode = "directory"
binaries = ["bin/hello"]

[[steps]]
action = "set_env"
vars = {{ HELLO_HOME = "{{install_dir}}" }}

[verify]
command = "hello"
pattern = "{verify}"
"""
