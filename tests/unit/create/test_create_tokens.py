"""Reading platforms out of asset names: Go, Rust, goreleaser and odd spellings."""

from __future__ import annotations

import pytest

from tsukud.create.tokens import libc_of, parse_asset, version_spans
from tsukud.recipe import ArchiveFormat, expand

# name, version, template, os, os_raw, arch, arch_raw
CASES = [
    # The OS word carries the word size (micro, skm).
    ("micro-2.0.15-linux64-static.tar.gz", "2.0.15", "micro-{version}-{os}-static.tar.gz",
     "linux", "linux64", "amd64", None),
    ("skm-mac64-0.8.5.tar.gz", "0.8.5", "skm-{os}-{version}.tar.gz",
     "darwin", "mac64", "amd64", None),
    # No Mac has a 32-bit ARM CPU: macOS "arm" is Apple silicon.
    ("dcm-macos-arm-release.zip", "1.39.1", "dcm-{os}-{arch}-release.zip",
     "darwin", "macos", "arm64", "arm"),
    ("gitleaks_8.30.0_linux_x64.tar.gz", "8.30.0", "gitleaks_{version}_{os}_{arch}.tar.gz",
     "linux", "linux", "amd64", "x64"),
    ("k9s_Darwin_arm64.tar.gz", "0.32.0", "k9s_{os}_{arch}.tar.gz",
     "darwin", "Darwin", "arm64", "arm64"),
    ("gobuster_Linux_x86_64.tar.gz", "3.6.0", "gobuster_{os}_{arch}.tar.gz",
     "linux", "Linux", "amd64", "x86_64"),
    ("trivy_0.50.0_macOS-64bit.tar.gz", "0.50.0", "trivy_{version}_{os}-{arch}.tar.gz",
     "darwin", "macOS", "amd64", "64bit"),
    ("trivy_0.50.0_Linux-ARM64.tar.gz", "0.50.0", "trivy_{version}_{os}-{arch}.tar.gz",
     "linux", "Linux", "arm64", "ARM64"),
    ("cargo-deny-0.14.3-x86_64-unknown-linux-musl.tar.gz", "0.14.3",
     "cargo-deny-{version}-{arch}-{os}.tar.gz", "linux", "unknown-linux-musl", "amd64", "x86_64"),
    ("app-aarch64-apple-darwin.zip", "0.25.0", "app-{arch}-{os}.zip",
     "darwin", "apple-darwin", "arm64", "aarch64"),
    ("helix-25.01-aarch64-macos.tar.xz", "25.01", "helix-{version}-{arch}-{os}.tar.xz",
     "darwin", "macos", "arm64", "aarch64"),
    ("age-v1.2.0-darwin-arm64.tar.gz", "1.2.0", "age-v{version}-{os}-{arch}.tar.gz",
     "darwin", "darwin", "arm64", "arm64"),
    ("kopia-0.15.0-macOS-x64.tar.gz", "0.15.0", "kopia-{version}-{os}-{arch}.tar.gz",
     "darwin", "macOS", "amd64", "x64"),
    ("tool_1.0.0_darwin_all.tar.gz", "1.0.0", "tool_{version}_{os}_{arch}.tar.gz",
     "darwin", "darwin", "universal", "all"),
    ("tool-1.0.0-macos-universal.tar.gz", "1.0.0", "tool-{version}-{os}-{arch}.tar.gz",
     "darwin", "macos", "universal", "universal"),
    ("tool-osx-aarch_64", "1.0.0", "tool-{os}-{arch}", "darwin", "osx", "arm64", "aarch_64"),
    ("yt-dlp_linux", "2024.1.1", "yt-dlp_{os}", "linux", "linux", None, None),
    ("piknik-macos-intel-0.10.2.tar.gz", "0.10.2", "piknik-{os}-{arch}-{version}.tar.gz",
     "darwin", "macos", "amd64", "intel"),
    ("bellsoft-jdk21.0.5+11-linux-amd64-crac.tar.gz", "21.0.5+11",
     "bellsoft-jdk{version}-{os}-{arch}-crac.tar.gz", "linux", "linux", "amd64", "amd64"),
    # The tool name comes first: the last OS word is the platform.
    ("osx-cross-linux-amd64", "1.0.0", "osx-cross-{os}-{arch}", "linux", "linux", "amd64", "amd64"),
    # "all" is only a universal marker on macOS builds.
    ("tool-all-linux-amd64", "1.0.0", "tool-all-{os}-{arch}", "linux", "linux", "amd64", "amd64"),
    ("macchina-linux-x86_64", "6.1.0", "macchina-{os}-{arch}", "linux", "linux", "amd64", "x86_64"),
]  # fmt: skip


@pytest.mark.parametrize(("name", "version", "template", "os", "os_raw", "arch", "arch_raw"), CASES)
def test_parse_asset(
    name: str,
    version: str,
    template: str,
    os: str,
    os_raw: str,
    arch: str | None,
    arch_raw: str | None,
) -> None:
    parsed = parse_asset(name, version)
    assert parsed.template == template
    assert (parsed.os, parsed.os_raw, parsed.arch, parsed.arch_raw) == (os, os_raw, arch, arch_raw)
    # The template gives the name back.
    assert expand(template, version=version, os=os_raw or "", arch=arch_raw or "") == name


def test_version_digits_are_never_an_architecture() -> None:
    parsed = parse_asset("tool_v1.3.386_linux_amd64.tar.gz", "1.3.386")
    assert parsed.arch == "amd64"
    assert parsed.template == "tool_v{version}_{os}_{arch}.tar.gz"
    unversioned = parse_asset("tool_v1.3.386.tar.gz", "")
    assert unversioned.arch is None  # ".386." is part of a number, not i386


def test_version_spans_respect_component_boundaries() -> None:
    assert version_spans("tool-1.2.3-linux", "1.2") == []
    assert version_spans("tool-11.2-linux", "1.2") == []
    assert version_spans("tool-1.2-linux", "1.2") == [(5, 8)]
    assert version_spans("jdk21.0.5+11-linux", "21.0.5+11") == [(3, 12)]
    assert version_spans("anything", "") == []


def test_other_architectures_are_named_as_such() -> None:
    for name, arch in [
        ("gitleaks_8.30.0_linux_x32.tar.gz", "386"),
        ("tool_linux_armv7.tar.gz", "arm"),
        ("tool_linux_arm.tar.gz", "arm"),
        ("tool-i686-unknown-linux-gnu.tar.gz", "386"),
        ("trivy_0.5.0_Linux-32bit.tar.gz", "386"),
        ("tool_linux_s390x", "s390x"),
        ("tool_linux_ppc64le", "ppc64"),
        ("tool_linux_riscv64", "riscv64"),
        ("tool-armv7-unknown-linux-gnueabihf.tar.gz", "arm"),
    ]:
        assert parse_asset(name, "").arch == arch, name


def test_libc() -> None:
    assert libc_of("x86_64-unknown-linux-musl") == "musl"
    assert libc_of("x86_64-unknown-linux-gnu") == "gnu"
    assert libc_of("tool-linux-amd64-static") == "static"
    assert libc_of("tool-linux-amd64") is None
    assert libc_of("armv7-unknown-linux-gnueabihf") is None


def test_formats() -> None:
    assert parse_asset("gotop_v4.2.0_linux_amd64.tgz", "4.2.0").format is ArchiveFormat.TAR_GZ
    assert parse_asset("k3d-linux-amd64", "").format is ArchiveFormat.RAW
    assert parse_asset("tool.tar.lz", "").format is None
