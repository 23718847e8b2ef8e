"""What installing a bottle or its runtime dependencies can fail with (exit codes and
hints in ``tsukud.errors.CATALOGUE``)."""

from __future__ import annotations

from tsukud.errors import TsukuError
from tsukud.install.errors import InstallError


class HomebrewError(TsukuError):
    """The formulae API or the bottle registry answered something we cannot use."""

    code = "homebrew_error"


class RelocationFailed(InstallError):
    code = "relocation_failed"


class DependencyMissing(TsukuError):
    code = "dependency_missing"


class DependencyCycle(TsukuError):
    code = "dependency_cycle"


class DependencyInUse(TsukuError):
    code = "dependency_in_use"
