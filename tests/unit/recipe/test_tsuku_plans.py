"""``plan_recipe`` against tsuku's own plans, field by field.

Each case is a small recipe equivalent to one in tsuku's registry (written here, not
copied) and the plan tsuku computes for it, transcribed by hand from tsuku's golden
plan (``testdata/golden/plans/embedded/<tool>/<version>-<platform>.json`` in its
repository, format 5) with the same recipe, version and platform. The comparison is of
the JSON text, so key names, order and nesting count too. This project's own keys
(``unsupported``, ``warnings``) are compared apart; a value tsuku's plan holds only
because tsuku downloaded the file while planning is named in the step's
``computed_at_download`` and is the one thing taken out of the golden side.
"""

from __future__ import annotations

import json
from typing import Any

import msgspec

from tsukud.recipe import ResolvedVersion, parse_recipe
from tsukud.recipe.homebrew import BottleRef
from tsukud.recipe.plan import Plan, plan_recipe
from tsukud.recipe.platform import Platform

LINUX = Platform("linux", "amd64", "glibc")
DEBIAN = Platform("linux", "amd64", "glibc", linux_family="debian")
OURS = ("unsupported", "warnings")


def _json(plan: Plan) -> tuple[dict[str, Any], dict[str, Any]]:
    """tsuku's part of our plan, and this project's keys beside it."""
    data: dict[str, Any] = json.loads(msgspec.json.encode(plan))  # as on the wire
    own = {k: data.pop(k) for k in OURS if k in data}
    return data, own


def _without_downloaded(golden: dict[str, Any], ours: dict[str, Any]) -> dict[str, Any]:
    """The golden plan minus exactly the fields our steps mark ``computed_at_download``
    (and the marker moved off our side), so the rest must match to the byte."""
    trimmed = json.loads(json.dumps(golden))
    for theirs, mine in zip(trimmed["steps"], ours["steps"], strict=True):
        for field in mine.pop("computed_at_download", []):
            where, _, key = field.rpartition(".")
            del (theirs[where] if where else theirs)[key]
    return trimmed


def _same(ours: dict[str, Any], golden: dict[str, Any]) -> None:
    assert json.dumps(ours, indent=2) == json.dumps(golden, indent=2)


def _github_archive_golden(
    *,
    tool: str,
    version: str,
    file: str,
    sha: str,
    url: str,
    size: int,
    binaries: list[str],
    verify: dict[str, str],
) -> dict[str, Any]:
    """The shape of tsuku's format-5 golden plan for a ``github_archive`` in directory
    mode with ``strip_dirs = 1`` on linux/amd64 (debian): python-standalone's and
    perl's goldens are this, field for field, with their own values."""
    fmt = "tar.xz" if file.endswith(".tar.xz") else "tar.gz"
    return {
        "format_version": 5,
        "storage_version": 1,
        "tool": tool,
        "version": version,
        "platform": {"os": "linux", "arch": "amd64", "linux_family": "debian"},
        "deterministic": True,
        "steps": [
            {
                "action": "download_file",
                "params": {"checksum": sha, "checksum_algo": "sha256", "dest": file, "url": url},
                "evaluable": True,
                "deterministic": True,
                "url": url,
                "checksum": sha,
                "size": size,
            },
            {
                "action": "extract",
                "params": {"archive": file, "format": fmt, "strip_dirs": 1},
                "evaluable": True,
                "deterministic": True,
            },
            {
                "action": "chmod",
                "params": {"files": binaries},
                "evaluable": True,
                "deterministic": True,
            },
            {
                "action": "install_binaries",
                "params": {"binaries": binaries, "install_mode": "directory"},
                "evaluable": True,
                "deterministic": True,
            },
        ],
        "verify": verify,
    }


CA_CERTIFICATES = """
[metadata]
name = "ca-certificates"
description = "Mozilla's CA certificates"
type = "library"

[version]
source = "homebrew"
formula = "ca-certificates"

[[steps]]
action = "download_file"
url = "https://curl.se/ca/cacert-2025-12-02.pem"
checksum = "f1407d974c5ed87d544bd931a278232e13925177e239fca370619aba63c757b4"
dest = "cacert.pem"

[[steps]]
action = "install_binaries"
outputs = [{ src = "cacert.pem", dest = "share/ca-certificates/cacert.pem" }]
"""

# golden: embedded/ca-certificates/v2025-12-02-linux-amd64.json (format 5)
CA_GOLDEN = {
    "format_version": 5,
    "storage_version": 1,
    "tool": "ca-certificates",
    "version": "2025-12-02",
    "platform": {"os": "linux", "arch": "amd64"},
    "deterministic": True,
    "steps": [
        {
            "action": "download_file",
            "params": {
                "checksum": "f1407d974c5ed87d544bd931a278232e13925177e239fca370619aba63c757b4",
                "dest": "cacert.pem",
                "url": "https://curl.se/ca/cacert-2025-12-02.pem",
            },
            "evaluable": True,
            "deterministic": True,
        },
        {
            "action": "install_binaries",
            "params": {
                "outputs": [{"dest": "share/ca-certificates/cacert.pem", "src": "cacert.pem"}]
            },
            "evaluable": True,
            "deterministic": True,
        },
    ],
    "recipe_type": "library",
}


def test_ca_certificates_plans_as_tsuku_plans_it() -> None:
    recipe = parse_recipe(CA_CERTIFICATES)
    v = ResolvedVersion("2025-12-02", "2025-12-02")
    ours, own = _json(plan_recipe(recipe, v, LINUX, install_dir="/t"))
    _same(ours, CA_GOLDEN)
    assert own == {"unsupported": []}


ZIG = """
[metadata]
name = "zig"
description = "General-purpose programming language and toolchain"
version_format = "semver"

[version]
github_repo = "ziglang/zig"

[[steps]]
action = "download_archive"
url = "https://ziglang.freetls.fastly.net/zig-{arch}-{os}-{version}.tar.xz"
fallback_urls = [
    "https://zig.squirl.dev/zig-{arch}-{os}-{version}.tar.xz",
    "https://ziglang.org/download/{version}/zig-{arch}-{os}-{version}.tar.xz",
]
strip_dirs = 1
binaries = ["zig"]
install_mode = "directory"
os_mapping = { darwin = "macos" }
arch_mapping = { amd64 = "x86_64", arm64 = "aarch64" }

[verify]
command = "zig version"
pattern = "{version}"
"""

ZIG_FILE = "zig-x86_64-linux-0.14.1.tar.xz"
ZIG_SHA = "24aeeec8af16c381934a6cd7d95c807a8cb2cf7df9fa40d359aa884195c4716c"
# golden: embedded/zig/v0.14.1-linux-amd64.json (format 5)
ZIG_GOLDEN = {
    "format_version": 5,
    "storage_version": 1,
    "tool": "zig",
    "version": "0.14.1",
    "platform": {"os": "linux", "arch": "amd64"},
    "deterministic": True,
    "steps": [
        {
            "action": "download_file",
            "params": {
                "checksum": ZIG_SHA,
                "checksum_algo": "sha256",
                "dest": ZIG_FILE,
                "fallback_urls": [
                    f"https://zig.squirl.dev/{ZIG_FILE}",
                    f"https://ziglang.org/download/0.14.1/{ZIG_FILE}",
                ],
                "url": f"https://ziglang.freetls.fastly.net/{ZIG_FILE}",
            },
            "evaluable": True,
            "deterministic": True,
            "url": f"https://ziglang.freetls.fastly.net/{ZIG_FILE}",
            "checksum": ZIG_SHA,
            "size": 49086504,
        },
        {
            "action": "extract",
            "params": {"archive": ZIG_FILE, "format": "tar.xz", "strip_dirs": 1},
            "evaluable": True,
            "deterministic": True,
        },
        {
            "action": "chmod",
            "params": {"files": ["zig"]},
            "evaluable": True,
            "deterministic": True,
        },
        {
            "action": "install_binaries",
            "params": {"binaries": ["zig"], "install_mode": "directory"},
            "evaluable": True,
            "deterministic": True,
        },
    ],
    "verify": {"command": "zig version", "pattern": "{version}"},
}


def test_zig_plans_as_tsuku_plans_it_but_the_checksum_only_a_download_gives() -> None:
    """tsuku's form: one ``download_archive`` with mirrors (``fallback_urls``), filled
    in with the step's mappings and carried by the decomposed ``download_file``; the
    ``extract`` has no mappings. Every field is the golden's but the sha256 and size
    tsuku computed by downloading the archive, which the plan names instead."""
    recipe = parse_recipe(ZIG)
    v = ResolvedVersion("0.14.1", "0.14.1")
    ours, own = _json(plan_recipe(recipe, v, LINUX, install_dir="/t"))
    assert ours["steps"][0]["computed_at_download"] == [
        "checksum",
        "size",
        "params.checksum",
        "params.checksum_algo",
    ]
    _same(ours, _without_downloaded(ZIG_GOLDEN, ours))
    assert own == {"unsupported": []}
    # The mappings reach the mirrors too: on macOS every URL names zig-aarch64-macos-…
    mac = plan_recipe(recipe, v, Platform("darwin", "arm64"), install_dir="/t")
    mac_file = "zig-aarch64-macos-0.14.1.tar.xz"
    assert mac.steps[0].params["fallback_urls"] == [
        f"https://zig.squirl.dev/{mac_file}",
        f"https://ziglang.org/download/0.14.1/{mac_file}",
    ]
    assert mac.steps[1].params["archive"] == mac_file


PYTHON = """
[metadata]
name = "python-standalone"
description = "Standalone Python builds"
version_format = "custom"

[[steps]]
action = "github_archive"
repo = "indygreg/python-build-standalone"
asset_pattern = "cpython-*+{version}-{arch}-{os}-install_only.tar.gz"
strip_dirs = 1
install_mode = "directory"
binaries = ["bin/python3", "bin/pip3"]
os_mapping = { linux = "unknown-linux-gnu", darwin = "apple-darwin" }
arch_mapping = { amd64 = "x86_64", arm64 = "aarch64" }

[verify]
command = "python3 --version"
mode = "output"
pattern = "Python 3."
"""

PY_FILE = "cpython-3.10.19+20251217-x86_64-unknown-linux-gnu-install_only.tar.gz"
PY_SHA = "b501791dd2a2752f3f35329c4af736983cc5ef5e12e50776c13c752cbfa9cbf8"
PY_URL = "https://github.com/indygreg/python-build-standalone/releases/download/20251217/" + PY_FILE
# The release lists several builds the wildcard matches; tsuku takes the first.
PY_ASSETS = (
    PY_FILE,
    "cpython-3.11.14+20251217-x86_64-unknown-linux-gnu-install_only.tar.gz",
    "cpython-3.12.12+20251217-x86_64-unknown-linux-gnu-install_only.tar.gz",
    "cpython-3.10.19+20251217-aarch64-unknown-linux-gnu-install_only.tar.gz",
)
# golden: embedded/python-standalone/v20251217-linux-debian-amd64.json (format 5)
PY_GOLDEN = _github_archive_golden(
    tool="python-standalone",
    version="20251217",
    file=PY_FILE,
    sha=PY_SHA,
    url=PY_URL,
    size=43215542,
    binaries=["bin/python3", "bin/pip3"],
    verify={"command": "python3 --version", "pattern": "Python 3."},
)


def _python_plan(text: str) -> Plan:
    return plan_recipe(
        parse_recipe(text),
        ResolvedVersion("20251217", "20251217"),
        DEBIAN,
        install_dir="/t",
        assets=PY_ASSETS,
        digests={PY_FILE: "sha256:" + PY_SHA},
        sizes={PY_FILE: 43215542},
    )


def test_python_standalone_takes_the_first_match_as_tsuku_does_and_says_so() -> None:
    ours, own = _json(_python_plan(PYTHON))
    _same(ours, PY_GOLDEN)
    assert own["unsupported"] == []
    (warning,) = own["warnings"]
    assert f"took {PY_FILE}" in warning
    assert "cpython-3.11.14+20251217" in warning and "cpython-3.12.12+20251217" in warning


def test_a_recipe_this_project_wrote_stays_strict_over_several_matches() -> None:
    written = PYTHON.replace(
        'version_format = "custom"', 'version_format = "custom"\ngenerated_by = "tsuku"'
    )
    plan = _python_plan(written)
    assert plan.steps == () and plan.warnings == ()
    (gap,) = plan.unsupported
    assert "matches 3 assets" in gap.reason


PERL = """
[metadata]
name = "perl"
description = "Perl with cpanm"

[[steps]]
action = "github_archive"
repo = "skaji/relocatable-perl"
asset_pattern = "perl-{os}-{arch}.tar.xz"
strip_dirs = 1
binaries = ["bin/perl", "bin/cpanm"]
install_mode = "directory"

[verify]
command = "perl -v"
"""

PERL_FILE = "perl-linux-amd64.tar.xz"
PERL_SHA = "b2f927d3e932cd3cfc2c3482bcdba832dfded9ddd7109774674c2c9fdc49567f"
PERL_URL = "https://github.com/skaji/relocatable-perl/releases/download/5.42.0.0/" + PERL_FILE
# golden: embedded/perl/v5.42.0.0-linux-debian-amd64.json (format 5)
PERL_GOLDEN = _github_archive_golden(
    tool="perl",
    version="5.42.0.0",
    file=PERL_FILE,
    sha=PERL_SHA,
    url=PERL_URL,
    size=14832372,
    binaries=["bin/perl", "bin/cpanm"],
    verify={"command": "perl -v"},
)


def test_perl_plans_as_tsuku_plans_it() -> None:
    plan = plan_recipe(
        parse_recipe(PERL),
        ResolvedVersion("5.42.0.0", "5.42.0.0"),
        DEBIAN,
        install_dir="/t",
        assets=(PERL_FILE, "perl-darwin-arm64.tar.xz"),
        digests={PERL_FILE: PERL_SHA},
        sizes={PERL_FILE: 14832372},
    )
    ours, own = _json(plan)
    _same(ours, PERL_GOLDEN)
    assert own == {"unsupported": []}


PATCHELF = """
[metadata]
name = "patchelf"
description = "Modify the dynamic linker and RPATH of ELF executables"

[version]
source = "homebrew"
formula = "patchelf"

[[steps]]
action = "homebrew"
formula = "patchelf"

[[steps]]
action = "install_binaries"
outputs = ["bin/patchelf"]

[verify]
command = "{install_dir}/bin/patchelf --version"
pattern = "patchelf {version}"
"""

BOTTLE_SHA = "fe8a76cdde4a5666cccbcdfc328bfb77f5d05b63a52ce103b487166be696ac6b"
BOTTLE_URL = "https://ghcr.io/v2/homebrew/core/patchelf/blobs/sha256:" + BOTTLE_SHA
# golden: embedded/patchelf/v0.18.0-linux-amd64.json; the stored copy is format 4, so
# format_version and storage_version are as every format-5 golden has them (the only
# difference between the two formats in the goldens of ca-certificates and zig).
PATCHELF_GOLDEN = {
    "format_version": 5,
    "storage_version": 1,
    "tool": "patchelf",
    "version": "0.18.0",
    "platform": {"os": "linux", "arch": "amd64"},
    "deterministic": True,
    "steps": [
        {
            "action": "download_file",
            "params": {"checksum": BOTTLE_SHA, "dest": "patchelf.tar.gz", "url": BOTTLE_URL},
            "evaluable": True,
            "deterministic": True,
            "url": BOTTLE_URL,
            "checksum": BOTTLE_SHA,
            "size": 130124,
        },
        {
            "action": "extract",
            "params": {"archive": "patchelf.tar.gz", "format": "tar.gz", "strip_dirs": 2},
            "evaluable": True,
            "deterministic": True,
        },
        {
            "action": "homebrew_relocate",
            "params": {"formula": "patchelf"},
            "evaluable": False,
            "deterministic": True,
        },
        {
            "action": "install_binaries",
            "params": {"outputs": ["bin/patchelf"]},
            "evaluable": True,
            "deterministic": True,
        },
    ],
    "verify": {
        "command": "{install_dir}/bin/patchelf --version",
        "pattern": "patchelf {version}",
    },
}


def test_patchelf_names_its_bottle_as_tsuku_does() -> None:
    """The bottle's work file is ``patchelf.tar.gz`` (not the blob's name); its size is
    the one field only the download gives (the manifest digest is the checksum)."""
    bottle = BottleRef(
        formula="patchelf",
        pkg_version="0.18.0",
        platform_tag="x86_64_linux",
        url=BOTTLE_URL,
        sha256=BOTTLE_SHA,
    )
    plan = plan_recipe(
        parse_recipe(PATCHELF),
        ResolvedVersion("0.18.0", "0.18.0"),
        LINUX,
        install_dir="/t",
        bottles={0: bottle},
    )
    ours, own = _json(plan)
    assert ours["steps"][0]["computed_at_download"] == ["size"]
    _same(ours, _without_downloaded(PATCHELF_GOLDEN, ours))
    assert own == {"unsupported": []}
