"""A fake CPAN mirror on loopback (``TSUKU_CPAN_MIRROR_URL=<url>``), laid out as every
CPAN mirror is: ``modules/02packages.details.txt.gz`` (PAUSE's index: a header, a blank
line, then ``Module::Name  version  A/AU/AUTHOR/Dist-1.0.tar.gz`` per package), the
distributions under ``authors/id/``, and beside them each author directory's
``CHECKSUMS`` as PAUSE writes it (:func:`checksums_file`: Data::Dumper's hash of each
file's sha256, md5 and size, in a PGP clearsigned message whose signature is made up:
tsuku does not check it). Anything else is a 404, as a mirror answers; only GET and
HEAD are served.

A test attacks the mirror with :attr:`FakeCpanMirror.checksums` (``"wrong_sha256"``,
``"no_entry"``, ``"missing"``; ``"published"`` by default) or
:meth:`FakeCpanMirror.swap` (another file served where a distribution's is, its
CHECKSUMS left as published: a mirror or proxy that swapped the bytes).

:func:`perl_distribution` builds a tiny pure-Perl distribution the real ``cpanm``
installs: a ``Makefile.PL`` (ExtUtils::MakeMaker, which Debian's perl carries), a
module, and a script in ``script/`` that prints the module's version and its arguments.
Its ``Makefile.PL`` can also write a marker at a host path: that path exists only on
the host, so the marker shows the distribution's code ran there.

    with FakeCpanMirror() as mirror:
        mirror.publish(perl_distribution("Acme-Hello", "1.0", "hello-cpan"))
        env = mirror.env()   # TSUKU_CPAN_MIRROR_URL
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import posixpath
import tarfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Literal
from urllib.parse import unquote

from tsukud.testing.http import FakeHTTPServer, RecordedRequest, Reply

AUTHOR = "TSUKU"
INDEX = "modules/02packages.details.txt.gz"


@dataclass(frozen=True)
class PerlDistribution:
    name: str  # Acme-Hello
    version: str
    module: str  # Acme::Hello
    tarball: bytes
    author: str = AUTHOR

    @property
    def path(self) -> str:
        """Where the index says it is, below ``authors/id/`` (``T/TS/TSUKU/...``)."""
        a = self.author
        return f"{a[0]}/{a[:2]}/{a}/{self.name}-{self.version}.tar.gz"


def perl_distribution(
    name: str,
    version: str,
    script: str | None,
    *,
    marker: Path | None = None,
    requires: Mapping[str, str] | None = None,
    meta: Literal["json", "yml", "none"] = "json",
) -> PerlDistribution:
    """``name``-``version``.tar.gz: the module named after the distribution, and
    ``script/<script>`` (none when ``script`` is None) printing ``<script> <module's
    $VERSION> <args>``; with ``marker``, ``Makefile.PL`` first writes that file (if it
    can: it runs in a container where the host's path does not exist). ``requires``
    (module → version) are runtime prerequisites as CPAN carries them: in the
    ``META.json`` (or ``META.yml``: ``meta``) a release is uploaded with and in
    ``Makefile.PL``'s ``PREREQ_PM``; the module ``use``s each of them, so it loads only
    where they are installed. ExtUtils::MakeMaker (perl's own) is its configure
    requirement, as a real release's META says."""
    module = name.replace("-", "::")
    requires = dict(requires or {})
    top = f"{name}-{version}"
    pm = f"lib/{module.replace('::', '/')}.pm"
    touch = (
        f"if (open(my $fh, '>', '{marker}')) {{ print $fh \"ran\\n\"; close($fh); }}\n"
        if marker is not None
        else ""
    )
    prereq = ", ".join(f"'{m}' => '{v}'" for m, v in requires.items())
    exe = f"EXE_FILES => ['script/{script}'], " if script is not None else ""
    uses = "".join(f"use {m};\n" for m in requires)
    files = {
        "Makefile.PL": (
            "use strict;\nuse ExtUtils::MakeMaker;\n"
            + touch
            + f"WriteMakefile(NAME => '{module}', VERSION_FROM => '{pm}', "
            f"{exe}PREREQ_PM => {{{prereq}}}, ABSTRACT => 'a fake');\n",
            0o644,
        ),
        pm: (f"package {module};\n{uses}our $VERSION = '{version}';\n1;\n", 0o644),
    }
    if script is not None:
        files[f"script/{script}"] = (
            f"#!/usr/bin/perl\nuse strict;\nuse {module};\n"
            f'print "{script} $' + module + '::VERSION @ARGV\\n";\n',
            0o755,
        )
    if meta == "json":
        files["META.json"] = (meta_json(name, version, requires), 0o644)
    elif meta == "yml":
        files["META.yml"] = (meta_yml(name, version, requires), 0o644)
    files["MANIFEST"] = ("".join(f"{f}\n" for f in [*files, "MANIFEST"]), 0o644)
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for rel, (text, mode) in files.items():
            data = text.encode()
            info = tarfile.TarInfo(f"{top}/{rel}")
            info.size, info.mode, info.mtime = len(data), mode, 1_700_000_000
            tar.addfile(info, io.BytesIO(data))
    return PerlDistribution(name, version, module, buf.getvalue())


def meta_json(name: str, version: str, requires: Mapping[str, str]) -> str:
    """A release's ``META.json`` (CPAN::Meta::Spec 2) as ExtUtils::MakeMaker writes it,
    with ``requires`` at runtime and tests' needs that ``--notest`` never installs."""
    doc = {
        "abstract": "a fake",
        "author": ["TSUKU"],
        "dynamic_config": 1,
        "license": ["perl_5"],
        "meta-spec": {"url": "http://search.cpan.org/perldoc?CPAN::Meta::Spec", "version": 2},
        "name": name,
        "prereqs": {
            "build": {"requires": {"ExtUtils::MakeMaker": "0"}},
            "configure": {"requires": {"ExtUtils::MakeMaker": "0"}},
            "runtime": {"requires": dict(requires)},
            "test": {"requires": {"Test::NeverInstalled": "1.0"}},
        },
        "release_status": "stable",
        "version": version,
    }
    return json.dumps(doc, indent=3) + "\n"


def meta_yml(name: str, version: str, requires: Mapping[str, str]) -> str:
    """The older ``META.yml`` (spec 1.4), as a release without a META.json carries it."""
    runtime = "".join(f"  {m}: '{v}'\n" for m, v in requires.items())
    return (
        "---\nabstract: 'a fake'\nauthor:\n  - TSUKU\n"
        "build_requires:\n  ExtUtils::MakeMaker: '0'\n"
        "configure_requires:\n  ExtUtils::MakeMaker: 0\n"
        f"name: {name}\n"
        + (f"requires:\n{runtime}" if runtime else "requires: {}\n")
        + f"version: '{version}'\n"
    )


def packages_index(dists: list[PerlDistribution]) -> bytes:
    """PAUSE's ``02packages.details.txt.gz`` listing ``dists``' modules."""
    lines = [f"{d.module:<40} {d.version:>8}  {d.path}" for d in dists]
    header = (
        "File:         02packages.details.txt\n"
        "Description:  Package names found in directory $CPAN/authors/id/\n"
        "Columns:      package name, version, path\n"
        f"Line-Count:   {len(lines)}\n"
        "\n"
    )
    return gzip.compress((header + "".join(f"{x}\n" for x in lines)).encode(), mtime=0)


ChecksumsMode = Literal["published", "wrong_sha256", "no_entry", "missing"]

# What a clearsigned CHECKSUMS carries around the Perl (PAUSE's key signs it; this
# signature is made-up bytes in the armour's shape).
_PREAMBLE = "0&&<<''; # this PGP-signed message is also valid perl\n"
_SIGNED = "-----BEGIN PGP SIGNED MESSAGE-----\nHash: SHA256\n\n"
_SIGNATURE = (
    "-----BEGIN PGP SIGNATURE-----\n\n"
    "iF0EARECAB0WIQRyJ3Kk0Yc5o1sYb1e2nZ4c3cN0AAUCZQAAAAAKCRC2nZ4c3cN0AA==\n"
    "=tsku\n"
    "-----END PGP SIGNATURE-----\n"
)


def checksums_file(files: dict[str, bytes], *, signed: bool = True) -> bytes:
    """An author directory's ``CHECKSUMS`` for ``files`` (name → bytes), written as
    CPAN::Checksums writes it (Data::Dumper, ``Indent = 1``, keys quoted and sorted),
    clearsigned unless ``signed`` is false."""
    entries = []
    for name in sorted(files):
        data = files[name]
        fields = {
            "md5": hashlib.md5(data, usedforsecurity=False).hexdigest(),  # CPAN writes it too
            "mtime": "2024-05-16",
            "sha256": hashlib.sha256(data).hexdigest(),
        }
        lines = [f"    '{k}' => '{v}'" for k, v in fields.items()]
        lines.append(f"    'size' => {len(data)}")
        entries.append(f"  '{name}' => {{\n" + ",\n".join(lines) + "\n  }")
    body = (
        "# CHECKSUMS file written on Thu May 16 12:34:56 2024 GMT by CPAN::Checksums (v2.14)\n"
        "$cksum = {\n" + ",\n".join(entries) + "\n};\n"
    )
    if not signed:
        return body.encode()
    return (_PREAMBLE + _SIGNED + body + "__END__\n" + _SIGNATURE).encode()


class FakeCpanMirror(FakeHTTPServer):
    def __init__(self) -> None:
        super().__init__(fallback=self._route, role="cpan")
        self.dists: list[PerlDistribution] = []
        #: What each author directory's CHECKSUMS says: the truth, a wrong sha256 for
        #: every file, no entry for the distributions, or no CHECKSUMS at all (404).
        self.checksums: ChecksumsMode = "published"
        self.swapped: dict[str, bytes] = {}  # path below authors/id/ → bytes served

    def swap(self, dist: PerlDistribution, data: bytes) -> None:
        """Serve ``data`` where ``dist``'s file is; its CHECKSUMS still says ``dist``'s."""
        self.swapped[dist.path] = data

    def checksums_of(self, directory: str) -> bytes | None:
        """``directory``'s CHECKSUMS (below ``authors/id/``) as :attr:`checksums` says."""
        files = {
            posixpath.basename(d.path): d.tarball
            for d in self.dists
            if posixpath.dirname(d.path) == directory
        }
        if not files or self.checksums == "missing":
            return None
        if self.checksums == "no_entry":
            files = {"README": b"an author's directory holds other files too\n"}
        text = checksums_file(files).decode()
        if self.checksums == "wrong_sha256":  # the sizes stay true: the sha256 must catch it
            for data in files.values():
                other = hashlib.sha256(b"another file " + data).hexdigest()
                text = text.replace(hashlib.sha256(data).hexdigest(), other)
        return text.encode()

    def env(self) -> dict[str, str]:
        return {"TSUKU_CPAN_MIRROR_URL": self.url}

    def publish(self, dist: PerlDistribution) -> None:
        self.dists.append(dist)

    def paths(self) -> list[str]:
        return [unquote(r.route) for r in self.requests]

    def _route(self, request: RecordedRequest) -> Reply:
        if request.method not in ("GET", "HEAD"):
            return Reply(405, body=b"method not allowed", headers={"allow": "GET, HEAD"})
        path = unquote(request.route).lstrip("/")
        if path == INDEX:
            return Reply(
                body=packages_index(self.dists), headers={"content-type": "application/x-gzip"}
            )
        for dist in self.dists:
            if path == f"authors/id/{dist.path}":
                body = self.swapped.get(dist.path, dist.tarball)
                return Reply(body=body, headers={"content-type": "application/x-gzip"})
        if path.startswith("authors/id/") and path.endswith("/CHECKSUMS"):
            checksums = self.checksums_of(posixpath.dirname(path.removeprefix("authors/id/")))
            if checksums is not None:
                return Reply(body=checksums, headers={"content-type": "text/plain"})
        return Reply(
            404, body=f"not found: {path}".encode(), headers={"content-type": "text/plain"}
        )
