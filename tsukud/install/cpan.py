"""``cpan_install``: a CPAN distribution installed with cpanm, built in the build
container, never on the host.

A distribution installs by running its own code (``perl Makefile.PL``, ``make``), so
this host only fetches bytes: the mirror's index (``modules/02packages.details.txt.gz``)
names the file of the module the step asks for, which must be the distribution at the
version being installed. The author directory's ``CHECKSUMS`` (``A/AU/AUTHOR/CHECKSUMS``,
PAUSE's) is read as data (``registries/cpan_checksums.py``: never run, its PGP signature
not checked) and must give that file's sha256; the file is downloaded, and only when its
sha256 (and size, when given) is what CHECKSUMS says is it laid out, with the
distributions it needs (below), as a local mirror (the files, and an index of their
lines alone) in the install's staging directory. A mirror or proxy that swapped the
file, and not CHECKSUMS with it, is ``checksum_mismatch`` before the bytes go anywhere.
The build container (:data:`~tsukud.sandbox.runtime.BUILD_IMAGE`, which carries
Debian's perl and cpanminus) then runs ``cpanm --mirror file://… --mirror-only
--local-lib <tool's directory> --notest`` on that file, with no network, the validation
limits and nothing of the host's ``PERL*`` variables, the tool's directory mounted at
the path the host will have it (an empty directory of the staging area), so whatever
the build bakes in names where the tool will live.

What the container proved is what is installed: each executable must be in ``bin/``,
the output tree is checked and tamed as a build's is (``build.py``), and the recipe's
verify runs in a second container over it. Then, as tsuku does, each executable is
renamed ``<name>.cpanm`` and a wrapper takes its name, setting ``PERL5LIB`` to the
tool's ``lib/perl5`` (a local-lib is found through it) before running the script with
``perl``. The container has no network, so the distributions it needs are gathered
here first (``cpan_deps.py``: its META file read as data, each required module that is
not perl's resolved through the same index, each distribution fetched once and checked
against its author's CHECKSUMS as this one is) and laid out in the same local mirror,
whose index lists them all; cpanm installs them into the same local-lib. A module only
``Makefile.PL`` would add (``dynamic_config``) is not seen here and fails in the
container, saying which (``build_failed``).

The pure part (reading the index, the script, the wrapper) is separate from the shell
that fetches and runs, so both are tested on their own.
"""

from __future__ import annotations

import gzip
import hashlib
import posixpath
import re
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import trio

from tsukud.install.build import (
    BUILD_DIR,
    BuildSandbox,
    accept_output,
    build_or_fail,
    isolated_build,
    verify_in_container,
)
from tsukud.install.cpan_deps import Dependency, gather
from tsukud.install.cpan_index import IndexEntry, is_pause_path, parse_index
from tsukud.install.download import ChecksumMismatch, check_sha256
from tsukud.install.errors import BuildFailed, CpanDistributionUnavailable
from tsukud.net.http import HttpError, HttpStatusError, HttpUnreachable
from tsukud.recipe import CpanInstallStep, VerifyCheck
from tsukud.registries.cpan_checksums import MAX_BYTES as CHECKSUMS_MAX_BYTES
from tsukud.registries.cpan_checksums import FileSums, parse_checksums
from tsukud.sandbox.runtime import DEFAULT_PATH, RunResult, RunSpec

if TYPE_CHECKING:
    from tsukud.net.http import Http

INDEX = "modules/02packages.details.txt.gz"
#: What the asset record's ``checked_against`` names: the author directory's CHECKSUMS.
CHECKED_AGAINST = "cpan_checksums"
#: The CPAN mirror's base URL in the installer's ``ecosystem_urls`` (``cpan.mirror_url``).
MIRROR_KEY = "cpan.mirror"
# Where the local mirror (the distribution and what it needs) is mounted in the build
# container (read-only).
MIRROR_DIR = "/tsuku/cpan"
# The index of the real CPAN is about 3 MB compressed; a distribution rarely 10 MB.
INDEX_MAX_BYTES = 64 * 1024 * 1024
DIST_MAX_BYTES = 256 * 1024 * 1024
# A wrapper's name is a file name in bin/ (tsuku's checks: no separator, no control
# character, no shell metacharacter).
_EXECUTABLE = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.+-]{0,255}")


# ---------------------------------------------------------------------------- pure


def module_of(step: CpanInstallStep) -> str:
    """What cpanm is asked for: the step's ``module``, else the distribution's name
    with ``-`` as ``::`` (tsuku's ``distributionToModule``)."""
    return step.module or step.distribution.replace("-", "::")


def choose_distribution(
    index: Mapping[str, IndexEntry], step: CpanInstallStep, version: str, mirror: str
) -> IndexEntry:
    """The index's entry for the step's module, which must be a PAUSE path to the
    step's distribution at ``version`` (:func:`release_files`): a mirror
    indexes only a module's newest release, and installing another than the one asked
    for would install what no one chose."""
    module = module_of(step)
    entry = index.get(module)
    if entry is None:
        raise CpanDistributionUnavailable(
            f"the CPAN mirror {mirror} does not index the module {module}",
            hint="Check the recipe's distribution and module names, or the mirror "
            "(cpan.mirror_url); nothing was installed.",
            module=module,
        )
    wanted = release_files(step.distribution, version)
    if not is_pause_path(entry.path) or entry.file not in wanted:
        raise CpanDistributionUnavailable(
            f"the CPAN mirror {mirror} indexes {module} in {entry.path}, not in "
            f"{step.distribution} {version}",
            hint="A mirror serves a module's newest release only: install the version it "
            "indexes, or use a mirror that has this one; nothing was installed.",
            module=module,
            path=entry.path,
        )
    return entry


def release_files(distribution: str, version: str) -> set[str]:
    """The names a release's file has on CPAN: ``<distribution>-<version>`` with a
    ``v`` or not (Carton-v1.0.35.tar.gz is carton 1.0.35), ``.tar.gz`` or ``.tgz``."""
    bare = version.removeprefix("v")
    return {f"{distribution}-{v}{ext}" for v in (bare, f"v{bare}") for ext in (".tar.gz", ".tgz")}


def checksums_path(entry: IndexEntry) -> str:
    """Where the CHECKSUMS vouching for ``entry``'s file is, below ``authors/id/``: the
    file's own directory (PAUSE writes one per directory; file names are unique only
    within an author's)."""
    return f"{posixpath.dirname(entry.path)}/CHECKSUMS"


def vouched_sums(sums: Mapping[str, FileSums], entry: IndexEntry, url: str) -> FileSums:
    """CHECKSUMS' entry for ``entry``'s file, which must give its sha256: a file that
    CHECKSUMS does not vouch for is not installed."""
    found = sums.get(entry.file)
    if found is None or found.sha256 is None:
        lacks = "no entry" if found is None else "an entry without a sha256"
        raise CpanDistributionUnavailable(
            f"the CPAN mirror's {url} has {lacks} for {entry.file}, so nothing vouches for "
            "its bytes",
            hint=f"The mirror's CHECKSUMS for {posixpath.dirname(entry.path)} lacks "
            f"{entry.file}'s sha256 (a mirror part-way through syncing, or not a CPAN "
            "mirror): try again later or use another mirror (cpan.mirror_url). Nothing was "
            "installed.",
            path=entry.path,
            checksums=url,
        )
    return found


def check_distribution(entry: IndexEntry, data: bytes, sums: FileSums, url: str) -> None:
    """``data`` must be the file CHECKSUMS (at ``url``) names: its sha256 and, when
    given, its size. Otherwise :class:`ChecksumMismatch` naming the file, what CHECKSUMS
    says and what was served."""
    assert sums.sha256 is not None  # vouched_sums'
    try:
        check_sha256(
            entry.file, hashlib.sha256(data).hexdigest(), sums.sha256, f"the mirror's {url}"
        )
        if sums.size is not None and sums.size != len(data):
            raise ChecksumMismatch(
                f"size mismatch for {entry.file}: the mirror's {url} says {sums.size} bytes, "
                f"the download has {len(data)}",
                file=entry.file,
                expected=sums.size,
                actual=len(data),
                source=url,
            )
    except ChecksumMismatch as exc:
        exc.hint = (
            f"The {entry.file} the CPAN mirror served is not the file its CHECKSUMS names: "
            "the mirror, or something between it and this machine, changed it. Use another "
            "mirror (cpan.mirror_url); nothing of it ran and nothing was installed."
        )
        raise


def mirror_index(
    index: Mapping[str, IndexEntry], entry: IndexEntry, dependencies: Sequence[Dependency] = ()
) -> bytes:
    """The local mirror's ``02packages.details.txt.gz``: the lines of ``index`` (the
    mirror's) whose file is the distribution's or one of its dependencies', so cpanm
    finds each module it needs in a file the mirror holds; ``entry``'s line always."""
    paths = {entry.path, *(d.entry.path for d in dependencies)}
    lines = {e.module: e for e in index.values() if e.path in paths}
    lines.update({entry.module: entry, **{d.entry.module: d.entry for d in dependencies}})
    body = "".join(f"{m} {e.version} {e.path}\n" for m, e in sorted(lines.items()))
    text = f"File:         02packages.details.txt\nLine-Count:   {len(lines)}\n\n{body}"
    return gzip.compress(text.encode(), mtime=0)


def dependencies_message(local: LocalMirror) -> str:
    """The line a person reads before the build: the distributions fetched besides
    the one asked for, each with the module that brought it in and who needs it."""
    deps = local.dependencies
    listed = "; ".join(
        f"{d.entry.file} (for {d.entry.module}, needed by {d.needed_by})" for d in deps
    )
    noun = "distribution" if len(deps) == 1 else "distributions"
    return (
        f"{local.entry.file} needs {len(deps)} more CPAN {noun}, fetched and checked "
        f"against their CHECKSUMS, built with it in the container: {listed}"
    )


def check_executables(names: Sequence[str]) -> None:
    bad = [n for n in names if not _EXECUTABLE.fullmatch(n) or ".." in n]
    if bad:
        raise BuildFailed(
            f"cpan_install: executables must be file names in bin/, not {', '.join(bad)}",
            stage="build",
        )


def cpanm_script(entry: IndexEntry, prefix: str, executables: Sequence[str]) -> str:
    """The ``sh`` script the build container runs: cpanm on the mirrored file into the
    local-lib ``prefix``, the mirror its only source; then each executable must be in
    ``<prefix>/bin``. Every word quoted."""
    q = shlex.quote
    argv = [
        "cpanm",
        "--mirror",
        f"file://{MIRROR_DIR}",
        "--mirror-only",
        "--local-lib",
        prefix,
        "--notest",
        "--verbose",
        f"{MIRROR_DIR}/authors/id/{entry.path}",
    ]
    lines = ["set -e", f"mkdir -p {BUILD_DIR}/.tmp", " ".join(q(a) for a in argv)]
    for exe in executables:
        path = f"{prefix}/bin/{exe}"
        missing = f"expected executable {exe} not found at {path}"
        lines.append(f"[ -f {q(path)} ] || {{ echo {q(missing)}; exit 4; }}")
    return "\n".join(lines) + "\n"


def cpanm_env() -> dict[str, str]:
    """The build's whole environment: no ``PERL*`` of anyone's (tsuku clears them),
    cpanm's work and temporary files in the scratch directory, tsuku's
    ``SOURCE_DATE_EPOCH=0``."""
    return {
        "PATH": DEFAULT_PATH,
        "HOME": f"{BUILD_DIR}/.tmp",
        "TMPDIR": f"{BUILD_DIR}/.tmp",
        "PERL_CPANM_HOME": f"{BUILD_DIR}/.cpanm",
        "SOURCE_DATE_EPOCH": "0",
    }


def cpanm_spec(
    image: str,
    entry: IndexEntry,
    step: CpanInstallStep,
    *,
    mirror: Path,
    scratch: Path,
    output: Path,
    where: str,
    labels: dict[str, str],
) -> RunSpec:
    """The build's container: the validation contract's isolation (no network, no
    capabilities, read-only root: :class:`RunSpec`'s defaults, left as they are), the
    mirror read-only, the scratch directory and ``output`` (at ``where``, the tool's
    directory as the host will have it) writable, as the daemon's uid."""
    return isolated_build(
        image,
        cpanm_script(entry, where, step.executables),
        ((mirror, MIRROR_DIR, True), (scratch, BUILD_DIR, False), (output, where, False)),
        cpanm_env(),
        labels,
    )


def wrapper(exe: str, tool_dir: str) -> str:
    """tsuku's wrapper for a cpanm script: ``PERL5LIB`` at the tool's local-lib, then
    the renamed script run by ``perl``."""
    q = shlex.quote
    return (
        "#!/bin/sh\n"
        f"# tsuku wrapper for {exe} (PERL5LIB at its own CPAN distribution)\n"
        f"PERL5LIB={q(f'{tool_dir}/lib/perl5')}\n"
        "export PERL5LIB\n"
        f'exec perl {q(f"{tool_dir}/bin/{exe}.cpanm")} "$@"\n'
    )


def write_wrappers(
    output: Path, tool_dir: str, executables: Sequence[str]
) -> dict[str, dict[str, str]]:
    """Each executable renamed ``<name>.cpanm`` and its wrapper written in its place
    (in ``output``, which becomes ``tool_dir``): ``{name: {path, sha256}}``, what the
    installer links."""
    out: dict[str, dict[str, str]] = {}
    for exe in executables:
        script = output / "bin" / exe
        script.rename(script.with_name(f"{exe}.cpanm"))
        data = wrapper(exe, tool_dir).encode()
        script.write_bytes(data)
        script.chmod(0o755)
        out[exe] = {"path": f"bin/{exe}", "sha256": hashlib.sha256(data).hexdigest()}
    return out


# ---------------------------------------------------------------------------- shell


def _placed(exc: HttpUnreachable, base: str, doing: str) -> HttpUnreachable:
    """The mirror out of reach, named with the setting that points at it."""
    return exc.at("CPAN mirror", base, "cpan.mirror_url", doing=doing)


async def read_index(http: Http, base: str) -> dict[str, IndexEntry]:
    """The mirror's ``02packages`` index, read."""
    base = base.rstrip("/")
    try:
        answer = await http.get(f"{base}/{INDEX}", max_bytes=INDEX_MAX_BYTES)
        text = gzip.decompress(answer.body).decode("utf-8", "replace")
    except HttpUnreachable as exc:  # offline, or the mirror's host is out of reach
        raise _placed(exc, base, "cannot read the CPAN mirror's index") from None
    except (HttpError, OSError, EOFError) as exc:
        raise CpanDistributionUnavailable(
            f"the CPAN mirror's index {base}/{INDEX} could not be read: {exc}",
            hint="Check the mirror (cpan.mirror_url) and the network; nothing was installed.",
        ) from None
    return parse_index(text)


async def newest_release(http: Http, base: str, step: CpanInstallStep) -> str:
    """The ``metacpan`` version source: the version of the step's distribution whose
    file the mirror indexes for its module (a mirror indexes the newest release)."""
    index = await read_index(http, base)
    entry = index.get(module_of(step))
    version = None if entry is None else release_version(entry.file, step.distribution)
    if version is None:
        module = module_of(step)
        raise CpanDistributionUnavailable(
            f"the CPAN mirror {base.rstrip('/')} indexes no release of {step.distribution} "
            f"for {module}" + (f" (it names {entry.path})" if entry is not None else ""),
            hint="Check the recipe's distribution and module names, or the mirror "
            "(cpan.mirror_url); nothing was installed.",
            module=module,
        )
    return version


def release_version(file: str, distribution: str) -> str | None:
    """The version a release's file names (``Carton-v1.0.35.tar.gz`` → ``1.0.35``); None
    for a file of another distribution."""
    stem = file.removesuffix(".tar.gz").removesuffix(".tgz")
    if stem == file or not stem.startswith(f"{distribution}-"):
        return None
    version = stem.removeprefix(f"{distribution}-").removeprefix("v")
    return version if re.fullmatch(r"[0-9][0-9A-Za-z._-]*", version) else None


async def read_checksums(http: Http, url: str, entry: IndexEntry) -> dict[str, FileSums]:
    """The author directory's CHECKSUMS at ``url``, read (never run); a mirror that
    serves none vouches for nothing."""
    try:
        answer = await http.get(url, max_bytes=CHECKSUMS_MAX_BYTES)
    except HttpUnreachable as exc:
        raise _placed(exc, url, "cannot read the CPAN mirror's CHECKSUMS") from None
    except HttpError as exc:
        missing = isinstance(exc, HttpStatusError) and exc.status in (404, 410)
        raise CpanDistributionUnavailable(
            f"the CPAN mirror's {url} could not be read: {exc}",
            hint=(
                f"The mirror serves no CHECKSUMS for {posixpath.dirname(entry.path)}, so "
                f"nothing vouches for {entry.file}'s bytes"
                if missing
                else "Check the mirror (cpan.mirror_url) and the network"
            )
            + "; use another mirror (cpan.mirror_url). Nothing was installed.",
            path=entry.path,
            checksums=url,
        ) from None
    return parse_checksums(answer.body)


@dataclass(frozen=True)
class LocalMirror:
    """What :func:`fetch_distribution` laid out: the distribution's entry and the
    distributions it needs, each with the CHECKSUMS URL that vouched for it."""

    entry: IndexEntry
    dependencies: tuple[Dependency, ...]

    @property
    def entries(self) -> list[IndexEntry]:
        return [self.entry, *(d.entry for d in self.dependencies)]


class _Fetcher:
    """Distributions' bytes from one mirror, each checked against its author
    directory's CHECKSUMS (read once per directory) before anyone sees them."""

    def __init__(self, http: Http, base: str) -> None:
        self.http, self.base = http, base
        self.sums: dict[str, dict[str, FileSums]] = {}

    def sums_url(self, entry: IndexEntry) -> str:
        return f"{self.base}/authors/id/{checksums_path(entry)}"

    async def __call__(self, entry: IndexEntry) -> bytes:
        sums_url = self.sums_url(entry)
        if sums_url not in self.sums:
            self.sums[sums_url] = await read_checksums(self.http, sums_url, entry)
        sums = vouched_sums(self.sums[sums_url], entry, sums_url)
        url = f"{self.base}/authors/id/{entry.path}"
        try:
            data = (await self.http.get(url, max_bytes=DIST_MAX_BYTES)).body
        except HttpUnreachable as exc:
            raise _placed(exc, self.base, f"cannot fetch {entry.file}") from None
        except HttpError as exc:
            raise CpanDistributionUnavailable(
                f"{url} could not be fetched: {exc}",
                hint="The mirror indexes a file it does not serve; try another mirror "
                "(cpan.mirror_url). Nothing was installed.",
                path=entry.path,
            ) from None
        check_distribution(entry, data, sums, sums_url)
        return data


async def fetch_distribution(
    http: Http, base: str, step: CpanInstallStep, version: str, mirror: Path
) -> LocalMirror:
    """The distribution's bytes (nothing of it runs here), checked against the author
    directory's CHECKSUMS, then the distributions it needs (``cpan_deps.py``: read
    from its META file, resolved through the same index, each checked the same way),
    all laid out in ``mirror`` as a CPAN mirror holding just them: bytes that CHECKSUMS
    does not vouch for are never written."""
    base = base.rstrip("/")
    index = await read_index(http, base)
    entry = choose_distribution(index, step, version, base)
    fetch = _Fetcher(http, base)
    data = await fetch(entry)
    dependencies = await gather(entry, data, index, fetch)
    files = {entry.path: data, **{d.entry.path: d.data for d in dependencies}}

    def lay_out() -> None:
        for path, body in files.items():
            target = mirror / "authors" / "id" / path
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(body)
        (mirror / "modules").mkdir()
        (mirror / INDEX).write_bytes(mirror_index(index, entry, dependencies))

    await trio.to_thread.run_sync(lay_out)
    return LocalMirror(entry, tuple(dependencies))


async def build_distribution(
    sandbox: BuildSandbox,
    entry: IndexEntry,
    step: CpanInstallStep,
    *,
    tool: str,
    mirror: Path,
    scratch: Path,
    output: Path,
    where: str,
    checks: Sequence[VerifyCheck],
    session: str | None,
) -> tuple[RunResult, dict[str, dict[str, str]]]:
    """cpanm in the build container into ``output`` (mounted at ``where``), the tree
    checked and tamed, the wrappers written, then ``checks`` run in the container over
    it. Raises :class:`BuildFailed` saying which stage failed; returns the build's run
    and the executables to link."""
    check_executables(step.executables)
    labels = {"dev.tsuku.session": session or "", "dev.tsuku.build": tool}
    spec = cpanm_spec(
        sandbox.image,
        entry,
        step,
        mirror=mirror,
        scratch=scratch,
        output=output,
        where=where,
        labels=labels,
    )
    res = await build_or_fail(
        sandbox, spec, session, tool=tool, what=f"cpanm's install of {entry.file}"
    )
    await accept_output(output, tool)
    binaries = await trio.to_thread.run_sync(write_wrappers, output, where, step.executables)
    await verify_in_container(
        sandbox, checks, tool=tool, output=output, where=where, labels=labels, session=session
    )
    return res, binaries
