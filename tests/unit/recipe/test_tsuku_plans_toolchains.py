"""The last four golden plans: an ecosystem step's toolchain nested as tsuku nests it
(the style of ``test_tsuku_plans_ecosystems.py``: our own recipes, the expected plans
transcribed by hand from tsuku's ``testdata/golden/plans/<letter>/<tool>/``, compared
as JSON text, only the fields our steps name ``computed_at_download`` taken out).

tsuku's ecosystem actions declare their toolchain as an install-time dependency
installed from its recipe (``npm_install``/``npm_exec``: nodejs; ``cargo_install``:
rust; ``gem_install``, ``gem_exec``, ``install_gem_direct``: ruby), nested first, before
the recipe's own ``dependencies`` and ``extra_dependencies`` (cargo-audit's and
jekyll's ``zig``); a bottle's relocation nests patchelf. The four goldens are stored in
format 3: only ``format_version``, ``storage_version`` and ``recipe_hash`` differ from
format 5, so they are transcribed with format 5's header.
"""

from __future__ import annotations

import json
from typing import Any

from test_tsuku_plans_ecosystems import (
    BUNDLER,
    BUNDLER_STEP,
    CARGO_AUDIT,
    CARGO_AUDIT_STEP,
    CDK,
    CDK_STEP,
    JEKYLL_STEP,
    LINUX,
    _bottle_steps,
    _bottled,
    _header,
    _json,
    _same,
)

from tsukud.recipe import ResolvedVersion, parse_recipe
from tsukud.recipe.plan import Plan, plan_recipe, planned_dependencies
from tsukud.recipe.toolchains import HostToolchain


def _bottle(name: str, formula: str, *, library: bool, steps: str, verify: str) -> str:
    kind = '\ntype = "library"' if library else ""
    return f"""
[metadata]
name = "{name}"
description = "{name} from its bottle"{kind}

[version]
source = "homebrew"
formula = "{formula}"

[[steps]]
action = "homebrew"
formula = "{formula}"

{steps}
{verify}
"""


def _step(action: str, params: dict[str, Any], *, evaluable: bool = True, det: bool = True):
    return {"action": action, "params": params, "evaluable": evaluable, "deterministic": det}


def _fetched(url: str, dest: str) -> dict[str, Any]:
    """A download tsuku made while planning (the checksum and size it computed are
    taken out as our step names them: transcribed as placeholders)."""
    return {
        **_step(
            "download_file",
            {"checksum": "<sha256>", "checksum_algo": "sha256", "dest": dest, "url": url},
        ),
        "url": url,
        "checksum": "<sha256>",
        "size": 0,
    }


# patchelf as the goldens nesting a bottle's relocation tool have it (the recipe's
# older spelling: ``binaries`` and a bare verify command)
PATCHELF = _bottle(
    "patchelf",
    "patchelf",
    library=False,
    steps='[[steps]]\naction = "install_binaries"\nbinaries = ["bin/patchelf"]\n',
    verify='[verify]\ncommand = "patchelf --version"\npattern = "patchelf {version}"\n',
)
PATCHELF_GOLDEN = {
    "tool": "patchelf",
    "version": "0.18.0",
    "steps": [
        *_bottle_steps("patchelf"),
        _step("install_binaries", {"binaries": ["bin/patchelf"]}),
    ],
    "verify": {"command": "patchelf --version", "pattern": "patchelf {version}"},
}

GCC_LIBS_COMMAND = """mkdir -p lib
# Copy the actual library files (find the real files, not symlinks)
cp lib/gcc/current/libstdc++.so.6.0.* lib/
cp lib/gcc/current/libgcc_s.so.1 lib/
# Create standard symlinks with explicit targets
cd lib
STDCXX=$(ls libstdc++.so.6.0.* 2>/dev/null | head -1)
ln -sf "$STDCXX" libstdc++.so.6
ln -sf libstdc++.so.6 libstdc++.so
ln -sf libgcc_s.so.1 libgcc_s.so
"""
GCC_LIBS_PATTERNS = ["lib/libstdc++.so*", "lib/libgcc_s.so*"]
GCC_LIBS = _bottle(
    "gcc-libs",
    "gcc",
    library=True,
    steps=f'[[steps]]\naction = "run_command"\ncommand = {json.dumps(GCC_LIBS_COMMAND)}\n\n'
    f'[[steps]]\naction = "install_libraries"\npatterns = {json.dumps(GCC_LIBS_PATTERNS)}\n',
    verify="",
)

NODE_WRAPPER = """mv bin/node bin/node.real
cat > bin/node << 'WRAPPER'
#!/bin/sh
# Get the directory where this script is located
SCRIPT_DIR="$(cd "$(dirname "$0")" && pwd)"
INSTALL_DIR="$(dirname "$SCRIPT_DIR")"
export LD_LIBRARY_PATH="$INSTALL_DIR/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
exec "$INSTALL_DIR/bin/node.real" "$@"
WRAPPER
chmod +x bin/node
"""
NODEJS = f"""
[metadata]
name = "nodejs"
description = "JavaScript runtime built on Chrome's V8 JavaScript engine"
runtime_dependencies = ["gcc-libs"]

[version]
github_repo = "nodejs/node"
tag_prefix = "v"

[[steps]]
action = "download_archive"
url = "https://nodejs.org/dist/v{{version}}/node-v{{version}}-{{os}}-{{arch}}.tar.gz"
arch_mapping = {{ amd64 = "x64", arm64 = "arm64" }}
strip_dirs = 1
install_mode = "directory"
binaries = ["bin/node", "bin/npm"]

[[steps]]
action = "link_dependencies"
library = "gcc-libs"
dependencies = ["gcc-libs"]
when = {{ os = ["linux"] }}

[[steps]]
action = "run_command"
command = {json.dumps(NODE_WRAPPER)}
when = {{ os = ["linux"] }}

[verify]
command = "{{install_dir}}/bin/node --version"
pattern = "{{version}}"
"""
NODE_FILE = "node-v24.12.0-linux-x64.tar.gz"
NODE_BIN = ["bin/node", "bin/npm"]
# golden: c/cdk/v3.0.0-linux-amd64.json, its dependencies: nodejs 24.12.0, gcc-libs
# 15.2.0 in it, patchelf in gcc-libs
NODEJS_GOLDEN = {
    "tool": "nodejs",
    "version": "24.12.0",
    "dependencies": [
        {
            "tool": "gcc-libs",
            "version": "15.2.0",
            "dependencies": [PATCHELF_GOLDEN],
            "steps": [
                *_bottle_steps("gcc"),
                _step("run_command", {"command": GCC_LIBS_COMMAND}, evaluable=False, det=False),
                _step("install_libraries", {"patterns": GCC_LIBS_PATTERNS}),
            ],
            "recipe_type": "library",
        }
    ],
    "steps": [
        _fetched(f"https://nodejs.org/dist/v24.12.0/{NODE_FILE}", NODE_FILE),
        _step("extract", {"archive": NODE_FILE, "format": "tar.gz", "strip_dirs": 1}),
        _step("chmod", {"files": NODE_BIN}),
        _step("install_binaries", {"binaries": NODE_BIN, "install_mode": "directory"}),
        _step("link_dependencies", {"dependencies": ["gcc-libs"], "library": "gcc-libs"}),
        _step("run_command", {"command": NODE_WRAPPER}, evaluable=False, det=False),
    ],
    "verify": {"command": "{install_dir}/bin/node --version", "pattern": "{version}"},
}
CDK_GOLDEN = {
    **_header("cdk", "3.0.0", deterministic=False),
    "dependencies": [NODEJS_GOLDEN],
    "steps": [CDK_STEP],
    "verify": {"command": "cdk --version", "pattern": "{version}"},
}


def _nodejs() -> Plan:
    patchelf = _bottled(PATCHELF, "patchelf", "0.18.0", [])
    gcc_libs = _bottled(GCC_LIBS, "gcc", "15.2.0", [patchelf])
    return plan_recipe(
        parse_recipe(NODEJS),
        ResolvedVersion("24.12.0", "v24.12.0"),
        LINUX,
        install_dir="/t",
        dependencies=[gcc_libs],
    )


def test_cdk_nests_nodejs_as_tsuku_does() -> None:
    """npm_install's toolchain is the nodejs recipe, nested first with its own
    dependencies (gcc-libs, and patchelf for gcc's bottle)."""
    names, host = planned_dependencies(parse_recipe(CDK), LINUX, "3.0.0", {"nodejs"})
    assert (names, host) == (("nodejs",), ())
    plan = plan_recipe(
        parse_recipe(CDK),
        ResolvedVersion("3.0.0", "3.0.0"),
        LINUX,
        install_dir="/t",
        dependencies=[_nodejs()],
    )
    assert _same(plan, CDK_GOLDEN) == {"unsupported": []}


def test_without_a_toolchain_recipe_the_plan_says_the_hosts_is_used() -> None:
    """No nodejs recipe in the registry: nothing is nested (the plan stays as it was)
    and the plan names the host's program instead of dropping the toolchain silently."""
    names, host = planned_dependencies(parse_recipe(CDK), LINUX, "3.0.0", set())
    assert names == ()
    assert host == (HostToolchain(program="npm", recipe="nodejs"),)
    plan = plan_recipe(
        parse_recipe(CDK),
        ResolvedVersion("3.0.0", "3.0.0"),
        LINUX,
        install_dir="/t",
        host_toolchains=host,
    )
    ours, _own = _json(plan)
    assert "dependencies" not in ours
    assert json.loads(json.dumps(ours))["host_toolchains"] == [
        {"program": "npm", "recipe": "nodejs"}
    ]
    # A dependency's host toolchain is its dependent's news too.
    outer = plan_recipe(
        parse_recipe(BUNDLER),
        ResolvedVersion("4.0.3", "4.0.3"),
        LINUX,
        install_dir="/t",
        dependencies=[plan],
    )
    assert outer.host_toolchains == host


RUST_OS = {"darwin": "apple-darwin", "linux": "unknown-linux-gnu"}
X86 = {"amd64": "x86_64", "arm64": "aarch64"}
RUST_BIN = [
    "bin/cargo",
    "bin/rustc",
    "bin/rustdoc",
    "bin/rustfmt",
    "bin/cargo-clippy",
    "bin/clippy-driver",
    "bin/rust-analyzer",
]
RUST = f"""
[metadata]
name = "rust"
description = "The Rust toolchain"

[version]
github_repo = "rust-lang/rust"

[[steps]]
action = "download"
url = "https://static.rust-lang.org/dist/rust-{{version}}-{{arch}}-{{os}}.tar.gz"
os_mapping = {{ linux = "unknown-linux-gnu", darwin = "apple-darwin" }}
arch_mapping = {{ amd64 = "x86_64", arm64 = "aarch64" }}

[[steps]]
action = "extract"
archive = "rust-{{version}}-{{arch}}-{{os}}.tar.gz"
format = "tar.gz"
strip_dirs = 1
os_mapping = {{ linux = "unknown-linux-gnu", darwin = "apple-darwin" }}
arch_mapping = {{ amd64 = "x86_64", arm64 = "aarch64" }}

[[steps]]
action = "run_command"
command = "./install.sh --prefix={{install_dir}} --disable-ldconfig"

[[steps]]
action = "install_binaries"
binaries = {json.dumps(RUST_BIN)}
install_mode = "directory"

[verify]
command = "{{install_dir}}/bin/cargo --version"
pattern = "cargo {{version}}"
"""
RUST_FILE = "rust-1.92.0-x86_64-unknown-linux-gnu.tar.gz"
RUST_GOLDEN = {
    "tool": "rust",
    "version": "1.92.0",
    "steps": [
        _fetched(f"https://static.rust-lang.org/dist/{RUST_FILE}", RUST_FILE),
        _step(
            "extract",
            {
                "arch_mapping": X86,
                "archive": RUST_FILE,
                "format": "tar.gz",
                "os_mapping": RUST_OS,
                "strip_dirs": 1,
            },
        ),
        _step(
            "run_command",
            {"command": "./install.sh --prefix={install_dir} --disable-ldconfig"},
            evaluable=False,
            det=False,
        ),
        _step("install_binaries", {"binaries": RUST_BIN, "install_mode": "directory"}),
    ],
    "verify": {"command": "{install_dir}/bin/cargo --version", "pattern": "cargo {version}"},
}

ZIG = """
[metadata]
name = "zig"
description = "General-purpose programming language and toolchain"

[version]
github_repo = "ziglang/zig"

[[steps]]
action = "download_archive"
url = "https://ziglang.org/download/{version}/zig-{arch}-{os}-{version}.tar.xz"
strip_dirs = 1
binaries = ["zig"]
install_mode = "directory"
os_mapping = { darwin = "macos", linux = "linux" }
arch_mapping = { amd64 = "x86_64", arm64 = "aarch64" }

[verify]
command = "zig version"
pattern = "{version}"
"""
ZIG_FILE = "zig-x86_64-linux-0.15.1.tar.xz"
# golden: nested in c/cargo-audit and j/jekyll (zig 0.15.1)
ZIG_GOLDEN = {
    "tool": "zig",
    "version": "0.15.1",
    "steps": [
        _fetched(f"https://ziglang.org/download/0.15.1/{ZIG_FILE}", ZIG_FILE),
        _step("extract", {"archive": ZIG_FILE, "format": "tar.xz", "strip_dirs": 1}),
        _step("chmod", {"files": ["zig"]}),
        _step("install_binaries", {"binaries": ["zig"], "install_mode": "directory"}),
    ],
    "verify": {"command": "zig version", "pattern": "{version}"},
}


def _zig() -> Plan:
    return plan_recipe(
        parse_recipe(ZIG), ResolvedVersion("0.15.1", "0.15.1"), LINUX, install_dir="/t"
    )


# tsuku's cargo-audit: the crate, and zig for native C code (``extra_dependencies``)
CARGO_AUDIT_ZIG = CARGO_AUDIT.replace(
    'description = "Security audit for Cargo.lock"',
    'description = "Security audit for Cargo.lock"\nextra_dependencies = ["zig"]',
)
# golden: c/cargo-audit/v0.22.0-linux-amd64.json (rust 1.92.0 and zig 0.15.1 nested)
CARGO_AUDIT_GOLDEN = {
    **_header("cargo-audit", "0.22.0", deterministic=False),
    "dependencies": [RUST_GOLDEN, ZIG_GOLDEN],
    "steps": [CARGO_AUDIT_STEP],
    "verify": {"command": "cargo-audit --version", "pattern": "cargo-audit {version}"},
}


def test_cargo_audit_nests_rust_then_its_zig() -> None:
    """cargo_install's toolchain (rust) first, then the recipe's extra dependency.
    rust's install command keeps ``{install_dir}`` as tsuku's plan does (planned with
    the placeholder; ``tsukuctl plan`` fills in the tool's directory)."""
    recipe = parse_recipe(CARGO_AUDIT_ZIG)
    names, host = planned_dependencies(recipe, LINUX, "0.22.0", {"rust"})
    assert (names, host) == (("rust", "zig"), ())
    rust = plan_recipe(
        parse_recipe(RUST),
        ResolvedVersion("1.92.0", "1.92.0"),
        LINUX,
        install_dir="{install_dir}",
    )
    plan = plan_recipe(
        recipe,
        ResolvedVersion("0.22.0", "0.22.0"),
        LINUX,
        install_dir="/t",
        dependencies=[rust, _zig()],
    )
    assert _same(plan, CARGO_AUDIT_GOLDEN) == {"unsupported": []}


LIBYAML_PATTERNS = ["lib/*.so*", "lib/*.dylib"]
LIBYAML = _bottle(
    "libyaml",
    "libyaml",
    library=True,
    steps=f'[[steps]]\naction = "install_libraries"\npatterns = {json.dumps(LIBYAML_PATTERNS)}\n',
    verify="",
)
RUBY_SCRIPT = r"""mv bin/ruby bin/ruby.real
cat > bin/ruby << 'WRAPPER'
#!/bin/bash
# Resolve symlinks to get the real script location
SCRIPT_PATH="${BASH_SOURCE[0]}"
while [ -L "$SCRIPT_PATH" ]; do
    SCRIPT_DIR="$(cd -P "$(dirname "$SCRIPT_PATH")" && pwd)"
    SCRIPT_PATH="$(readlink "$SCRIPT_PATH")"
    [[ $SCRIPT_PATH != /* ]] && SCRIPT_PATH="$SCRIPT_DIR/$SCRIPT_PATH"
done
SCRIPT_DIR="$(cd -P "$(dirname "$SCRIPT_PATH")" && pwd)"
INSTALL_DIR="$(dirname "$SCRIPT_DIR")"

# Set library paths for dynamically linked Ruby (includes bundled libyaml)
if [[ "$OSTYPE" == "darwin"* ]]; then
    export DYLD_LIBRARY_PATH="$INSTALL_DIR/lib${DYLD_LIBRARY_PATH:+:$DYLD_LIBRARY_PATH}"
else
    export LD_LIBRARY_PATH="$INSTALL_DIR/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
fi

# Dynamically detect Ruby version from lib/ruby directory
RUBY_VERSION=$(ls -1 "$INSTALL_DIR/lib/ruby" 2>/dev/null <GREP_VERSION> | head -1)
if [ -z "$RUBY_VERSION" ]; then
    RUBY_VERSION=$("$INSTALL_DIR/bin/ruby.real" -e 'puts RUBY_VERSION' 2>/dev/null || echo "3.4.0")
fi

# Detect architecture for platform-specific paths
if [[ "$OSTYPE" == "darwin"* ]]; then
    ARCH=$(uname -m)
    if [ "$ARCH" = "arm64" ]; then
        RUBY_ARCH="arm64-darwin"
    else
        RUBY_ARCH="x86_64-darwin"
    fi
    # Find the exact darwin version directory
    DARWIN_DIR=$(ls -1 "$INSTALL_DIR/lib/ruby/$RUBY_VERSION" <GREP_DARWIN> | head -1)
    if [ -n "$DARWIN_DIR" ]; then
        RUBY_ARCH="$DARWIN_DIR"
    fi
else
    ARCH=$(uname -m)
    case "$ARCH" in
        x86_64) RUBY_ARCH="x86_64-linux" ;;
        aarch64) RUBY_ARCH="aarch64-linux" ;;
        *) RUBY_ARCH="$ARCH-linux" ;;
    esac
fi

# Set Ruby library paths (override hardcoded paths from build)
export RUBYLIB="<RUBYLIB>"

# Set GEM paths
export GEM_HOME="$INSTALL_DIR/lib/ruby/gems/$RUBY_VERSION"
export GEM_PATH="$GEM_HOME${GEM_PATH:+:$GEM_PATH}"

exec "$INSTALL_DIR/bin/ruby.real" "$@"
WRAPPER
chmod +x bin/ruby

# Convert Ruby scripts to bash wrappers that call ruby with the script
for script in gem irb erb bundle bundler rake rdoc ri; do
    if [ -f "bin/$script" ]; then
        mv "bin/$script" "bin/$script.rb"
        cat > "bin/$script" << 'SCRIPTWRAPPER'
#!/bin/bash
# Resolve symlinks to get the real script location
SCRIPT_PATH="${BASH_SOURCE[0]}"
while [ -L "$SCRIPT_PATH" ]; do
    DIR="$(cd -P "$(dirname "$SCRIPT_PATH")" && pwd)"
    SCRIPT_PATH="$(readlink "$SCRIPT_PATH")"
    [[ $SCRIPT_PATH != /* ]] && SCRIPT_PATH="$DIR/$SCRIPT_PATH"
done
SCRIPT_DIR="$(cd -P "$(dirname "$SCRIPT_PATH")" && pwd)"
SCRIPT_NAME="$(basename "$SCRIPT_PATH")"
exec "$SCRIPT_DIR/ruby" "$SCRIPT_DIR/${SCRIPT_NAME}.rb" "$@"
SCRIPTWRAPPER
        chmod +x "bin/$script"
    fi
done
"""
# (lines too long to write here, put in)
_LIB = "$INSTALL_DIR/lib/ruby"
_V, _VA = "$RUBY_VERSION", "$RUBY_VERSION/$RUBY_ARCH"
RUBY_SCRIPT = (
    RUBY_SCRIPT.replace("<GREP_VERSION>", r"| grep -E '^[0-9]+\.[0-9]+\.[0-9]+$'")
    .replace("<GREP_DARWIN>", '2>/dev/null | grep -E "darwin"')
    .replace(
        "<RUBYLIB>",
        f"{_LIB}/site_ruby/{_V}:{_LIB}/site_ruby/{_VA}:{_LIB}/site_ruby:"
        f"{_LIB}/vendor_ruby/{_V}:{_LIB}/vendor_ruby/{_VA}:{_LIB}/vendor_ruby:"
        f"{_LIB}/{_V}:{_LIB}/{_VA}${{RUBYLIB:+:$RUBYLIB}}",
    )
)
RUBY_BIN = ["bin/ruby", "bin/gem", "bin/bundle", "bin/bundler", "bin/irb", "bin/erb"]
RUBY_OS = {"darwin": "darwin", "linux": "ubuntu-22.04"}
X64 = {"amd64": "x64", "arm64": "arm64"}
RUBY = f"""
[metadata]
name = "ruby"
description = "Ruby, prebuilt by ruby-builder"
runtime_dependencies = ["libyaml"]

[version]
github_repo = "ruby/ruby-builder"

[[steps]]
action = "download"
url = "https://github.com/ruby/ruby-builder/releases/download/ruby-{{version}}/ruby-{{version}}-{{os}}-{{arch}}.tar.gz"
os_mapping = {{ linux = "ubuntu-22.04", darwin = "darwin" }}
arch_mapping = {{ amd64 = "x64", arm64 = "arm64" }}

[[steps]]
action = "extract"
archive = "ruby-{{version}}-{{os}}-{{arch}}.tar.gz"
format = "tar.gz"
strip_dirs = 1
os_mapping = {{ linux = "ubuntu-22.04", darwin = "darwin" }}
arch_mapping = {{ amd64 = "x64", arm64 = "arm64" }}

[[steps]]
action = "link_dependencies"
library = "libyaml"

[[steps]]
action = "run_command"
command = {json.dumps(RUBY_SCRIPT)}

[[steps]]
action = "install_binaries"
binaries = {json.dumps(RUBY_BIN)}
install_mode = "directory"

[verify]
command = "{{install_dir}}/bin/ruby --version"
pattern = "ruby {{version}}"
"""


def _ruby_golden(version: str) -> dict[str, Any]:
    """ruby as bundler's and jekyll's goldens nest it (libyaml in it, patchelf in
    libyaml)."""
    file = f"ruby-{version}-ubuntu-22.04-x64.tar.gz"
    url = f"https://github.com/ruby/ruby-builder/releases/download/ruby-{version}/{file}"
    return {
        "tool": "ruby",
        "version": version,
        "dependencies": [
            {
                "tool": "libyaml",
                "version": "0.2.5",
                "dependencies": [PATCHELF_GOLDEN],
                "steps": [
                    *_bottle_steps("libyaml"),
                    _step("install_libraries", {"patterns": LIBYAML_PATTERNS}),
                ],
                "recipe_type": "library",
            }
        ],
        "steps": [
            _fetched(url, file),
            _step(
                "extract",
                {
                    "arch_mapping": X64,
                    "archive": file,
                    "format": "tar.gz",
                    "os_mapping": RUBY_OS,
                    "strip_dirs": 1,
                },
            ),
            _step("link_dependencies", {"library": "libyaml"}),
            _step("run_command", {"command": RUBY_SCRIPT}, evaluable=False, det=False),
            _step("install_binaries", {"binaries": RUBY_BIN, "install_mode": "directory"}),
        ],
        "verify": {"command": "{install_dir}/bin/ruby --version", "pattern": "ruby {version}"},
    }


def _ruby(version: str) -> Plan:
    patchelf = _bottled(PATCHELF, "patchelf", "0.18.0", [])
    libyaml = _bottled(LIBYAML, "libyaml", "0.2.5", [patchelf])
    return plan_recipe(
        parse_recipe(RUBY),
        ResolvedVersion(version, version),
        LINUX,
        install_dir="/t",
        dependencies=[libyaml],
    )


# golden: b/bundler/v4.0.3-linux-amd64.json (ruby 4.0.1 nested)
BUNDLER_GOLDEN = {
    **_header("bundler", "4.0.3", deterministic=False),
    "dependencies": [_ruby_golden("4.0.1")],
    "steps": [BUNDLER_STEP],
    "verify": {"command": "bundle --version", "pattern": "{version}"},
}


def test_bundler_nests_ruby_as_tsuku_does() -> None:
    names, host = planned_dependencies(parse_recipe(BUNDLER), LINUX, "4.0.3", {"ruby"})
    assert (names, host) == (("ruby",), ())
    plan = plan_recipe(
        parse_recipe(BUNDLER),
        ResolvedVersion("4.0.3", "4.0.3"),
        LINUX,
        install_dir="/t",
        dependencies=[_ruby("4.0.1")],
    )
    assert _same(plan, BUNDLER_GOLDEN) == {"unsupported": []}


JEKYLL = """
[metadata]
name = "jekyll"
description = "Static site generator"
extra_dependencies = ["zig"]

[[steps]]
action = "gem_install"
gem = "jekyll"
executables = ["jekyll"]

[verify]
command = "jekyll --version"
pattern = "jekyll {version}"
"""
# golden: j/jekyll/v4.4.1-linux-amd64.json (ruby 4.0.0, then zig 0.15.1)
JEKYLL_GOLDEN = {
    **_header("jekyll", "4.4.1", deterministic=False),
    "dependencies": [_ruby_golden("4.0.0"), ZIG_GOLDEN],
    "steps": [JEKYLL_STEP],
    "verify": {"command": "jekyll --version", "pattern": "jekyll {version}"},
}


def test_jekyll_nests_ruby_then_its_zig() -> None:
    recipe = parse_recipe(JEKYLL)
    names, host = planned_dependencies(recipe, LINUX, "4.4.1", {"ruby", "zig"})
    assert (names, host) == (("ruby", "zig"), ())
    plan = plan_recipe(
        recipe,
        ResolvedVersion("4.4.1", "4.4.1"),
        LINUX,
        install_dir="/t",
        dependencies=[_ruby("4.0.0"), _zig()],
    )
    assert _same(plan, JEKYLL_GOLDEN) == {"unsupported": []}
