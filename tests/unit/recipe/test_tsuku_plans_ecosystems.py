"""``plan_recipe`` against tsuku's golden plans for ecosystem steps and nested
dependencies, field by field (the style of ``test_tsuku_plans.py``: our own recipes,
the expected plans transcribed by hand from tsuku's
``testdata/golden/plans/<letter>/<tool>/`` and ``embedded/<tool>/``, compared as JSON
text).

The goldens of these tools are stored in format 3 or 4; only ``format_version``,
``storage_version`` and ``recipe_hash`` (dropped in format 4) differ from format 5,
so they are transcribed with format 5's header, as ``test_tsuku_plans.py`` does for
patchelf. An ecosystem step is decomposed as tsuku's ``Decompose`` does; what tsuku
fills in by resolving the package with the toolchain while planning (the lock file,
the toolchain's version) is named in ``computed_at_download`` and is the one thing
taken out of the golden side.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from test_tsuku_plans import PY_ASSETS, PY_FILE, PY_GOLDEN, PY_SHA, PYTHON

from tsukud.recipe import ResolvedVersion, parse_recipe
from tsukud.recipe.homebrew import BottleRef
from tsukud.recipe.plan import Plan, plan_recipe
from tsukud.recipe.platform import Platform

LINUX = Platform("linux", "amd64", "glibc")
DEBIAN = Platform("linux", "amd64", "glibc", linux_family="debian")
# Where a golden holds a value only tsuku's resolution gives (a lock file tens of
# kilobytes long): it is removed before comparing, so it is not transcribed.
RESOLVED = "<resolved by tsuku while planning>"


def _json(plan: Plan) -> tuple[dict[str, Any], dict[str, Any]]:
    """tsuku's part of our plan, and this project's keys beside it."""
    import msgspec

    data: dict[str, Any] = json.loads(msgspec.json.encode(plan))
    own = {k: data.pop(k) for k in ("unsupported", "warnings") if k in data}
    return data, own


def _trim(golden: dict[str, Any], ours: dict[str, Any]) -> None:
    """Take out of ``golden`` exactly the fields our steps name ``computed_at_download``
    (and the marker off ours), in the plan and every nested dependency plan."""
    for theirs, mine in zip(golden["steps"], ours["steps"], strict=True):
        for field in mine.pop("computed_at_download", []):
            where, _, key = field.rpartition(".")
            del (theirs[where] if where else theirs)[key]
    for theirs_dep, my_dep in zip(
        golden.get("dependencies", []), ours.get("dependencies", []), strict=True
    ):
        _trim(theirs_dep, my_dep)


def _same(plan: Plan, golden: dict[str, Any]) -> dict[str, Any]:
    ours, own = _json(plan)
    expected = json.loads(json.dumps(golden))
    _trim(expected, ours)
    assert json.dumps(ours, indent=2) == json.dumps(expected, indent=2)
    return own


def _header(tool: str, version: str, *, deterministic: bool, family: str | None = None):
    platform = {"os": "linux", "arch": "amd64"}
    if family:
        platform["linux_family"] = family
    return {
        "format_version": 5,
        "storage_version": 1,
        "tool": tool,
        "version": version,
        "platform": platform,
        "deterministic": deterministic,
    }


def _nested(golden: dict[str, Any]) -> dict[str, Any]:
    """A golden plan as tsuku nests it in a dependent's: no header of its own."""
    return {
        k: v
        for k, v in golden.items()
        if k not in ("format_version", "storage_version", "platform", "deterministic")
    }


def _linux(text: str, version: str, tag: str | None = None, **kw: Any) -> Plan:
    """``text`` planned for linux/amd64 at ``version`` (tagged ``tag``)."""
    resolved = ResolvedVersion(version, tag or version)
    return plan_recipe(parse_recipe(text), resolved, LINUX, install_dir="/t", **kw)


def _python_standalone() -> Plan:
    return plan_recipe(
        parse_recipe(PYTHON),
        ResolvedVersion("20251217", "20251217"),
        LINUX,
        install_dir="/t",
        assets=PY_ASSETS,
        digests={PY_FILE: PY_SHA},
        sizes={PY_FILE: 43215542},
    )


BLACK = """
[metadata]
name = "black"
description = "The uncompromising Python code formatter"

[[steps]]
action = "pipx_install"
package = "black"
executables = ["black", "blackd"]

[verify]
command = "black --version"
pattern = "black, {version}"
"""

BLACK_LOCK = (
    "black==26.1a1 \\\n"
    "    --hash=sha256:8fb482cf11667cd271a900cef5e58648c4511f3e25902cf1d35b4294c6964c99\n"
    "click==8.3.1 \\\n"
    "    --hash=sha256:981153a64e25f12d547d3426c367a4857371575ee7ad18df2a6183ab0545b2a6\n"
    + RESOLVED
)


# golden: b/black/v26.1a1-linux-amd64.json (stored in format 3, python-standalone
# 20251217 nested)
def black_golden(lock: str) -> dict[str, Any]:
    """black's golden plan with ``lock`` as its ``locked_requirements`` (here tsuku's
    resolution is named; a recipe writing ``pip_exec`` itself gives the whole lock)."""
    return {
        **_header("black", "26.1a1", deterministic=False),
        "dependencies": [_nested(PY_GOLDEN)],
        "steps": [
            {
                "action": "pip_exec",
                "params": {
                    "executables": ["black", "blackd"],
                    "has_native_addons": True,
                    "locked_requirements": lock,
                    "package": "black",
                    "python_version": "3.10.19",
                    "version": "26.1a1",
                },
                "evaluable": False,
                "deterministic": False,
            }
        ],
        "verify": {"command": "black --version", "pattern": "black, {version}"},
    }


BLACK_GOLDEN = black_golden(BLACK_LOCK)


def test_black_decomposes_into_pip_exec_with_python_standalone_nested() -> None:
    """pipx_install → tsuku's ``pip_exec``; the locked requirements, the Python version
    and whether a wheel is native come from tsuku's resolution and are named."""
    plan = _linux(BLACK, "26.1a1", dependencies=[_python_standalone()])
    assert plan.steps[0].computed_at_download == (
        "params.has_native_addons",
        "params.locked_requirements",
        "params.python_version",
    )
    own = _same(plan, BLACK_GOLDEN)
    assert own["unsupported"] == []
    # The dependency's warning (its wildcard took the first of three builds) is kept.
    (warning,) = own["warnings"]
    assert warning.startswith("python-standalone: steps[0]") and f"took {PY_FILE}" in warning


GO = """
[metadata]
name = "go"
description = "The Go programming language"

[[steps]]
action = "download_archive"
url = "https://go.dev/dl/go{version}.{os}-{arch}.tar.gz"
strip_dirs = 1
install_mode = "directory"
binaries = ["bin/go", "bin/gofmt"]

[verify]
command = "{install_dir}/bin/go version"
pattern = "go{version}"
"""

GOFUMPT = """
[metadata]
name = "gofumpt"
description = "A stricter gofmt"

[[steps]]
action = "go_install"
module = "mvdan.cc/gofumpt"
executables = ["gofumpt"]

[verify]
command = "gofumpt --version"
pattern = "{version}"
"""

GO_FILE = "go1.25.5.linux-amd64.tar.gz"
GO_SHA = "9e9b755d63b36acf30c12a9a3fc379243714c1c6d3dd72861da637f336ebb35b"
# golden: g/gofumpt/v0.7.0-linux-amd64.json (stored in format 3, go 1.25.5 nested)
GOFUMPT_GOLDEN = {
    **_header("gofumpt", "0.7.0", deterministic=False),
    "dependencies": [
        {
            "tool": "go",
            "version": "1.25.5",
            "steps": [
                {
                    "action": "download_file",
                    "params": {
                        "checksum": GO_SHA,
                        "checksum_algo": "sha256",
                        "dest": GO_FILE,
                        "url": f"https://go.dev/dl/{GO_FILE}",
                    },
                    "evaluable": True,
                    "deterministic": True,
                    "url": f"https://go.dev/dl/{GO_FILE}",
                    "checksum": GO_SHA,
                    "size": 59768009,
                },
                {
                    "action": "extract",
                    "params": {"archive": GO_FILE, "format": "tar.gz", "strip_dirs": 1},
                    "evaluable": True,
                    "deterministic": True,
                },
                {
                    "action": "chmod",
                    "params": {"files": ["bin/go", "bin/gofmt"]},
                    "evaluable": True,
                    "deterministic": True,
                },
                {
                    "action": "install_binaries",
                    "params": {"binaries": ["bin/go", "bin/gofmt"], "install_mode": "directory"},
                    "evaluable": True,
                    "deterministic": True,
                },
            ],
            "verify": {"command": "{install_dir}/bin/go version", "pattern": "go{version}"},
        }
    ],
    "steps": [
        {
            "action": "go_build",
            "params": {
                "executables": ["gofumpt"],
                "go_sum": "github.com/google/go-cmp v0.6.0 "
                "h1:ofyhxvXcZhMsU5ulbFiLKl/XBFqE1GSq7atu8tAmTRI=\n" + RESOLVED,
                "go_version": "1.25.5",
                "install_module": "mvdan.cc/gofumpt",
                "module": "mvdan.cc/gofumpt",
                "version": "v0.7.0",
            },
            "evaluable": False,
            "deterministic": False,
        }
    ],
    "verify": {"command": "gofumpt --version", "pattern": "{version}"},
}


def test_gofumpt_decomposes_into_go_build_with_go_nested() -> None:
    """go_install → ``go_build`` (the module's tag as the version, ``install_module``
    beside ``module``); go.sum and the Go version come from tsuku's resolution. The Go
    toolchain's archive has no checksum tsuku did not compute: named too."""
    go = _linux(GO, "1.25.5", "go1.25.5")
    plan = _linux(GOFUMPT, "0.7.0", "v0.7.0", dependencies=[go])
    assert plan.steps[0].computed_at_download == ("params.go_sum", "params.go_version")
    assert _same(plan, GOFUMPT_GOLDEN) == {"unsupported": []}


def _step_only(recipe: str, version: ResolvedVersion) -> dict[str, Any]:
    """The ecosystem step of a plan, its resolved fields taken out (the golden's
    toolchain dependency needs actions another change plans: compared apart)."""
    ours, own = _json(plan_recipe(parse_recipe(recipe), version, LINUX, install_dir="/t"))
    assert own == {"unsupported": []}
    assert ours["deterministic"] is False and "dependencies" not in ours
    (step,) = ours["steps"]
    return dict(step)


def _without(step: dict[str, Any], resolved: list[str]) -> dict[str, Any]:
    trimmed = json.loads(json.dumps(step))
    for field in resolved:
        del trimmed["params"][field.removeprefix("params.")]
    return trimmed


CDK = """
[metadata]
name = "cdk"
description = "AWS Cloud Development Kit"

[[steps]]
action = "npm_install"
package = "aws-cdk"
executables = ["cdk"]

[verify]
command = "cdk --version"
pattern = "{version}"
"""

# golden: c/cdk/v3.0.0-linux-amd64.json, its one step (nodejs 24.12.0 nested)
CDK_STEP = {
    "action": "npm_exec",
    "params": {
        "executables": ["cdk"],
        "has_native_addons": True,
        "ignore_scripts": True,
        "node_version": "v24.12.0",
        "npm_version": "11.6.2",
        "package": "aws-cdk",
        "package_lock": '{\n  "name": "tsuku-npm-eval",\n' + RESOLVED,
        "version": "3.0.0",
    },
    "evaluable": True,
    "deterministic": False,
}


def test_cdk_decomposes_into_npm_exec_with_install_scripts_off() -> None:
    step = _step_only(CDK, ResolvedVersion("3.0.0", "3.0.0"))
    resolved = step.pop("computed_at_download")
    assert resolved == [
        "params.has_native_addons",
        "params.node_version",
        "params.npm_version",
        "params.package_lock",
    ]
    assert step == _without(CDK_STEP, resolved)
    assert step["params"]["ignore_scripts"] is True  # a package's scripts never run


CARGO_AUDIT = """
[metadata]
name = "cargo-audit"
description = "Security audit for Cargo.lock"

[[steps]]
action = "cargo_install"
crate = "cargo-audit"
executables = ["cargo-audit"]

[verify]
command = "cargo-audit --version"
pattern = "cargo-audit {version}"
"""

# golden: c/cargo-audit/v0.22.0-linux-amd64.json, its one step (rust 1.92.0 and zig
# 0.15.1 nested; the lock file is 109 kB)
CARGO_AUDIT_STEP = {
    "action": "cargo_build",
    "params": {
        "crate": "cargo-audit",
        "executables": ["cargo-audit"],
        "lock_checksum": "8c0ee939977b4381600d0df6f1f442e81bd7eb945b595ea268337eec9d5ea987",
        "lock_data": "# This file is automatically @generated by Cargo.\n" + RESOLVED,
        "rust_version": "1.92.0",
        "version": "0.22.0",
    },
    "evaluable": False,
    "deterministic": False,
}


def test_cargo_audit_decomposes_into_cargo_build() -> None:
    step = _step_only(CARGO_AUDIT, ResolvedVersion("0.22.0", "0.22.0"))
    resolved = step.pop("computed_at_download")
    assert resolved == ["params.lock_checksum", "params.lock_data", "params.rust_version"]
    assert step == _without(CARGO_AUDIT_STEP, resolved)


BUNDLER = """
[metadata]
name = "bundler"
description = "Ruby dependency manager"

[[steps]]
action = "gem_install"
gem = "bundler"
executables = ["bundle", "bundler"]

[verify]
command = "bundle --version"
pattern = "{version}"
"""

# golden: b/bundler/v4.0.3-linux-amd64.json, its one step (ruby 4.0.1 nested)
BUNDLER_STEP = {
    "action": "install_gem_direct",
    "params": {"executables": ["bundle", "bundler"], "gem": "bundler", "version": "4.0.3"},
    "evaluable": False,
    "deterministic": False,
}


# golden: j/jekyll/v4.4.1-linux-amd64.json, its one step (ruby 4.0.0 and zig nested)
JEKYLL_STEP = {
    "action": "gem_exec",
    "params": {
        "executables": ["jekyll"],
        "gem": "jekyll",
        "lock_data": "GEM\n  remote: https://rubygems.org/\n" + RESOLVED,
        "ruby_version": "4.0.0",
        "version": "4.4.1",
    },
    "evaluable": False,
    "deterministic": False,
}


def test_bundler_is_installed_directly_as_tsuku_plans_it() -> None:
    """bundler cannot lock itself: ``install_gem_direct`` with nothing resolved; any
    other gem is ``gem_exec`` with its Gemfile.lock and Ruby's version named."""
    step = _step_only(BUNDLER, ResolvedVersion("4.0.3", "4.0.3"))
    assert step == BUNDLER_STEP
    jekyll = _step_only(
        BUNDLER.replace('gem = "bundler"', 'gem = "jekyll"').replace(
            'executables = ["bundle", "bundler"]', 'executables = ["jekyll"]'
        ),
        ResolvedVersion("4.4.1", "4.4.1"),
    )
    resolved = jekyll.pop("computed_at_download")
    assert resolved == ["params.lock_data", "params.ruby_version"]
    assert jekyll == _without(JEKYLL_STEP, resolved)


def _homebrew(name: str, formula: str, *, library: bool, deps: str, steps: str, verify: str) -> str:
    kind = '\ntype = "library"' if library else ""
    return f"""
[metadata]
name = "{name}"
description = "{name} from its bottle"{kind}{deps}

[version]
source = "homebrew"
formula = "{formula}"

[[steps]]
action = "homebrew"
formula = "{formula}"
{steps}
{verify}
"""


PATCHELF = _homebrew(
    "patchelf",
    "patchelf",
    library=False,
    deps="",
    steps='[[steps]]\naction = "install_binaries"\noutputs = ["bin/patchelf"]\n',
    verify='[verify]\ncommand = "{install_dir}/bin/patchelf --version"\n'
    'pattern = "patchelf {version}"\n',
)
BARE_PATCHELF_VERIFY = "patchelf --version"  # the older recipe's verify
ZLIB_OUT = ["lib/libz.a", "lib/libz.so", "lib/libz.so.1", "include/zlib.h", "include/zconf.h"]
ZLIB = _homebrew(
    "zlib",
    "zlib",
    library=True,
    deps="",
    steps='[[steps]]\naction = "install_binaries"\ninstall_mode = "directory"\n'
    f"outputs = {json.dumps(ZLIB_OUT)}\n",
    verify="",
)
OPENSSL_OUT = [
    "bin/openssl",
    "lib/libssl.so",
    "lib/libssl.so.3",
    "lib/libcrypto.so",
    "lib/libcrypto.so.3",
]
OPENSSL = _homebrew(
    "openssl",
    "openssl@3",
    library=True,
    deps='\ndependencies = ["zlib"]',
    steps='[[steps]]\naction = "install_binaries"\ninstall_mode = "directory"\n'
    f"outputs = {json.dumps(OPENSSL_OUT)}\n",
    verify='[verify]\ncommand = "openssl version"\npattern = "OpenSSL {version}"\n',
)
CMAKE_BIN = ["bin/cmake", "bin/ctest", "bin/cpack", "bin/ccmake"]
CMAKE_RPATH = "$ORIGIN/../lib:{libs_dir}/openssl-{deps.openssl.version}/lib"
CMAKE = _homebrew(
    "cmake",
    "cmake",
    library=False,
    deps='\ndependencies = ["openssl"]',
    steps=f'[[steps]]\naction = "set_rpath"\nbinaries = {json.dumps(CMAKE_BIN)}\n'
    f"rpath = '{CMAKE_RPATH}'\n\n"
    '[[steps]]\naction = "install_binaries"\ninstall_mode = "directory"\n'
    f"outputs = {json.dumps(CMAKE_BIN)}\n",
    verify='[verify]\ncommand = "{install_dir}/bin/cmake --version"\n'
    'pattern = "cmake version {version}"\n',
)

BLOBS = {
    "bash": (
        "bash",
        "7f7a002baad948b82cd8e1e0a89ef8816fb3433fe6e914ac2d0ab4f50c90202f",
        3608309,
    ),
    "patchelf": (
        "patchelf",
        "fe8a76cdde4a5666cccbcdfc328bfb77f5d05b63a52ce103b487166be696ac6b",
        130124,
    ),
    "zlib": ("zlib", "38f2469db2ce63b70855a98e5ee27b5b5a92874e52542cbdc0b230bba1e7195f", 175143),
    "openssl@3": (
        "openssl/3",
        "89ac158da355fc26605808829909a11e23d604f2d70ac7e272f318a71c1eab5c",
        11224092,
    ),
    "cmake": (
        "cmake",
        "9b94ff7d2b35b1b560c7752d7ff6b634bd2911aa15f925609d0f0814a1b418a9",
        24368066,
    ),
    # the toolchains' nested bottles (test_tsuku_plans_toolchains.py)
    "gcc": ("gcc", "eebab9738ff2c231ec19c5da5725a830d89322914f8aa84d58728c6b45f84a58", 161971540),
    "libyaml": (
        "libyaml",
        "354677a745b6c62109e792ddbd0cbdaf9e6a471d84fdbde3a7d9bae36d832da8",
        125801,
    ),
}


def _blob_url(formula: str) -> str:
    path, sha, _ = BLOBS[formula]
    return f"https://ghcr.io/v2/homebrew/core/{path}/blobs/sha256:{sha}"


def _bottle_steps(formula: str) -> list[dict[str, Any]]:
    """tsuku's golden steps for a bottle: the blob as ``<formula>.tar.gz``, unpacked
    without its two directories, relocated."""
    _, sha, size = BLOBS[formula]
    url, work = _blob_url(formula), f"{formula}.tar.gz"
    return [
        {
            "action": "download_file",
            "params": {"checksum": sha, "dest": work, "url": url},
            "evaluable": True,
            "deterministic": True,
            "url": url,
            "checksum": sha,
            "size": size,
        },
        {
            "action": "extract",
            "params": {"archive": work, "format": "tar.gz", "strip_dirs": 2},
            "evaluable": True,
            "deterministic": True,
        },
        {
            "action": "homebrew_relocate",
            "params": {"formula": formula},
            "evaluable": False,
            "deterministic": True,
        },
    ]


def _installs(outputs: list[str], *, directory: bool = True) -> dict[str, Any]:
    params: dict[str, Any] = {"outputs": outputs}
    if directory:
        params = {"install_mode": "directory", **params}
    return {
        "action": "install_binaries",
        "params": params,
        "evaluable": True,
        "deterministic": True,
    }


def _patchelf_golden(verify: str) -> dict[str, Any]:
    """patchelf's plan as tsuku nests it (its recipe's verify command changed once)."""
    return {
        "tool": "patchelf",
        "version": "0.18.0",
        "steps": [*_bottle_steps("patchelf"), _installs(["bin/patchelf"], directory=False)],
        "verify": {"command": verify, "pattern": "patchelf {version}"},
    }


def _zlib_golden(outputs: list[str]) -> dict[str, Any]:
    return {
        "tool": "zlib",
        "version": "1.3.1",
        "dependencies": [_patchelf_golden(BARE_PATCHELF_VERIFY)],
        "steps": [*_bottle_steps("zlib"), _installs(outputs)],
        "recipe_type": "library",
    }


# golden: embedded/cmake/v4.2.3-linux-amd64.json (stored in format 4): openssl nested,
# zlib in it, and patchelf (the bottles' relocation needs it) in zlib, each tool once.
CMAKE_GOLDEN = {
    **_header("cmake", "4.2.3", deterministic=True),
    "dependencies": [
        {
            "tool": "openssl",
            "version": "3.6.1",
            "dependencies": [
                {
                    **_zlib_golden(ZLIB_OUT),
                    "dependencies": [_patchelf_golden("{install_dir}/bin/patchelf --version")],
                }
            ],
            "steps": [*_bottle_steps("openssl@3"), _installs(OPENSSL_OUT)],
            "verify": {"command": "openssl version", "pattern": "OpenSSL {version}"},
            "recipe_type": "library",
        }
    ],
    "steps": [
        *_bottle_steps("cmake"),
        {
            "action": "set_rpath",
            "params": {"binaries": CMAKE_BIN, "rpath": CMAKE_RPATH},
            "evaluable": True,
            "deterministic": True,
        },
        _installs(CMAKE_BIN),
    ],
    "verify": {
        "command": "{install_dir}/bin/cmake --version",
        "pattern": "cmake version {version}",
    },
}


def _bottled(
    text: str, formula: str, version: str, dependencies: list[Plan], target: Platform = LINUX
) -> Plan:
    """``text`` planned at ``version`` for ``target`` with its bottle (``BLOBS``)."""
    _, sha, _ = BLOBS[formula]
    bottle = BottleRef(
        formula=formula,
        pkg_version=version,
        platform_tag="x86_64_linux",
        url=_blob_url(formula),
        sha256=sha,
    )
    return plan_recipe(
        parse_recipe(text),
        ResolvedVersion(version, version),
        target,
        install_dir="/t",
        bottles={0: bottle},
        dependencies=dependencies,
    )


def test_cmake_nests_its_dependencies_plans_as_tsuku_does() -> None:
    """Depth first, each tool once: cmake needs openssl, openssl zlib, and zlib's
    bottle patchelf; every bottle's size is what only its download gives."""
    patchelf = _bottled(PATCHELF, "patchelf", "0.18.0", [])
    zlib = _bottled(ZLIB, "zlib", "1.3.1", [patchelf])
    openssl = _bottled(OPENSSL, "openssl@3", "3.6.1", [zlib])
    plan = _bottled(CMAKE, "cmake", "4.2.3", [openssl])
    assert plan.dependencies[0].dependencies[0].dependencies[0].steps[0].computed_at_download == (
        "size",
    )
    assert _same(plan, CMAKE_GOLDEN) == {"unsupported": []}


def test_a_dependency_s_gap_is_its_dependent_s_and_names_it() -> None:
    """A dependency whose bottle was not found leaves its dependent's plan incomplete:
    the gap is listed on the outer plan with the dependency's name."""
    zlib = plan_recipe(
        parse_recipe(ZLIB),
        ResolvedVersion("1.3.1", "1.3.1"),
        LINUX,
        install_dir="/t",
        bottle_problem="no bottle of zlib for x86_64_linux",
    )
    plan = _bottled(OPENSSL, "openssl@3", "3.6.1", [zlib])
    (gap,) = plan.unsupported
    assert gap.action == "homebrew" and gap.reason.startswith("zlib (a dependency): no bottle")


def _bottle_or_apk(name: str, install: str, verify: str) -> str:
    """A recipe as tsuku's embedded ones are: the bottle on glibc, the system package on
    musl; ``install`` is the install_binaries step's keys."""
    glibc = 'when = { os = ["linux"], libc = ["glibc"] }'
    return f"""
[metadata]
name = "{name}"
description = "{name}, bottled or the system's"
binaries = ["bin/{name}"]
supported_os = ["linux"]

[version]
source = "homebrew"
formula = "{name}"

[[steps]]
action = "homebrew"
formula = "{name}"
{glibc}

[[steps]]
action = "install_binaries"
{install}
{glibc}

[[steps]]
action = "apk_install"
packages = ["{name}"]
when = {{ os = ["linux"], libc = ["musl"] }}

[verify]
{verify}
"""


BASH = _bottle_or_apk(
    "bash",
    'install_mode = "directory"\noutputs = ["bin/bash"]',
    'command = "bash --version"\npattern = "GNU bash, version {version}"',
)
BASH_VERIFY = {"command": "bash --version", "pattern": "GNU bash, version {version}"}

# golden: embedded/bash/v5.3.9-linux-debian-amd64.json (format 5): the recipe's
# ``binaries`` after ``verify``; patchelf nested (tsuku adds it for a bottle on Linux)
BASH_DEBIAN_GOLDEN = {
    **_header("bash", "5.3.9", deterministic=True, family="debian"),
    "dependencies": [_patchelf_golden(BARE_PATCHELF_VERIFY)],
    "steps": [*_bottle_steps("bash"), _installs(["bin/bash"])],
    "verify": BASH_VERIFY,
    "binaries": ["bin/bash"],
}

# golden: embedded/bash/v5.3.9-linux-alpine-amd64.json (format 5): musl takes apk
BASH_ALPINE_GOLDEN = {
    **_header("bash", "5.3.9", deterministic=False, family="alpine"),
    "steps": [
        {
            "action": "apk_install",
            "params": {"packages": ["bash"]},
            "evaluable": False,
            "deterministic": False,
        }
    ],
    "verify": BASH_VERIFY,
    "binaries": ["bin/bash"],
}


def test_bash_on_debian_carries_its_binaries_and_nests_patchelf() -> None:
    """The format-5 ``binaries`` key (the recipe's ``metadata.binaries``), and a
    dependency given by the caller nested before the steps."""
    patchelf = _bottled(
        PATCHELF.replace("{install_dir}/bin/patchelf --version", BARE_PATCHELF_VERIFY),
        "patchelf",
        "0.18.0",
        [],
    )
    plan = _bottled(BASH, "bash", "5.3.9", [patchelf], DEBIAN)
    assert _same(plan, BASH_DEBIAN_GOLDEN) == {"unsupported": []}


def test_bash_on_alpine_is_the_system_package_as_tsuku_plans_it() -> None:
    alpine = Platform("linux", "amd64", "musl", linux_family="alpine")
    plan = plan_recipe(
        parse_recipe(BASH), ResolvedVersion("5.3.9", "5.3.9"), alpine, install_dir="/t"
    )
    ours, own = _json(plan)
    assert own == {"unsupported": []}
    # This project's key: the command the step would run, compared apart.
    assert ours["steps"][0].pop("command") == "sudo apk add bash"
    assert json.dumps(ours, indent=2) == json.dumps(BASH_ALPINE_GOLDEN, indent=2)


CURL_RPATH = (
    "$ORIGIN/../lib:{libs_dir}/openssl-{deps.openssl.version}/lib:"
    "{libs_dir}/zlib-{deps.zlib.version}/lib"
)
CURL = f"""
[metadata]
name = "curl"
description = "Command line tool for transferring data with URLs"
dependencies = ["openssl", "zlib"]

[version]
source = "homebrew"
formula = "curl"

[[steps]]
action = "download"
url = "https://curl.se/download/curl-{{version}}.tar.gz"
skip_verification_reason = "curl.se provides PGP signatures but not checksums"

[[steps]]
action = "extract"
archive = "curl-{{version}}.tar.gz"
format = "tar.gz"

[[steps]]
action = "setup_build_env"

[[steps]]
action = "configure_make"
source_dir = "curl-{{version}}"
configure_args = ["--with-openssl", "--with-zlib", "--disable-silent-rules", "--without-libpsl"]
executables = ["curl"]

[[steps]]
action = "set_rpath"
binaries = [".install/bin/curl"]
rpath = "{CURL_RPATH}"

[[steps]]
action = "install_binaries"
install_mode = "directory"
outputs = ["bin/curl"]

[verify]
command = "curl --version"
pattern = "curl {{version}}"
"""

CURL_SHA = "e9274a5f8ab5271c0e0e6762d2fce194d5f98acc568e4ce816845b2dcc0cf88f"
CURL_URL = "https://curl.se/download/curl-8.18.0.tar.gz"
ZLIB_131_OUT = ["lib/libz.a", "lib/libz.dylib", "lib/libz.so", "include/zlib.h", "include/zconf.h"]
OPENSSL_360_OUT = [
    "bin/openssl",
    "lib/libssl.so",
    "lib/libssl.so.3",
    "lib/libssl.dylib",
    "lib/libssl.3.dylib",
    "lib/libcrypto.so",
    "lib/libcrypto.so.3",
    "lib/libcrypto.dylib",
    "lib/libcrypto.3.dylib",
]
OPENSSL_360_SHA = "dae10cea048eae154365f18fc51154093f8ba378ace3fe138f89dda08bf09e4e"


def _openssl_360_steps() -> list[dict[str, Any]]:
    url = f"https://ghcr.io/v2/homebrew/core/openssl/3/blobs/sha256:{OPENSSL_360_SHA}"
    fetch, unpack, relocate = _bottle_steps("openssl@3")
    fetch = {
        **fetch,
        "params": {"checksum": OPENSSL_360_SHA, "dest": "openssl@3.tar.gz", "url": url},
        "url": url,
        "checksum": OPENSSL_360_SHA,
        "size": 11218983,
    }
    return [fetch, unpack, relocate, _installs(OPENSSL_360_OUT)]


# golden: c/curl/v8.18.0-linux-amd64.json (stored in format 3): built from source
# (download, extract as written, setup_build_env, configure_make, set_rpath), openssl >
# zlib > patchelf nested
CURL_GOLDEN = {
    **_header("curl", "8.18.0", deterministic=False),
    "dependencies": [
        {
            "tool": "openssl",
            "version": "3.6.0",
            "dependencies": [_zlib_golden(ZLIB_131_OUT)],
            "steps": _openssl_360_steps(),
            "verify": {"command": "openssl version", "pattern": "OpenSSL {version}"},
            "recipe_type": "library",
        }
    ],
    "steps": [
        {
            "action": "download_file",
            "params": {
                "checksum": CURL_SHA,
                "checksum_algo": "sha256",
                "dest": "curl-8.18.0.tar.gz",
                "url": CURL_URL,
            },
            "evaluable": True,
            "deterministic": True,
            "url": CURL_URL,
            "checksum": CURL_SHA,
            "size": 4182005,
        },
        {
            "action": "extract",
            "params": {"archive": "curl-8.18.0.tar.gz", "format": "tar.gz"},
            "evaluable": True,
            "deterministic": True,
        },
        {"action": "setup_build_env", "params": {}, "evaluable": False, "deterministic": True},
        {
            "action": "configure_make",
            "params": {
                "configure_args": [
                    "--with-openssl",
                    "--with-zlib",
                    "--disable-silent-rules",
                    "--without-libpsl",
                ],
                "executables": ["curl"],
                "source_dir": "curl-8.18.0",
            },
            "evaluable": False,
            "deterministic": False,
        },
        {
            "action": "set_rpath",
            "params": {
                "binaries": [".install/bin/curl"],
                "rpath": CURL_RPATH,
            },
            "evaluable": True,
            "deterministic": True,
        },
        _installs(["bin/curl"]),
    ],
    "verify": {"command": "curl --version", "pattern": "curl {version}"},
}


def test_curl_built_from_source_plans_as_tsuku_plans_it() -> None:
    """A source build: the tarball tsuku hashed while planning (no checksum upstream:
    the reason is this project's key, compared apart), ``extract`` as written (no
    ``strip_dirs``), the build primitives with their templates filled, and the
    dependencies' plans nested."""
    patchelf = _bottled(
        PATCHELF.replace("{install_dir}/bin/patchelf --version", BARE_PATCHELF_VERIFY),
        "patchelf",
        "0.18.0",
        [],
    )
    zlib_text = ZLIB.replace(json.dumps(ZLIB_OUT), json.dumps(ZLIB_131_OUT))
    zlib = _bottled(zlib_text, "zlib", "1.3.1", [patchelf])
    openssl_text = OPENSSL.replace(json.dumps(OPENSSL_OUT), json.dumps(OPENSSL_360_OUT))
    openssl = plan_recipe(
        parse_recipe(openssl_text),
        ResolvedVersion("3.6.0", "3.6.0"),
        LINUX,
        install_dir="/t",
        bottles={
            0: BottleRef(
                formula="openssl@3",
                pkg_version="3.6.0",
                platform_tag="x86_64_linux",
                url=f"https://ghcr.io/v2/homebrew/core/openssl/3/blobs/sha256:{OPENSSL_360_SHA}",
                sha256=OPENSSL_360_SHA,
            )
        },
        dependencies=[zlib],
    )
    plan = _linux(CURL, "8.18.0", dependencies=[openssl])
    ours, own = _json(plan)
    assert own == {"unsupported": []}
    reason = ours["steps"][0].pop("skip_verification_reason")
    assert reason == "curl.se provides PGP signatures but not checksums"
    assert ours["steps"][0]["computed_at_download"] == [
        "checksum",
        "size",
        "params.checksum",
        "params.checksum_algo",
    ]
    expected = json.loads(json.dumps(CURL_GOLDEN))
    _trim(expected, ours)
    assert json.dumps(ours, indent=2) == json.dumps(expected, indent=2)


PATCHELF_BY_LIBC = _bottle_or_apk(
    "patchelf",
    'outputs = ["bin/patchelf"]',
    'command = "patchelf --version"\npattern = "patchelf {version}"',
)


@pytest.mark.parametrize("family", ["debian", "rhel", "arch", "suse", "alpine"])
def test_patchelf_per_linux_family_as_tsuku_plans_it(family: str) -> None:
    """golden: embedded/patchelf/v0.18.0-linux-<family>-amd64.json (format 5): the
    bottle on the glibc families, the system package on alpine (musl), the family in
    ``platform`` (``tsukuctl plan --platform linux/amd64/<family>``)."""
    musl = family == "alpine"
    target = Platform("linux", "amd64", "musl" if musl else "glibc", linux_family=family)
    if musl:  # no bottle is looked up for a step that does not apply
        v = ResolvedVersion("0.18.0", "0.18.0")
        plan = plan_recipe(parse_recipe(PATCHELF_BY_LIBC), v, target, install_dir="/t")
    else:
        plan = _bottled(PATCHELF_BY_LIBC, "patchelf", "0.18.0", [], target)
    if musl:
        steps: list[dict[str, Any]] = [
            {
                "action": "apk_install",
                "params": {"packages": ["patchelf"]},
                "evaluable": False,
                "deterministic": False,
            }
        ]
    else:
        steps = [*_bottle_steps("patchelf"), _installs(["bin/patchelf"], directory=False)]
    golden = {
        **_header("patchelf", "0.18.0", deterministic=not musl, family=family),
        "steps": steps,
        "verify": {"command": BARE_PATCHELF_VERIFY, "pattern": "patchelf {version}"},
        "binaries": ["bin/patchelf"],
    }
    ours, own = _json(plan)
    assert own == {"unsupported": []}
    if musl:  # this project's key, compared apart
        assert ours["steps"][0].pop("command") == "sudo apk add patchelf"
    expected = json.loads(json.dumps(golden))
    _trim(expected, ours)
    assert json.dumps(ours, indent=2) == json.dumps(expected, indent=2)


MESON = (
    BLACK.replace('name = "black"', 'name = "meson"')
    .replace(
        'package = "black"\nexecutables = ["black", "blackd"]',
        'package = "meson"\nexecutables = ["meson"]',
    )
    .replace(
        'command = "black --version"\npattern = "black, {version}"', 'command = "meson --version"'
    )
)
PY_0414 = "cpython-3.10.20+20260414-x86_64-unknown-linux-gnu-install_only.tar.gz"
PY_0414_SHA = "303047011b2c9f58504a930fc974d84547477cf69a3f2962f25552e2395c13af"


def test_meson_is_pip_exec_in_tsukus_current_format() -> None:
    """golden: embedded/meson/v1.9.2-linux-debian-amd64.json, stored in format 5 (the
    black golden above is format 3): the same decomposition, python-standalone
    20260414 nested."""
    python = plan_recipe(
        parse_recipe(PYTHON),
        ResolvedVersion("20260414", "20260414"),
        DEBIAN,
        install_dir="/t",
        assets=(PY_0414,),
        digests={PY_0414: PY_0414_SHA},
        sizes={PY_0414: 44135353},
    )
    plan = plan_recipe(
        parse_recipe(MESON),
        ResolvedVersion("1.9.2", "1.9.2"),
        DEBIAN,
        install_dir="/t",
        dependencies=[python],
    )
    url = (
        f"https://github.com/indygreg/python-build-standalone/releases/download/20260414/{PY_0414}"
    )
    python_golden = json.loads(json.dumps(_nested(PY_GOLDEN)))
    python_golden["version"] = "20260414"
    fetch, unpack, *_ = python_golden["steps"]
    fetch["params"] = {**fetch["params"], "checksum": PY_0414_SHA, "dest": PY_0414, "url": url}
    fetch.update(url=url, checksum=PY_0414_SHA, size=44135353)
    unpack["params"]["archive"] = PY_0414
    golden = {
        **_header("meson", "1.9.2", deterministic=False, family="debian"),
        "dependencies": [python_golden],
        "steps": [
            {
                "action": "pip_exec",
                "params": {
                    "executables": ["meson"],
                    "has_native_addons": False,
                    "locked_requirements": "meson==1.9.2 \\\n    --hash=sha256:"
                    "1a284dc1912929098a6462401af58dc49ae3f324e94814a38a8f1020cee07cba\n",
                    "package": "meson",
                    "python_version": "3.10.20",
                    "version": "1.9.2",
                },
                "evaluable": False,
                "deterministic": False,
            }
        ],
        "verify": {"command": "meson --version"},
    }
    assert _same(plan, golden) == {"unsupported": []}
