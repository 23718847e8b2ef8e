"""``install/cpan.py``'s pure part: which file of the mirror is the distribution, what
its author's CHECKSUMS must say of it, the cpanm script and container, and tsuku's
wrapper; and its shell over the fake mirror. The real cpanm in the real build container
is tests/integration/source_build/test_cpan_install.py."""

from __future__ import annotations

import gzip
import hashlib
import os
import shlex
import subprocess
import urllib.error
import urllib.request
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.unit.container_isolation import isolated_mounts
from tsukud.install.build import BUILD_DIR
from tsukud.install.cpan import (
    INDEX,
    MIRROR_DIR,
    check_distribution,
    check_executables,
    checksums_path,
    choose_distribution,
    cpanm_spec,
    fetch_distribution,
    mirror_index,
    module_of,
    release_version,
    vouched_sums,
    wrapper,
    write_wrappers,
)
from tsukud.install.cpan_index import IndexEntry, parse_index
from tsukud.install.download import ChecksumMismatch
from tsukud.install.errors import BuildFailed, CpanDistributionUnavailable
from tsukud.net.http import Http, RetryPolicy, Settings
from tsukud.recipe import CpanInstallStep
from tsukud.registries.cpan_checksums import CpanChecksumsInvalid, FileSums
from tsukud.testing.cpan import (
    ChecksumsMode,
    FakeCpanMirror,
    checksums_file,
    packages_index,
    perl_distribution,
)
from tsukud.testing.http import Reply

STEP = CpanInstallStep(distribution="Acme-Hello", executables=("hello",))
PATH = "T/TS/TSUKU/Acme-Hello-1.0.tar.gz"
ENTRY = IndexEntry("Acme::Hello", "1.0", PATH)
CHECKSUMS = "T/TS/TSUKU/CHECKSUMS"


def _index(path: str = PATH, module: str = "Acme::Hello") -> dict[str, IndexEntry]:
    return {module: IndexEntry(module, "1.0", path)}


def test_the_module_is_the_steps_or_the_distribution_with_double_colons() -> None:
    assert module_of(STEP) == "Acme::Hello"
    assert module_of(CpanInstallStep(distribution="ack", module="App::Ack")) == "App::Ack"


@pytest.mark.parametrize(
    ("file", "version"),
    [
        ("Acme-Hello-1.0.tar.gz", "1.0"),
        ("Acme-Hello-v1.0.35.tgz", "1.0.35"),  # Carton-v1.0.35.tar.gz is carton 1.0.35
        ("Acme-Hello-1.02_01.tar.gz", "1.02_01"),
        ("Acme-Hello-World-1.0.tar.gz", None),  # another distribution
        ("Acme-Hello-1.0.zip", None),
        ("Acme-Hello-.tar.gz", None),
        ("Acme-Hello-1.0;rm.tar.gz", None),
    ],
)
def test_the_metacpan_source_reads_the_version_from_the_indexed_file(
    file: str, version: str | None
) -> None:
    assert release_version(file, "Acme-Hello") == version


def test_pauses_index_is_read_past_its_header() -> None:
    text = gzip.decompress(packages_index([perl_distribution("Acme-Hello", "1.0", "h")]))
    assert parse_index(text.decode()) == {"Acme::Hello": ENTRY}
    # The index written for the container's mirror reads back as that line alone.
    assert parse_index(gzip.decompress(mirror_index({}, ENTRY)).decode()) == {"Acme::Hello": ENTRY}


def test_the_distribution_is_the_indexed_file_of_that_name_and_version() -> None:
    assert choose_distribution(_index(), STEP, "1.0", "m") == ENTRY
    tgz = _index("T/TS/TSUKU/sub/Acme-Hello-1.0.tgz")
    assert choose_distribution(tgz, STEP, "1.0", "m").file == "Acme-Hello-1.0.tgz"
    # CPAN names carton 1.0.35's file Carton-v1.0.35.tar.gz.
    v = _index("M/MI/MIYAGAWA/Acme-Hello-v1.0.tar.gz")
    assert choose_distribution(v, STEP, "1.0", "m").file == "Acme-Hello-v1.0.tar.gz"
    assert choose_distribution(v, STEP, "v1.0", "m").file == "Acme-Hello-v1.0.tar.gz"


@pytest.mark.parametrize(
    ("index", "version", "says"),
    [
        (_index(module="Acme::Other"), "1.0", "does not index the module Acme::Hello"),
        (_index(), "0.9", "not in Acme-Hello 0.9"),  # the mirror has another release
        (_index("T/TS/TSUKU/Acme-Evil-1.0.tar.gz"), "1.0", "not in Acme-Hello"),
        (_index("T/TS/TSUKU/../../../x/Acme-Hello-1.0.tar.gz"), "1.0", "not in"),
        (_index("/etc/Acme-Hello-1.0.tar.gz"), "1.0", "not in"),
        (_index("http://elsewhere/Acme-Hello-1.0.tar.gz"), "1.0", "not in"),
        (_index("T/TS/TSUKU/Acme-Hello-1.0.zip"), "1.0", "not in"),
    ],
)
def test_what_the_mirror_does_not_serve_for_that_version_is_refused_with_a_hint(
    index: dict[str, IndexEntry], version: str, says: str
) -> None:
    with pytest.raises(CpanDistributionUnavailable) as err:
        choose_distribution(index, STEP, version, "m")
    assert says in err.value.message
    assert err.value.hint is not None and "nothing was installed" in err.value.hint


def test_the_checksums_vouching_for_a_file_are_its_own_directorys() -> None:
    assert checksums_path(ENTRY) == CHECKSUMS
    sub = IndexEntry("Acme::Hello", "1.0", "T/TS/TSUKU/sub/Acme-Hello-1.0.tgz")
    assert checksums_path(sub) == "T/TS/TSUKU/sub/CHECKSUMS"


DATA = b"the distribution's bytes"
SUMS = FileSums(sha256=hashlib.sha256(DATA).hexdigest(), size=len(DATA))


def test_a_file_checksums_do_not_give_a_sha256_for_is_not_vouched_for() -> None:
    assert vouched_sums({ENTRY.file: SUMS, "other": FileSums()}, ENTRY, "u") == SUMS
    for sums, says in (
        ({"Acme-Hello-1.1.tar.gz": SUMS}, "has no entry for Acme-Hello-1.0.tar.gz"),
        ({ENTRY.file: FileSums(size=3)}, "has an entry without a sha256"),
    ):
        with pytest.raises(CpanDistributionUnavailable) as err:
            vouched_sums(sums, ENTRY, "https://m/authors/id/T/TS/TSUKU/CHECKSUMS")
        assert says in err.value.message
        assert err.value.data["checksums"] == "https://m/authors/id/T/TS/TSUKU/CHECKSUMS"
        assert "CHECKSUMS for T/TS/TSUKU lacks" in err.value.hint
        assert "Nothing was installed" in err.value.hint


def test_bytes_other_than_the_ones_checksums_name_are_a_checksum_mismatch() -> None:
    check_distribution(ENTRY, DATA, SUMS, "u")
    check_distribution(ENTRY, DATA, FileSums(sha256=SUMS.sha256), "u")  # no size given
    swapped = DATA.replace(b"the", b"evil")
    for data, sums, says in (
        (swapped, SUMS, f"says sha256 {SUMS.sha256}, the download has sha256 "),
        # A CHECKSUMS whose size disagrees with its own sha256 vouches for nothing.
        (DATA, FileSums(sha256=SUMS.sha256, size=len(DATA) + 1), "says 25 bytes"),
    ):
        with pytest.raises(ChecksumMismatch) as err:
            check_distribution(ENTRY, data, sums, "https://m/CHECKSUMS")
        e = err.value
        assert e.code == "checksum_mismatch" and e.data["file"] == ENTRY.file
        assert says in e.message and "the mirror's https://m/CHECKSUMS" in e.message
        assert "not the file its CHECKSUMS names" in e.hint and "nothing was installed" in e.hint


def test_cpanm_runs_in_the_isolated_container_from_the_mirror_copy_only(tmp_path: Path) -> None:
    mirror, scratch, out = tmp_path / "m", tmp_path / "b", tmp_path / "out"
    where = "/home/u/.tsuku/tools/hello-1.0"
    spec = cpanm_spec(
        "img", ENTRY, STEP, mirror=mirror, scratch=scratch, output=out, where=where, labels={}
    )
    config, mounts = spec.container_config(), isolated_mounts(spec)
    assert mounts == {
        (str(mirror), MIRROR_DIR): True,  # the fetched bytes are never written
        (str(scratch), BUILD_DIR): False,
        (str(out), where): False,  # the tool's directory at the path it will have
    }
    assert config["User"] == f"{os.getuid()}:{os.getgid()}"
    assert not [e for e in config["Env"] if e.startswith("PERL") and "CPANM_HOME" not in e]
    assert "SOURCE_DATE_EPOCH=0" in config["Env"]
    lines = config["Cmd"][2].splitlines()
    cpanm = next(shlex.split(x) for x in lines if x.startswith("cpanm "))
    assert cpanm == [
        "cpanm",
        "--mirror",
        f"file://{MIRROR_DIR}",
        "--mirror-only",
        "--local-lib",
        where,
        "--notest",
        "--verbose",
        f"{MIRROR_DIR}/authors/id/{PATH}",
    ]
    assert f"[ -f {where}/bin/hello ] ||" in config["Cmd"][2]


def test_executables_that_are_not_file_names_in_bin_are_refused() -> None:
    check_executables(["hello", "ack-grep", "perl5.36"])
    for bad in ("../hello", "a/b", "$(x)", "a b", ""):
        with pytest.raises(BuildFailed):
            check_executables([bad])


def test_the_wrapper_sets_perl5lib_and_runs_the_renamed_script(tmp_path: Path) -> None:
    tool = tmp_path / "tools" / "hello 1.0"  # a space: every path quoted
    (tool / "bin").mkdir(parents=True)
    (tool / "lib" / "perl5").mkdir(parents=True)
    (tool / "bin" / "hello").write_text('#!/usr/bin/perl\nprint "$ENV{PERL5LIB} @ARGV\\n";\n')
    binaries = write_wrappers(tool, str(tool), ["hello"])
    assert binaries["hello"]["path"] == "bin/hello"
    assert (tool / "bin" / "hello").read_text() == wrapper("hello", str(tool))
    assert (tool / "bin" / "hello.cpanm").is_file()
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "PERL5LIB": "/elsewhere"}
    ran = subprocess.run(
        [str(tool / "bin" / "hello"), "a b", "c"], capture_output=True, text=True, env=env
    )
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout == f"{tool}/lib/perl5 a b c\n"


# ---- the shell over the fake mirror: bytes only, laid out as a mirror; what CPAN refuses


@pytest.fixture
async def http() -> AsyncIterator[Http]:
    h = Http(settings=Settings(retry=RetryPolicy(max_tries=1)), allowed_hosts=lambda: {"127.0.0.1"})
    yield h
    await h.aclose()


async def test_the_distribution_is_fetched_as_bytes_into_a_one_file_mirror(
    http: Http, tmp_path: Path
) -> None:
    dist = perl_distribution("Acme-Hello", "1.0", "hello")
    with FakeCpanMirror() as mirror:
        mirror.publish(perl_distribution("Acme-Other", "2.0", "other"))
        mirror.publish(dist)
        entry = (await fetch_distribution(http, mirror.url + "/", STEP, "1.0", tmp_path)).entry
        assert mirror.paths() == [f"/{INDEX}", f"/authors/id/{CHECKSUMS}", f"/authors/id/{PATH}"]
    assert entry == ENTRY
    assert (tmp_path / "authors" / "id" / PATH).read_bytes() == dist.tarball
    index = gzip.decompress((tmp_path / INDEX).read_bytes()).decode()
    assert parse_index(index) == {"Acme::Hello": ENTRY}  # the other distribution is not


async def test_a_mirror_that_lacks_the_release_or_its_file_installs_nothing(
    http: Http, tmp_path: Path
) -> None:
    with FakeCpanMirror() as mirror:
        mirror.publish(perl_distribution("Acme-Hello", "1.1", "hello"))
        with pytest.raises(CpanDistributionUnavailable) as err:
            await fetch_distribution(http, mirror.url, STEP, "1.0", tmp_path / "a")
        assert "indexes Acme::Hello in T/TS/TSUKU/Acme-Hello-1.1.tar.gz" in err.value.message
        assert mirror.paths() == [f"/{INDEX}"]  # the other release was not fetched
        # An indexed path the mirror does not serve is CPAN's 404, and said so.
        sums = checksums_file({"Acme-Hello-1.1.tar.gz": mirror.dists[0].tarball})
        mirror.push(
            Reply(body=packages_index(mirror.dists)),
            Reply(body=sums),
            Reply(404, body=b"not found"),
        )
        with pytest.raises(CpanDistributionUnavailable) as err:
            await fetch_distribution(http, mirror.url, STEP, "1.1", tmp_path / "b")
        assert "could not be fetched" in err.value.message
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()


async def test_a_swapped_file_is_refused_before_its_bytes_are_written(
    http: Http, tmp_path: Path
) -> None:
    dist = perl_distribution("Acme-Hello", "1.0", "hello")
    evil = perl_distribution("Acme-Hello", "1.0", "hello", marker=tmp_path / "ran")
    with FakeCpanMirror() as mirror:
        mirror.publish(dist)
        mirror.swap(dist, evil.tarball)  # CHECKSUMS still says dist's
        with pytest.raises(ChecksumMismatch) as err:
            await fetch_distribution(http, mirror.url, STEP, "1.0", tmp_path / "m")
        assert err.value.message.startswith(
            f"checksum mismatch for Acme-Hello-1.0.tar.gz: the mirror's {mirror.url}/authors/"
            f"id/{CHECKSUMS} says sha256 {hashlib.sha256(dist.tarball).hexdigest()}, the "
            f"download has sha256 {hashlib.sha256(evil.tarball).hexdigest()}"
        )
        # CHECKSUMS itself lying about the sha256 (its sizes true) is the same refusal.
        mirror.swapped.clear()
        mirror.checksums = "wrong_sha256"
        with pytest.raises(ChecksumMismatch):
            await fetch_distribution(http, mirror.url, STEP, "1.0", tmp_path / "m")
    assert not (tmp_path / "m").exists()


@pytest.mark.parametrize(
    ("mode", "says"),
    [
        ("missing", "serves no CHECKSUMS for T/TS/TSUKU"),
        ("no_entry", "CHECKSUMS for T/TS/TSUKU lacks"),
    ],
)
async def test_a_mirror_whose_checksums_do_not_vouch_for_the_file_installs_nothing(
    http: Http, tmp_path: Path, mode: ChecksumsMode, says: str
) -> None:
    with FakeCpanMirror() as mirror:
        mirror.publish(perl_distribution("Acme-Hello", "1.0", "hello"))
        mirror.checksums = mode
        with pytest.raises(CpanDistributionUnavailable) as err:
            await fetch_distribution(http, mirror.url, STEP, "1.0", tmp_path)
        assert says in err.value.hint and "Nothing was installed" in err.value.hint
        # The file CHECKSUMS does not vouch for is not even fetched.
        assert mirror.paths() == [f"/{INDEX}", f"/authors/id/{CHECKSUMS}"]
    assert not (tmp_path / "authors").exists() and not (tmp_path / "modules").exists()


async def test_checksums_that_are_not_cpans_data_are_refused_unrun(
    http: Http, tmp_path: Path
) -> None:
    with FakeCpanMirror() as mirror:
        mirror.publish(perl_distribution("Acme-Hello", "1.0", "hello"))
        hostile = b"$cksum = do { system('touch " + str(tmp_path / "ran").encode() + b"') };\n"
        mirror.push(Reply(body=packages_index(mirror.dists)), Reply(body=hostile))
        with pytest.raises(CpanChecksumsInvalid) as err:
            await fetch_distribution(http, mirror.url, STEP, "1.0", tmp_path / "m")
        assert "'do' is not plain data" in err.value.message
    assert not (tmp_path / "ran").exists() and not (tmp_path / "m").exists()


def test_the_fake_mirror_answers_only_what_a_mirror_serves() -> None:
    with FakeCpanMirror() as mirror:
        mirror.publish(perl_distribution("Acme-Hello", "1.0", "hello"))
        get = urllib.request.urlopen
        with get(f"{mirror.url}/authors/id/{PATH}") as answer:
            assert answer.status == 200
        with get(f"{mirror.url}/authors/id/{CHECKSUMS}") as answer:
            assert answer.read().startswith(b"0&&<<''; # this PGP-signed message")
        for path in (
            "authors/id/T/TS/TSUKU/Acme-Hello-0.9.tar.gz",
            "modules/other",
            "",
            "authors/id/O/OT/OTHER/CHECKSUMS",  # an author with nothing published
        ):
            with pytest.raises(urllib.error.HTTPError) as err:
                get(f"{mirror.url}/{path}")
            assert err.value.code == 404
        post = urllib.request.Request(f"{mirror.url}/{INDEX}", data=b"x", method="POST")
        with pytest.raises(urllib.error.HTTPError) as err:
            get(post)
        assert err.value.code == 405
