"""What an install can fail with, shared by the service, the attempt and the
assembler (their exit codes and hints are in ``tsukud.errors.CATALOGUE``)."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from tsukud.errors import DiskFull, NotFound, TsukuError
from tsukud.fsutil import NO_SPACE, disk_full


class InstallError(TsukuError):
    code = "install_failed"


class BinaryNotInArchive(InstallError):
    """``reason`` is the message without the file listing and ``searched`` the directory
    looked in, so recipe validation can report the listing its own way."""

    code = "binary_not_in_archive"
    reason: str = ""
    searched: Path | None = None


class BinaryConflict(InstallError):
    code = "binary_conflict"


class GuardedCommandRefused(InstallError):
    """A binary named like a command that guards credentials or privileges (``sudo``,
    ``ssh``, ``gpg`` …) in a recipe for another tool (``shadowing.py``)."""

    code = "guarded_command_refused"


class ShadowingRefused(InstallError):
    """A binary that would shadow a command on the caller's PATH, under ``--yes``
    (which never answers that question)."""

    code = "command_shadowing_refused"


class BuildFailed(InstallError):
    """A build from source that did not give what the recipe says (``build.py``)."""

    code = "build_failed"


class CpanDistributionUnavailable(InstallError):
    """The CPAN mirror does not serve the distribution a ``cpan_install`` step asks for
    at the version being installed, or no CHECKSUMS with its sha256 (``cpan.py``)."""

    code = "cpan_distribution_unavailable"


class CpanDependencyUnavailable(InstallError):
    """A module a CPAN distribution requires (configure, build or runtime) that perl
    does not carry and the mirror does not index, or indexes at a path that is not
    PAUSE's (``cpan_deps.py``): named with the distribution that needs it."""

    code = "cpan_dependency_unavailable"


class CpanTooManyDependencies(InstallError):
    """A CPAN distribution's dependencies, gathered on the host, past the cap on their
    number or their bytes (``cpan_deps.py``)."""

    code = "cpan_too_many_dependencies"


class CpanMetaInvalid(InstallError):
    """A CPAN distribution's ``META.json``/``META.yml`` that is not the plain data the
    CPAN meta spec describes, or not the strict subset of YAML read here."""

    code = "cpan_meta_invalid"


class NotInstalled(NotFound):
    code = "not_installed"


def not_installed(name: str, installed: Iterable[str]) -> NotInstalled:
    """``remove ripgrp``: not installed, and the installed tool it most likely meant
    (``did_you_mean``) named in the hint before the list."""
    import difflib

    close = difflib.get_close_matches(name, sorted(installed), n=1, cutoff=0.75)
    if not close:
        return NotInstalled(f"{name} is not installed", tool=name)
    return NotInstalled(
        f"{name} is not installed",
        hint=f"Did you mean {close[0]}? It is installed; `tsukuctl list` shows the others.",
        tool=name,
        did_you_mean=close[0],
    )


def no_space(exc: BaseException, where: Path, what: str) -> DiskFull | None:
    """``exc`` as :class:`DiskFull` when it is a write that found no space under
    ``where``, else None. A full disk is the user's to fix, not a damaged download or
    archive."""
    if isinstance(exc, DiskFull):
        return exc
    if not isinstance(exc, OSError) or exc.errno not in NO_SPACE:
        return None
    return disk_full(where, what, then="then run the command again (nothing was installed).")


class VersionNotValidated(InstallError):
    """A generated recipe asked for a version (or a file) it was not validated at."""

    code = "version_not_validated"
