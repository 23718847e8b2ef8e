"""``install/cpan_deps.py``: what a CPAN distribution requires, read from its META file
as bytes (hostile ones refused), and the distributions gathered for it through the
mirror's index; and ``cpan.py``'s shell gathering them over the fake mirror, each
checked against its author's CHECKSUMS. The real cpanm building them is
tests/integration/source_build/test_cpan_install.py."""

from __future__ import annotations

import gzip
import io
import json
import tarfile
from collections.abc import AsyncIterator, Mapping
from importlib import resources
from pathlib import Path
from types import MappingProxyType

import pytest

from tsukud.install.cpan import INDEX, fetch_distribution, mirror_index
from tsukud.install.cpan_deps import (
    CORE_FILE,
    MAX_REQUIREMENTS,
    Dependency,
    core_modules,
    distribution_requires,
    gather,
    meta_json_requires,
    meta_yml_requires,
)
from tsukud.install.cpan_index import IndexEntry, parse_index
from tsukud.install.download import ChecksumMismatch
from tsukud.install.errors import (
    CpanDependencyUnavailable,
    CpanMetaInvalid,
    CpanTooManyDependencies,
)
from tsukud.install.extract import (
    ArchiveLimitExceeded,
    CorruptArchive,
    ExtractLimits,
    UnsafeArchive,
    read_files,
)
from tsukud.net.http import Http, RetryPolicy, Settings
from tsukud.recipe import CpanInstallStep
from tsukud.recipe.model import ArchiveFormat
from tsukud.sandbox.runtime import BUILD_IMAGE
from tsukud.testing.cpan import FakeCpanMirror, meta_json, perl_distribution


def _tar(members: dict[str, bytes], *, link: str | None = None) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
        if link is not None:
            info = tarfile.TarInfo(link)
            info.type, info.linkname = tarfile.SYMTYPE, "/etc/passwd"
            tar.addfile(info)
    return buf.getvalue()


def _meta(requires: dict[str, dict[str, object]]) -> bytes:
    return json.dumps({"name": "X", "prereqs": requires}).encode()


# ---- META.json


def test_configure_build_and_runtime_requires_are_read_and_tests_needs_are_not() -> None:
    meta = _meta(
        {
            "configure": {"requires": {"Module::Build": "0.42"}},
            "build": {"requires": {"Acme::Builder": 0}},
            "runtime": {
                "requires": {"Acme::Run": "1.10", "Acme::Range": ">= 1.2, < 2.0"},
                "recommends": {"Acme::Nice": "0"},  # only what is required
            },
            "test": {"requires": {"Test::Deep": "1"}},  # cpanm runs --notest
            "develop": {"requires": {"Dist::Zilla": "6"}},
        }
    )
    assert meta_json_requires(meta, "X-1.tar.gz") == {
        "Module::Build": "0.42",
        "Acme::Builder": "0",
        "Acme::Run": "1.10",
        "Acme::Range": ">= 1.2, < 2.0",
    }
    # Versions as numbers keep their text (1.10 is not 1.1 to Perl).
    assert meta_json_requires(b'{"prereqs":{"runtime":{"requires":{"A::B":1.10}}}}', "x") == {
        "A::B": "1.10"
    }
    # meta-spec 1.x written as JSON: META.yml's keys.
    v1 = {"requires": {"A": "1"}, "build_requires": {"B": 0}, "configure_requires": {}}
    assert meta_json_requires(json.dumps(v1).encode(), "x") == {"A": "1", "B": "0"}
    # The same module in two phases: both ranges are kept for cpanm to check.
    both = _meta({"build": {"requires": {"A": "1"}}, "runtime": {"requires": {"A": "2"}}})
    assert meta_json_requires(both, "x") == {"A": "1, 2"}


@pytest.mark.parametrize(
    ("data", "says"),
    [
        (b"not json", "META.json is not JSON"),
        (b"[1, 2]", "not a JSON object"),
        (b"\xff\xfe", "not JSON"),
        (b'{"prereqs": []}', "prereqs is not a table"),
        (b'{"prereqs": {"runtime": []}}', "prereqs.runtime is not a table"),
        (b'{"prereqs": {"runtime": {"requires": ["A"]}}}', "requires is not a table"),
        (b'{"requires": ["A"]}', "requires is not a table"),
        # A name cpanm would take as something else (a path, a URL, an option, a shell).
        (_meta({"runtime": {"requires": {"../../etc/passwd": "0"}}}), "not a Perl module"),
        (_meta({"runtime": {"requires": {"--installdeps": "0"}}}), "not a Perl module"),
        (_meta({"runtime": {"requires": {"A; rm -rf /": "0"}}}), "not a Perl module"),
        (_meta({"runtime": {"requires": {"http://evil/A.tar.gz": "0"}}}), "not a Perl module"),
        (_meta({"runtime": {"requires": {"A": "1\n2"}}}), "not plain version text"),
        (_meta({"runtime": {"requires": {"A": "1" * 200}}}), "not plain version text"),
        (_meta({"runtime": {"requires": {"A": {"v": 1}}}}), "not plain version text"),
        (b'{"prereqs": {"runtime": {"requires": {"A": null}}}}', "not plain version text"),
        (b"[" * 100_000 + b"]" * 100_000, "not JSON"),  # nesting past the parser's depth
    ],
)
def test_a_meta_json_that_is_not_the_specs_plain_data_is_refused(data: bytes, says: str) -> None:
    with pytest.raises(CpanMetaInvalid) as err:
        meta_json_requires(data, "Evil-1.0.tar.gz")
    assert says in err.value.message and err.value.data["file"] == "Evil-1.0.tar.gz"
    assert err.value.hint is not None and "nothing was installed" in err.value.hint


def test_more_modules_than_a_distribution_needs_are_refused() -> None:
    many = {f"A::M{i}": "0" for i in range(MAX_REQUIREMENTS + 1)}
    with pytest.raises(CpanMetaInvalid, match=f"more than {MAX_REQUIREMENTS} modules"):
        meta_json_requires(_meta({"runtime": {"requires": many}}), "x")


# ---- META.yml: a strict subset


def test_meta_yml_is_read_for_its_three_blocks_and_nothing_else() -> None:
    text = (
        "---\n# a comment\nabstract: 'a: b'\nauthor:\n  - someone <a@b>\n"
        "build_requires:\n  ExtUtils::MakeMaker: 6.30\n"
        "configure_requires:\n  Module::Build: '0.42'\n"
        "no_index:\n  directory:\n    - t\n"  # another key's contents: passed over
        'requires:\n  Acme::Run: "1.10"\n  Acme::Any: ~\n  Acme::Bare:\n  perl: 5.008\n'
        "recommends:\n  Acme::Nice: 0\nversion: 1.0\n"
    )
    assert meta_yml_requires(text.encode(), "x") == {
        "ExtUtils::MakeMaker": "6.30",
        "Module::Build": "0.42",
        "Acme::Run": "1.10",
        "Acme::Any": "0",
        "Acme::Bare": "0",
        "perl": "5.008",
    }
    assert meta_yml_requires(b"name: X\nrequires: {}\n", "x") == {}


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("requires: {Acme::A: 1}\n", "requires is not a block of modules"),
        ("requires: &anchor\n  A: 1\n", "requires is not a block of modules"),
        ("requires: !!map\n  A: 1\n", "requires is not a block of modules"),
        ("requires:\n  - Acme::A\n", "line 2 under requires is not 'Module: version'"),
        ("requires:\n  A: [1, 2]\n", "is not 'Module: version'"),
        ("requires:\n  A: |\n    1\n", "is not 'Module: version'"),
        ("requires:\n\tA: 1\n", "is not 'Module: version'"),
        ("requires:\n  A: *alias\n", "not plain version text"),
        ("requires:\n  'A': 1\n", "not a Perl module name"),
        ("requires:\n  A;rm: 1\n", "is not 'Module: version'"),
        ("requires:\n  A::::B: 1\n", "not a Perl module name"),
        ("? complex\n: key\n", "line 1 is not a 'key: value' line"),
    ],
)
def test_meta_yml_beyond_the_subset_is_refused_rather_than_guessed(text: str, says: str) -> None:
    with pytest.raises(CpanMetaInvalid) as err:
        meta_yml_requires(text.encode(), "Evil-1.0.tar.gz")
    assert says in err.value.message


# ---- the tarball: read as bytes, hostile archives refused


def test_the_top_directorys_meta_json_wins_and_meta_yml_is_read_only_without_it() -> None:
    yml = b"requires:\n  From::Yml: 1\n"
    json_ = _meta({"runtime": {"requires": {"From::Json": "1"}}})
    both = _tar({"X-1/META.yml": yml, "X-1/META.json": json_, "X-1/t/META.json": b"junk"})
    assert distribution_requires(both, "X-1.tar.gz") == {"From::Json": "1"}
    assert distribution_requires(_tar({"X-1/META.yml": yml}), "x") == {"From::Yml": "1"}
    # No META at all (a Makefile.PL-only release): nothing read; cpanm says in the container.
    assert distribution_requires(_tar({"X-1/Makefile.PL": b"die"}), "x") == {}
    # A link named META.json is never followed.
    assert distribution_requires(_tar({}, link="X-1/META.json"), "x") == {}
    # The fake mirror's releases carry MakeMaker's META.json, or an older META.yml.
    for meta in ("json", "yml"):
        dist = perl_distribution("Acme-A", "1.0", "a", requires={"Acme::B": "2"}, meta=meta)
        assert distribution_requires(dist.tarball, "x") == {
            "ExtUtils::MakeMaker": "0",
            "Acme::B": "2",
        }


def test_a_hostile_tarball_is_refused_before_its_meta_is_believed() -> None:
    meta = _meta({})
    with pytest.raises(UnsafeArchive, match="escapes the destination"):
        distribution_requires(_tar({"X-1/META.json": meta, "../x": b""}), "x")
    with pytest.raises(UnsafeArchive, match="absolute path"):
        distribution_requires(_tar({"/X-1/META.json": meta}), "x")
    # Two META.json under one name: which one cpanm sees is not for the archive to pick.
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for data in (meta, _meta({"runtime": {"requires": {"Other": "1"}}})):
            info = tarfile.TarInfo("X-1/META.json")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    with pytest.raises(UnsafeArchive, match="given twice"):
        distribution_requires(buf.getvalue(), "x")
    with pytest.raises(CpanMetaInvalid, match=r"2 top directories with a META\.json"):
        distribution_requires(_tar({"X-1/META.json": meta, "Y-1/META.json": meta}), "x")
    big = b'{"name": "' + b"x" * (1024 * 1024) + b'"}'
    with pytest.raises(ArchiveLimitExceeded, match=r"META\.json is larger than"):
        distribution_requires(_tar({"X-1/META.json": big}), "x")
    with pytest.raises(CorruptArchive):
        distribution_requires(b"not a tarball", "x")


# ---- resolution


def _entry(module: str, dist: str) -> IndexEntry:
    return IndexEntry(module, "1.0", f"T/TS/TSUKU/{dist}-1.0.tar.gz")


def _dist(dist: str, requires: dict[str, str]) -> bytes:
    text = meta_json(dist, "1.0", requires).encode()
    return _tar({f"{dist}-1.0/META.json": text})


class Mirror:
    """Distributions by path, and which were fetched, in order."""

    def __init__(
        self, dists: dict[str, dict[str, str]], *, also: Mapping[str, str] = MappingProxyType({})
    ) -> None:
        self.index = {d.replace("-", "::"): _entry(d.replace("-", "::"), d) for d in dists}
        self.index.update({m: _entry(m, d) for m, d in also.items()})
        self.data = {_entry("", d).path: _dist(d, r) for d, r in dists.items()}
        self.fetched: list[str] = []

    async def fetch(self, entry: IndexEntry) -> bytes:
        self.fetched.append(entry.file)
        return self.data[entry.path]

    async def gather(self, root: str, **caps: int) -> list[Dependency]:
        entry = self.index[root.replace("-", "::")]
        return await gather(entry, self.data[entry.path], self.index, self.fetch, **caps)


async def test_core_modules_and_perl_are_skipped_and_the_rest_gathered_recursively() -> None:
    mirror = Mirror(
        {
            "Acme-A": {"Acme::B": "1", "perl": "5.008", "File::Spec": "3", "Carp": "0"},
            "Acme-B": {"Acme::C": "0", "Acme::C::Util": "0"},  # two modules of one dist
            "Acme-C": {"List::Util": "1.45"},
            "Acme-Unused": {},
        },
        also={"Acme::C::Util": "Acme-C"},
    )
    deps = await mirror.gather("Acme-A")
    assert [(d.entry.file, d.entry.module, d.needed_by) for d in deps] == [
        ("Acme-B-1.0.tar.gz", "Acme::B", "Acme-A-1.0.tar.gz"),
        ("Acme-C-1.0.tar.gz", "Acme::C", "Acme-B-1.0.tar.gz"),
    ]
    assert mirror.fetched == ["Acme-B-1.0.tar.gz", "Acme-C-1.0.tar.gz"]  # each once


async def test_a_cycle_is_gathered_once_and_ends() -> None:
    mirror = Mirror(
        {"Acme-A": {"Acme::B": "0"}, "Acme-B": {"Acme::A": "0", "Acme::B": "0"}},
    )
    deps = await mirror.gather("Acme-A")
    assert [d.entry.file for d in deps] == ["Acme-B-1.0.tar.gz"]
    assert mirror.fetched == ["Acme-B-1.0.tar.gz"]


async def test_a_module_the_mirror_does_not_index_names_it_and_who_needs_it() -> None:
    mirror = Mirror({"Acme-A": {"Acme::B": "0"}, "Acme-B": {"Acme::Gone": "1.2"}})
    with pytest.raises(CpanDependencyUnavailable) as err:
        await mirror.gather("Acme-A")
    e = err.value
    assert e.code == "cpan_dependency_unavailable"
    assert e.message == (
        "Acme-B-1.0.tar.gz requires the module Acme::Gone, which perl does not carry and "
        "the CPAN mirror does not index"
    )
    assert e.data == {"module": "Acme::Gone", "needed_by": "Acme-B-1.0.tar.gz"}
    assert e.hint is not None and "cpan.mirror_url" in e.hint
    # An index that points a dependency out of the mirror's tree is refused unfetched.
    bad = Mirror({"Acme-A": {"Acme::B": "0"}})
    bad.index["Acme::B"] = IndexEntry("Acme::B", "1", "T/TS/TSUKU/../../../../etc/B-1.tar.gz")
    with pytest.raises(CpanDependencyUnavailable, match="not a CPAN distribution's path"):
        await bad.gather("Acme-A")
    assert bad.fetched == []


async def test_the_caps_on_distributions_and_bytes_stop_the_gathering() -> None:
    chain = {f"Acme-D{i}": {f"Acme::D{i + 1}": "0"} for i in range(5)} | {"Acme-D5": {}}
    assert len(await Mirror(chain).gather("Acme-D0")) == 5
    mirror = Mirror(chain)
    with pytest.raises(CpanTooManyDependencies) as err:
        await mirror.gather("Acme-D0", max_distributions=3)
    e = err.value
    assert e.code == "cpan_too_many_dependencies"
    assert "more than 3 distributions" in e.message
    assert e.data == {"cap": "distributions", "limit": 3, "needed_by": "Acme-D0-1.0.tar.gz"}
    assert len(mirror.fetched) == 3  # the fourth is never fetched
    size = len(mirror.data[_entry("", "Acme-D1").path])
    with pytest.raises(CpanTooManyDependencies, match=f"more than {2 * size} bytes"):
        await Mirror(chain).gather("Acme-D0", max_bytes=2 * size)


def test_the_core_list_is_the_build_images_perl() -> None:
    core = core_modules()
    assert {"ExtUtils::MakeMaker", "File::Spec", "List::Util", "Carp", "JSON::PP"} <= core
    assert "Acme::B" not in core and "Moose" not in core
    # The list was asked of this image: another image (its tag changes with what it
    # carries) needs the list asked of it again.
    data = json.loads(resources.files("tsukud.install").joinpath(CORE_FILE).read_text())
    assert data["image"] == BUILD_IMAGE and data["perl"] == "5.036000"


# ---- the shell: every distribution checked against its author's CHECKSUMS


@pytest.fixture
async def http() -> AsyncIterator[Http]:
    h = Http(settings=Settings(retry=RetryPolicy(max_tries=1)), allowed_hosts=lambda: {"127.0.0.1"})
    yield h
    await h.aclose()


STEP = CpanInstallStep(distribution="Acme-A", executables=("a",))


async def test_the_dependencies_are_fetched_checked_and_indexed_in_the_local_mirror(
    http: Http, tmp_path: Path
) -> None:
    root = tmp_path
    a = perl_distribution("Acme-A", "1.0", "a", requires={"Acme::B": "1"})
    b = perl_distribution("Acme-B", "1.5", None)
    with FakeCpanMirror() as mirror:
        for d in (a, b, perl_distribution("Acme-Other", "1.0", None)):
            mirror.publish(d)
        local = await fetch_distribution(http, mirror.url, STEP, "1.0", root / "ok")
        # One CHECKSUMS read for the author's directory both are in; Acme-Other untouched.
        assert mirror.paths() == [
            f"/{INDEX}",
            "/authors/id/T/TS/TSUKU/CHECKSUMS",
            f"/authors/id/{a.path}",
            f"/authors/id/{b.path}",
        ]
        assert [e.file for e in local.entries] == ["Acme-A-1.0.tar.gz", "Acme-B-1.5.tar.gz"]
        assert (root / "ok" / "authors" / "id" / b.path).read_bytes() == b.tarball
        index = parse_index(gzip.decompress((root / "ok" / INDEX).read_bytes()).decode())
        assert sorted(index) == ["Acme::A", "Acme::B"]
        assert index["Acme::B"].path == b.path

        # A dependency swapped on the mirror (its CHECKSUMS as published): refused, and
        # nothing, not even the good distribution, is laid out.
        evil = perl_distribution("Acme-B", "1.5", None, marker=root / "ran")
        mirror.swap(b, evil.tarball)
        with pytest.raises(ChecksumMismatch) as err:
            await fetch_distribution(http, mirror.url, STEP, "1.0", root / "swapped")
        assert err.value.data["file"] == "Acme-B-1.5.tar.gz"
    assert not (root / "swapped").exists() and not (root / "ran").exists()


def test_the_local_index_lists_every_module_of_the_fetched_distributions_only() -> None:
    a = IndexEntry("Acme::A", "1.0", "T/TS/TSUKU/Acme-A-1.0.tar.gz")
    b = IndexEntry("Acme::B", "1.5", "T/TS/TSUKU/Acme-B-1.5.tar.gz")
    index = {
        "Acme::A": a,
        "Acme::B": b,
        "Acme::B::Util": IndexEntry("Acme::B::Util", "undef", b.path),
        "Acme::Other": IndexEntry("Acme::Other", "1", "T/TS/TSUKU/Acme-Other-1.tar.gz"),
    }
    text = gzip.decompress(mirror_index(index, a, [Dependency(b, b"", a.file)])).decode()
    assert sorted(parse_index(text)) == ["Acme::A", "Acme::B", "Acme::B::Util"]
    assert "Line-Count:   3\n" in text


def test_reading_a_file_out_of_a_bomb_stops_at_the_limits_not_at_the_end() -> None:
    """``extract.read_files`` charges what it decompresses, not what headers claim."""
    limits = ExtractLimits(max_entries=5, ratio_floor_bytes=1024 * 1024, max_ratio=10)
    bomb = _tar({"X-1/zeros": b"\0" * (4 * 1024 * 1024), "X-1/META.json": b"{}"})
    meta = lambda parts: parts[-1] == "META.json"  # noqa: E731 - the one rule, three reads
    # The zeros are not wanted, but skipping them in the stream still decompresses them.
    with pytest.raises(ArchiveLimitExceeded, match="compression ratio limit"):
        read_files(bomb, ArchiveFormat.TAR_GZ, meta, max_file_bytes=10, limits=limits)
    many = _tar({f"X-1/f{i}": b"" for i in range(6)})
    with pytest.raises(ArchiveLimitExceeded, match="more than 5 entries"):
        read_files(many, ArchiveFormat.TAR_GZ, lambda _: False, max_file_bytes=10, limits=limits)
    ok = _tar({"X-1/META.json": b"{}", "X-1/other": b"x"})
    got = read_files(ok, ArchiveFormat.TAR_GZ, meta, max_file_bytes=10, limits=limits)
    assert got == {"X-1/META.json": b"{}"}
