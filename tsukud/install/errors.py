"""What an install can fail with, shared by the service, the attempt and the
assembler (their exit codes and hints are in ``tsukud.errors.CATALOGUE``)."""

from __future__ import annotations

from pathlib import Path

from tsukud.errors import NotFound, TsukuError


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


class NotInstalled(NotFound):
    code = "not_installed"
