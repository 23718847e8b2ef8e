"""A build from source against a build dependency: tsuku's ``metadata.dependencies``
with ``setup_build_env`` and ``configure_make``.

Two tiny C projects are releases of the fake GitHub: ``libgreet`` (a header, a static
library, a ``.pc`` file and a ``libgreet-config`` script) and ``greeter`` (a program that
includes the header and links the library; its recipe names ``dependencies =
["libgreet"]``). ``tsukuctl install greeter`` installs libgreet first through its own
recipe (built in the build container), then builds greeter in the build container with
libgreet's tool directory mounted read-only and ``PKG_CONFIG_PATH``, ``CPPFLAGS`` and
``LDFLAGS`` pointing at it, and the installed program runs here.

What must never happen is checked in the same run (one daemon, two builds: a few
seconds): both projects' ``configure`` touch a host path that exists only on the host,
a ``make``/``cc``/``gcc`` first on PATH record any call, and greeter's ``configure``
tries to write into libgreet's directory (the mount is read-only, so libgreet stays
as its own install left it).
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import Tsuku
from tests.integration.install.conftest import make_tsuku, running
from tests.integration.install.test_recipe_errors import local_recipe
from tests.integration.source_build.conftest import tarball
from tsukud.testing.github import FakeGitHub
from tsukud.testing.releases import FakeAsset, FakeRelease, FakeRepo

LIB_VERSION = "2.1.0"
APP_VERSION = "1.0.0"

GREET_H = b"const char *greet(void);\n"
GREET_C = b"""#include "greet.h"
const char *greet(void) { return "greetings from libgreet " LIBVERSION; }
"""
LIB_MAKEFILE = b"""include config.mk
all: libgreet.a
libgreet.a: greet.c greet.h
\t$(CC) -O2 -DLIBVERSION='"$(VERSION)"' -c -o greet.o greet.c
\tar rcs libgreet.a greet.o
install: libgreet.a
\tmkdir -p $(PREFIX)/lib/pkgconfig $(PREFIX)/include $(PREFIX)/bin
\tcp libgreet.a $(PREFIX)/lib/libgreet.a
\tcp greet.h $(PREFIX)/include/greet.h
\tprintf 'prefix=%s\\nCflags: -I%s/include\\nLibs: -L%s/lib -lgreet\\n' \
\t  $(PREFIX) $(PREFIX) $(PREFIX) > $(PREFIX)/lib/pkgconfig/libgreet.pc
\tprintf '#!/bin/sh\\necho libgreet $(VERSION)\\n' > $(PREFIX)/bin/libgreet-config
\tchmod 755 $(PREFIX)/bin/libgreet-config
"""

GREETER_C = b"""#include <stdio.h>
#include <greet.h>
int main(void) {
    printf("greeter %s: %s\\n", APPVERSION, greet());
    return 0;
}
"""
APP_MAKEFILE = b"""include config.mk
greeter: greeter.c
\t$(CC) $(CPPFLAGS) -O2 -DAPPVERSION='"$(VERSION)"' -o greeter greeter.c $(LDFLAGS) -lgreet
install: greeter
\tmkdir -p $(PREFIX)/bin
\tcp greeter $(PREFIX)/bin/greeter
"""


def lib_configure(marker: Path) -> bytes:
    return f"""#!/bin/sh
touch {marker} 2>/dev/null || true
for arg in "$@"; do case "$arg" in --prefix=*) prefix="${{arg#--prefix=}}" ;; esac; done
printf 'PREFIX=%s\\nVERSION={LIB_VERSION}\\n' "$prefix" > config.mk
""".encode()


def app_configure(marker: Path) -> bytes:
    """Finds libgreet.pc on PKG_CONFIG_PATH (as pkg-config would), says what CPPFLAGS
    and LDFLAGS are, and tries to write into the dependency (a read-only mount)."""
    return f"""#!/bin/sh
touch {marker} 2>/dev/null || true
for arg in "$@"; do case "$arg" in --prefix=*) prefix="${{arg#--prefix=}}" ;; esac; done
found=
for dir in $(echo "$PKG_CONFIG_PATH" | tr ':' ' '); do
    [ -f "$dir/libgreet.pc" ] && found="$dir"
done
[ -n "$found" ] || {{ echo "libgreet.pc is not on PKG_CONFIG_PATH=$PKG_CONFIG_PATH"; exit 1; }}
echo "CPPFLAGS=$CPPFLAGS LDFLAGS=$LDFLAGS"
touch "$found/../../tampered" 2>/dev/null && echo "wrote into libgreet"
printf 'PREFIX=%s\\nVERSION={APP_VERSION}\\n' "$prefix" > config.mk
""".encode()


def lib_recipe(gh: FakeGitHub, sha256: str) -> str:
    url = f"{gh.web_url}/o/libgreet/releases/download/v{{version}}/libgreet-{{version}}.tar.gz"
    return f"""[metadata]
name = "libgreet"
description = "A tiny C library built from source"

[version]
source = "github"
github_repo = "o/libgreet"

[[steps]]
action = "download_file"
url = "{url}"
checksum = "{sha256}"

[[steps]]
action = "extract"
archive = "libgreet-{{version}}.tar.gz"

[[steps]]
action = "configure_make"
source_dir = "libgreet-{{version}}"
executables = ["libgreet-config"]

[verify]
command = "libgreet-config"
pattern = "{{version}}"
"""


def app_recipe(gh: FakeGitHub, sha256: str) -> str:
    url = f"{gh.web_url}/o/greeter/releases/download/v{{version}}/greeter-{{version}}.tar.gz"
    return f"""[metadata]
name = "greeter"
description = "A tiny C program built against libgreet"
dependencies = ["libgreet"]

[version]
source = "github"
github_repo = "o/greeter"

[[steps]]
action = "download_file"
url = "{url}"
checksum = "{sha256}"

[[steps]]
action = "extract"
archive = "greeter-{{version}}.tar.gz"

[[steps]]
action = "setup_build_env"

[[steps]]
action = "configure_make"
source_dir = "greeter-{{version}}"
executables = ["greeter"]

[[steps]]
action = "install_binaries"
install_mode = "directory"
binaries = ["bin/greeter"]

[verify]
command = "greeter"
pattern = "libgreet {LIB_VERSION}"
"""


@pytest.fixture
def world(tmp_path: Path) -> tuple[FakeGitHub, dict[str, str], Path]:
    """The two releases; their sha256s by name; the host marker path."""
    marker = tmp_path / "configure-ran-on-the-host"
    lib = tarball(
        {
            f"libgreet-{LIB_VERSION}/greet.h": (GREET_H, 0o644),
            f"libgreet-{LIB_VERSION}/greet.c": (GREET_C, 0o644),
            f"libgreet-{LIB_VERSION}/Makefile": (LIB_MAKEFILE, 0o644),
            f"libgreet-{LIB_VERSION}/configure": (lib_configure(marker), 0o755),
        }
    )
    app = tarball(
        {
            f"greeter-{APP_VERSION}/greeter.c": (GREETER_C, 0o644),
            f"greeter-{APP_VERSION}/Makefile": (APP_MAKEFILE, 0o644),
            f"greeter-{APP_VERSION}/configure": (app_configure(marker), 0o755),
        }
    )
    gh = FakeGitHub()
    gh.add_repo(
        FakeRepo(
            "o/libgreet",
            [FakeRelease(f"v{LIB_VERSION}", [FakeAsset(f"libgreet-{LIB_VERSION}.tar.gz", lib)])],
        )
    )
    gh.add_repo(
        FakeRepo(
            "o/greeter",
            [FakeRelease(f"v{APP_VERSION}", [FakeAsset(f"greeter-{APP_VERSION}.tar.gz", app)])],
        )
    )
    sums = {
        "libgreet": hashlib.sha256(lib).hexdigest(),
        "greeter": hashlib.sha256(app).hexdigest(),
    }
    return gh, sums, marker


def _fake_toolchain(tmp_path: Path) -> tuple[Path, Path]:
    """A ``make``, ``cc`` and ``gcc`` that record any call on the host and fail."""
    calls = tmp_path / "host-toolchain-calls"
    fake_bin = tmp_path / "bin"
    fake_bin.mkdir()
    for tool in ("make", "cc", "gcc", "ar"):
        script = fake_bin / tool
        script.write_text(f'#!/bin/sh\necho "{tool} $*" >> {calls}\nexit 1\n')
        script.chmod(0o755)
    return fake_bin, calls


def test_a_build_dependency_is_installed_first_and_built_against_read_only(
    world: tuple[FakeGitHub, dict[str, str], Path], build_image: str, tmp_path: Path
) -> None:
    gh, sums, marker = world
    fake_bin, calls = _fake_toolchain(tmp_path)
    path = f"{fake_bin}:{os.environ.get('PATH', '/usr/bin:/bin')}"
    with gh, running(make_tsuku(gh, PATH=path)) as t:
        local_recipe(t, "libgreet", lib_recipe(gh, sums["libgreet"]))
        local_recipe(t, "greeter", app_recipe(gh, sums["greeter"]))

        # The preview names what the build needs (each installed by its own recipe).
        plan = json.loads(t.ctl("plan", "greeter", "--json", check=True).stdout)
        assert plan["build_dependencies"] == ["libgreet"]
        assert plan["unsupported"] == []
        text = t.ctl("plan", "greeter", check=True).stdout
        assert "builds against  libgreet  (each installed first by its own recipe" in text

        out = t.ctl("install", "greeter", "--yes", "--json")
        # Nothing of either build ran here.
        assert not marker.exists(), "a configure ran on the host"
        assert not calls.exists(), calls.read_text()
        assert out.returncode == 0, out.stderr
        res = json.loads(out.stdout)
        assert res["binaries"] == ["greeter"]

        ran = subprocess.run(
            [str(t.home / "bin" / "greeter")], capture_output=True, text=True, check=True
        )
        assert ran.stdout == f"greeter {APP_VERSION}: greetings from libgreet {LIB_VERSION}\n"

        lib_dir = t.home / "tools" / f"libgreet-{LIB_VERSION}"
        assert (lib_dir / "lib" / "libgreet.a").is_file()
        assert (lib_dir / "include" / "greet.h").is_file()
        # The build could not write into its dependency: the mount is read-only.
        assert sorted(p.name for p in lib_dir.iterdir()) == ["bin", "include", "lib"]

        completed = _completed(t)
        # libgreet was its own install, first, built in the same image.
        assert [e["tool"] for e in completed] == ["libgreet", "greeter"]
        assert completed[0]["build"] == {
            "image": build_image,
            "kind": "configure_make",
            "dependencies": {},
        }
        assert completed[1]["build"] == {
            "image": build_image,
            "kind": "configure_make",
            "dependencies": {"libgreet": str(lib_dir)},
        }

        # Installed already: a second tool's build only mounts it.
        again = t.ctl("install", "greeter", "--force", "--json")
        assert again.returncode == 0, again.stderr
        assert [e["tool"] for e in _completed(t)] == ["libgreet", "greeter", "greeter"]

        removing_what_greeter_was_built_against(t, lib_dir)


def removing_what_greeter_was_built_against(t: Tsuku, lib_dir: Path) -> None:
    """As tsuku keeps an install-time dependency (``RequiredBy``): libgreet is not
    removed while greeter, built against it, is installed; once greeter is gone it is
    named as no longer needed, and then removes."""
    refused = t.ctl("remove", "libgreet")
    assert refused.returncode == 1, refused.stderr
    assert "libgreet is needed by greeter" in refused.stderr
    assert "Remove greeter first; libgreet stays installed." in refused.stderr
    assert lib_dir.is_dir()
    gone = t.ctl("remove", "greeter")
    assert gone.returncode == 0, gone.stderr
    assert "libgreet is no longer needed by any tool: tsukuctl remove libgreet" in gone.stderr
    assert t.ctl("remove", "libgreet").returncode == 0
    assert not lib_dir.exists()


def _completed(t: Tsuku) -> list[dict[str, Any]]:
    """The ``install.completed`` payloads, oldest first."""
    lines = t.ctl("events", "--type", "install.completed", "--json", check=True).stdout
    rows = [json.loads(x) for x in lines.splitlines()]
    return [r["payload"] for r in sorted(rows, key=lambda r: r["id"])]


def test_a_cycle_through_build_dependencies_is_refused_before_anything_is_built(
    world: tuple[FakeGitHub, dict[str, str], Path],
) -> None:
    """libgreet needing greeter to build, and greeter libgreet: each install would wait
    on the other's lock for ever. The cycle is named and nothing is installed."""
    gh, sums, _ = world
    lib = lib_recipe(gh, sums["libgreet"]).replace(
        'description = "A tiny C library built from source"',
        'description = "A tiny C library built from source"\ndependencies = ["greeter"]',
    )
    with gh, running(make_tsuku(gh)) as t:
        local_recipe(t, "libgreet", lib)
        local_recipe(t, "greeter", app_recipe(gh, sums["greeter"]))
        out = t.ctl("install", "greeter", "--yes", "--json")
        assert out.returncode == 8, out.stdout
        error = json.loads(out.stdout)["error"]
        assert error["code"] == "dependency_cycle"
        assert "greeter → libgreet → greeter" in error["message"]
        assert not (t.home / "tools").exists() or not any((t.home / "tools").iterdir())
        assert gh.requests_to("/releases/download/") == []
