"""The platform a recipe is rendered for: OS, architecture and (on Linux) libc.

Values use Go's GOOS/GOARCH spelling (``linux``/``darwin``, ``amd64``/``arm64``) because
that is what tsuku recipes key their ``os_mapping``/``arch_mapping`` and ``when`` clauses
on; anything else would need a translation table in every recipe.
"""

from __future__ import annotations

import glob
import platform as _stdlib_platform
import sys

import msgspec

from tsukud.recipe.system import family_from_os_release

LIBCS = ("glibc", "musl")

_OS_ALIASES = {
    "linux": "linux",
    "darwin": "darwin",
    "macos": "darwin",
    "win32": "windows",
    "windows": "windows",
    "cygwin": "windows",
    "freebsd": "freebsd",
}
_ARCH_ALIASES = {
    "x86_64": "amd64",
    "amd64": "amd64",
    "x64": "amd64",
    "aarch64": "arm64",
    "arm64": "arm64",
    "armv8l": "arm64",
    "i386": "386",
    "i686": "386",
    "x86": "386",
    "armv7l": "arm",
    "armv6l": "arm",
    "riscv64": "riscv64",
    "ppc64le": "ppc64le",
    "s390x": "s390x",
}


class Platform(msgspec.Struct, frozen=True):
    """Where an install happens. ``libc`` is ``None`` off Linux, or when unknown.

    ``linux_family`` (debian, rhel, alpine, arch, suse) selects ``when`` clauses that
    name one and the system package step of that family (``apt_install`` on debian, ...);
    host detection reads it from ``/etc/os-release`` (``recipe/system.py``).
    """

    os: str
    arch: str
    libc: str | None = None
    linux_family: str | None = None

    @property
    def key(self) -> str:
        """``os/arch``: the spelling of ``when.platform`` and ``unsupported_platforms``."""
        return f"{self.os}/{self.arch}"

    def __str__(self) -> str:
        return f"{self.key} ({self.libc})" if self.libc else self.key


# The four targets tsuku builds recipes for; glibc is the usual Linux default.
STANDARD_PLATFORMS = (
    Platform("linux", "amd64", "glibc"),
    Platform("linux", "arm64", "glibc"),
    Platform("darwin", "amd64"),
    Platform("darwin", "arm64"),
)


def normalize_os(name: str) -> str:
    """Map ``sys.platform``/``uname`` spellings to GOOS; unknown names pass through lowered."""
    lowered = name.strip().lower()
    if lowered.startswith("linux"):
        return "linux"
    return _OS_ALIASES.get(lowered, lowered)


def normalize_arch(name: str) -> str:
    """Map ``uname -m`` spellings to GOARCH; unknown names pass through lowered."""
    lowered = name.strip().lower()
    return _ARCH_ALIASES.get(lowered, lowered)


def parse_platform(text: str, libc: str | None = None) -> Platform:
    """``"linux/amd64"`` → Platform. Linux without an explicit libc assumes glibc."""
    os_name, sep, arch = text.strip().partition("/")
    if not sep or not os_name or not arch or "/" in arch:
        raise ValueError(f"expected a platform like linux/amd64, got {text!r}")
    os_name = normalize_os(os_name)
    if libc is not None and libc not in LIBCS:
        raise ValueError(f"libc must be one of {', '.join(LIBCS)}, got {libc!r}")
    if os_name == "linux" and libc is None:
        libc = "glibc"
    return Platform(os_name, normalize_arch(arch), libc if os_name == "linux" else None)


def make_platform(
    system: str,
    machine: str,
    *,
    python_libc: str,
    musl_loader: bool,
    os_release: str = "",
) -> Platform:
    """Pure core of host detection, so every branch can be tested on any machine.

    ``python_libc`` is what ``platform.libc_ver()`` reports for the running interpreter:
    an interpreter linked against glibc proves the host has glibc even when a musl loader
    is installed next to it (Debian's ``musl`` package puts one in /lib). Without that
    proof, a musl loader means a musl system (Alpine), as in the reference's detection.
    ``os_release`` (the text of ``/etc/os-release``) names the Linux family.
    """
    os_name = normalize_os(system)
    libc: str | None = None
    if os_name == "linux":
        if python_libc == "glibc":
            libc = "glibc"
        elif musl_loader:
            libc = "musl"
        else:
            libc = "glibc"
    family = family_from_os_release(os_release) if os_name == "linux" else None
    return Platform(os_name, normalize_arch(machine), libc, family)


def host_platform() -> Platform:
    """The platform this process runs on."""
    python_libc = _stdlib_platform.libc_ver()[0] if sys.platform.startswith("linux") else ""
    musl_loader = bool(glob.glob("/lib/ld-musl-*.so.1")) if not python_libc else False
    return make_platform(
        sys.platform,
        _stdlib_platform.machine(),
        python_libc=python_libc,
        musl_loader=musl_loader,
        os_release=_os_release() if sys.platform.startswith("linux") else "",
    )


def _os_release() -> str:
    for path in ("/etc/os-release", "/usr/lib/os-release"):
        try:
            with open(path, encoding="utf-8", errors="replace") as f:
                return f.read(64 * 1024)
        except OSError:
            continue
    return ""
