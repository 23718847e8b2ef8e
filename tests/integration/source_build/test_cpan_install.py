"""A ``cpan_install`` recipe installs what cpanm installed in the build container.

A tiny pure-Perl distribution served by the fake CPAN mirror: the daemon fetches the
mirror's index and the distribution's bytes, then the real ``cpanm`` installs it in the
build container (no network: a copy of those bytes is its only mirror), the recipe's
verify runs there against the output, and the output becomes the tool's directory
with tsuku's PERL5LIB wrapper; the installed command runs here, and ``remove`` takes
it away. Nothing of the distribution runs on the host: its ``Makefile.PL`` writes a
marker at a host path, which exists only here. The bytes are checked against the
author directory's CHECKSUMS first: a mirror that swapped them installs nothing and
starts no container.
"""

from __future__ import annotations

import http.client
import json
import socket
import subprocess
import time
from hashlib import sha256
from pathlib import Path

from tests.conftest import Tsuku, base_env, short_home
from tests.integration.install.conftest import events, running
from tests.integration.install.test_recipe_errors import local_recipe
from tsukud.testing.cpan import FakeCpanMirror, perl_distribution

DIST, VERSION, SCRIPT = "Acme-TsukuHello", "1.02", "tsuku-hello"

# As tsuku's registry writes one (carton's): the version from the CPAN mirror's index.
RECIPE = f"""[metadata]
name = "tsuku-hello"
description = "A tiny CPAN distribution"

[version]
source = "metacpan"
distribution = "{DIST}"

[[steps]]
action = "cpan_install"
distribution = "{DIST}"
executables = ["{SCRIPT}"]

[verify]
command = "{SCRIPT} --version"
pattern = "{SCRIPT} {{version}} --version"
"""


def test_a_cpan_distribution_builds_in_the_container_installs_runs_and_is_removed(
    tmp_path: Path, build_image: str
) -> None:
    marker = tmp_path / "makefile-pl-ran-on-the-host"
    with FakeCpanMirror() as mirror:
        mirror.publish(perl_distribution(DIST, VERSION, SCRIPT, marker=marker))
        home = short_home()
        with running(Tsuku(home, {**base_env(home), **mirror.env()})) as t:
            local_recipe(t, "tsuku-hello", RECIPE)
            plan = json.loads(t.ctl("plan", "tsuku-hello", "--json", check=True).stdout)
            assert [s["action"] for s in plan["steps"]] == ["cpan_install"]
            assert plan["unsupported"] == []
            # The mirror serves its newest release only: another is refused unfetched.
            older = t.ctl("install", "tsuku-hello@1.01", "--yes")
            assert older.returncode != 0 and f"indexes {DIST} {VERSION}, not 1.01" in older.stderr
            assert not any("/authors/" in p for p in mirror.paths())

            out = t.ctl("install", "tsuku-hello", "--yes", "--json")
            assert not marker.exists(), "Makefile.PL ran on the host"
            assert out.returncode == 0, out.stderr
            res = json.loads(out.stdout)
            assert res["binaries"] == [SCRIPT]
            assert res["build"] == {
                "image": build_image,
                "kind": "cpan_install",
                "dependencies": {},
            }
            (asset,) = res["assets"]
            assert asset["name"] == f"{DIST}-{VERSION}.tar.gz"
            # The author's CHECKSUMS vouched for the bytes.
            assert asset["checked_against"] == ["cpan_checksums"]
            # Only the index (for the version, then the file), the author's CHECKSUMS
            # and the distribution were fetched, nothing else.
            assert set(mirror.paths()) == {
                "/modules/02packages.details.txt.gz",
                "/authors/id/T/TS/TSUKU/CHECKSUMS",
                f"/authors/id/T/TS/TSUKU/{DIST}-{VERSION}.tar.gz",
            }

            ran = subprocess.run(
                [str(t.home / "bin" / SCRIPT), "a", "b"], capture_output=True, text=True
            )
            assert ran.returncode == 0, ran.stderr
            assert ran.stdout == f"{SCRIPT} {VERSION} a b\n"
            tool = t.home / "tools" / f"tsuku-hello-{VERSION}"
            # The local-lib cpanm wrote (the module under lib/perl5), the script renamed
            # beside tsuku's wrapper.
            assert (tool / "lib" / "perl5" / "Acme" / "TsukuHello.pm").is_file()
            assert sorted(p.name for p in (tool / "bin").iterdir()) == [
                SCRIPT,
                f"{SCRIPT}.cpanm",
            ]

            t.ctl("remove", "tsuku-hello", check=True)
            assert not (t.home / "bin" / SCRIPT).exists()
            assert not tool.exists()


def containers_created(endpoint: str, label: str, since: float) -> list[str]:
    """The engine's record of containers created with ``label`` since ``since`` (its
    events, which outlive the containers a build removes)."""

    class Unix(http.client.HTTPConnection):
        def connect(self) -> None:
            self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            self.sock.connect(endpoint.removeprefix("unix://"))

    filters = json.dumps({"type": ["container"], "event": ["create"], "label": [label]})
    conn = Unix("localhost", timeout=10)
    try:
        query = f"since={since:.3f}&until={time.time():.3f}&filters={filters}"
        conn.request("GET", "/events?" + query.replace(" ", ""))
        body = conn.getresponse().read().decode()
    finally:
        conn.close()
    return [json.loads(line)["id"] for line in body.splitlines() if line.strip()]


def test_a_swapped_distribution_is_refused_before_anything_is_built(
    tmp_path: Path, build_image: str, docker_endpoint: str
) -> None:
    """A mirror (or a proxy) serving other bytes than the ones the author's CHECKSUMS
    names: ``checksum_mismatch`` at stage download, no container, nothing installed.
    The swapped file is a working distribution: unchecked, it would install."""
    dist = perl_distribution(DIST, VERSION, SCRIPT)
    evil = perl_distribution(DIST, VERSION, SCRIPT, marker=tmp_path / "swapped-ran")
    name = "tsuku-swapped"
    with FakeCpanMirror() as mirror:
        mirror.publish(dist)
        mirror.swap(dist, evil.tarball)
        home = short_home()
        with running(Tsuku(home, {**base_env(home), **mirror.env()})) as t:
            local_recipe(t, name, RECIPE.replace('name = "tsuku-hello"', f'name = "{name}"'))
            since = time.time()
            out = t.ctl("install", name, "--yes", "--json")
            assert out.returncode == 6, out.stdout
            error = json.loads(out.stdout)["error"]
            assert error["code"] == "checksum_mismatch"
            assert error["data"]["file"] == f"{DIST}-{VERSION}.tar.gz"
            checksums = f"{mirror.url}/authors/id/T/TS/TSUKU/CHECKSUMS"
            assert error["message"] == (
                f"checksum mismatch for {DIST}-{VERSION}.tar.gz: the mirror's {checksums} "
                f"says sha256 {sha256(dist.tarball).hexdigest()}, the download has sha256 "
                f"{sha256(evil.tarball).hexdigest()}"
            )
            assert "not the file its CHECKSUMS names" in error["hint"]
            (failed,) = [e["payload"] for e in events(t) if e["type"] == "install.failed"]
            assert (failed["error_code"], failed["stage"]) == ("checksum_mismatch", "download")
            assert not (t.home / "tools" / f"{name}-{VERSION}").exists()
            assert not (t.home / "bin" / SCRIPT).exists()
            label = f"dev.tsuku.build={name}"
            assert containers_created(docker_endpoint, label, since) == []


def test_a_distribution_that_requires_another_installs_both_from_the_host_fetched_mirror(
    tmp_path: Path, build_image: str
) -> None:
    """Acme-TsukuA requires Acme::TsukuB (not perl's): the host reads A's META.json,
    resolves B through the mirror's index, checks B against its author's CHECKSUMS and
    lays both out; cpanm, with no network, builds both in the container, and the tool
    loads B at run time. The progress says what was fetched besides A before the
    build. (Without the gathering, cpanm in the container cannot find Acme::TsukuB.)"""
    name, script = "tsuku-acme-a", "tsuku-acme-a"
    b = perl_distribution("Acme-TsukuB", "2.5", None, marker=tmp_path / "b-ran")
    a = perl_distribution("Acme-TsukuA", "1.0", script, requires={"Acme::TsukuB": "2.0"})
    recipe = (
        RECIPE.replace(DIST, "Acme-TsukuA")
        .replace(SCRIPT, script)
        .replace('name = "tsuku-hello"', f'name = "{name}"')
    )
    with FakeCpanMirror() as mirror:
        mirror.publish(a)
        home = short_home()
        with running(Tsuku(home, {**base_env(home), **mirror.env()})) as t:
            local_recipe(t, name, recipe)
            # A mirror without B: refused on the host, naming the module and who needs it.
            out = t.ctl("install", name, "--yes", "--json")
            assert out.returncode == 6, out.stdout
            error = json.loads(out.stdout)["error"]
            assert error["code"] == "cpan_dependency_unavailable"
            assert error["data"] == {
                "module": "Acme::TsukuB",
                "needed_by": "Acme-TsukuA-1.0.tar.gz",
            }
            assert "cpan.mirror_url" in error["hint"]
            assert not (t.home / "tools" / f"{name}-1.0").exists()

            mirror.publish(b)
            out = t.ctl("install", name, "--yes")
            assert out.returncode == 0, out.stderr
            assert not (tmp_path / "b-ran").exists(), "B's Makefile.PL ran on the host"
            # Said before the build started, as the downloads of other steps are.
            said = out.stderr.index(
                "Acme-TsukuA-1.0.tar.gz needs 1 more CPAN distribution, fetched and checked "
                "against their CHECKSUMS, built with it in the container: "
                "Acme-TsukuB-2.5.tar.gz (for Acme::TsukuB, needed by Acme-TsukuA-1.0.tar.gz)"
            )
            assert said < out.stderr.index("installing Acme-TsukuA-1.0.tar.gz with cpanm")
            (done,) = [e["payload"] for e in events(t) if e["type"] == "install.completed"]
            assert [(x["name"], x["checked_against"]) for x in done["assets"]] == [
                ("Acme-TsukuA-1.0.tar.gz", ["cpan_checksums"]),
                ("Acme-TsukuB-2.5.tar.gz", ["cpan_checksums"]),
            ]
            assert done["assets"][1]["sha256"] == sha256(b.tarball).hexdigest()
            ran = subprocess.run([str(t.home / "bin" / script)], capture_output=True, text=True)
            assert ran.returncode == 0, ran.stderr
            assert ran.stdout == f"{script} 1.0 \n"
            lib = t.home / "tools" / f"{name}-1.0" / "lib" / "perl5" / "Acme"
            assert sorted(p.name for p in lib.iterdir()) == ["TsukuA.pm", "TsukuB.pm"]
