"""Platform values and host detection."""

from __future__ import annotations

import pytest

from tsukud.recipe import STANDARD_PLATFORMS, Platform, host_platform, parse_platform
from tsukud.recipe.platform import make_platform


@pytest.mark.parametrize(
    ("system", "machine", "python_libc", "musl_loader", "expected"),
    [
        ("linux", "x86_64", "glibc", False, Platform("linux", "amd64", "glibc")),
        ("linux", "aarch64", "", True, Platform("linux", "arm64", "musl")),
        # glibc-linked Python on a host that also has a musl loader installed: glibc.
        ("linux", "x86_64", "glibc", True, Platform("linux", "amd64", "glibc")),
        ("linux", "x86_64", "", False, Platform("linux", "amd64", "glibc")),
        ("darwin", "arm64", "", False, Platform("darwin", "arm64")),
        ("darwin", "x86_64", "", False, Platform("darwin", "amd64")),
        ("win32", "AMD64", "", False, Platform("windows", "amd64")),
        ("linux", "riscv64", "glibc", False, Platform("linux", "riscv64", "glibc")),
    ],
)
def test_make_platform(
    system: str, machine: str, python_libc: str, musl_loader: bool, expected: Platform
) -> None:
    assert (
        make_platform(system, machine, python_libc=python_libc, musl_loader=musl_loader) == expected
    )


def test_host_platform_is_plausible() -> None:
    host = host_platform()
    assert host.os in ("linux", "darwin", "windows", "freebsd")
    assert (host.libc in ("glibc", "musl")) == (host.os == "linux")


def test_parse_platform() -> None:
    assert parse_platform("linux/amd64") == Platform("linux", "amd64", "glibc")
    assert parse_platform("linux/x86_64", libc="musl") == Platform("linux", "amd64", "musl")
    assert parse_platform("darwin/arm64", libc="glibc") == Platform("darwin", "arm64")
    assert parse_platform("macos/aarch64") == Platform("darwin", "arm64")
    for bad in ("linux", "linux/", "/amd64", "linux/amd64/x"):
        with pytest.raises(ValueError, match="expected a platform like linux/amd64"):
            parse_platform(bad)
    with pytest.raises(ValueError, match="libc must be one of glibc, musl"):
        parse_platform("linux/amd64", libc="bionic")


def test_platform_text() -> None:
    assert str(Platform("linux", "amd64", "musl")) == "linux/amd64 (musl)"
    assert str(Platform("darwin", "arm64")) == "darwin/arm64"
    assert Platform("darwin", "arm64").key == "darwin/arm64"
    assert [p.key for p in STANDARD_PLATFORMS] == [
        "linux/amd64",
        "linux/arm64",
        "darwin/amd64",
        "darwin/arm64",
    ]
