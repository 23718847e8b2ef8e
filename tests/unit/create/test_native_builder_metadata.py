"""What the crates, RubyGems and Go builders read from a package (pure parts)."""

from __future__ import annotations

import gzip
import io
import tarfile

from tsukud.install.ecosystem.cargo import crate_bins
from tsukud.install.ecosystem.gem import gem_metadata
from tsukud.registries import crates, goproxy, rubygems
from tsukud.testing.crates import crate
from tsukud.testing.goproxy import go_module


def test_cargo_manifest_bins_follow_cargos_target_rules() -> None:
    declared = (
        '[package]\nname = "p"\nautobins = false\n\n[[bin]]\nname = "a"\n[[bin]]\nname = "b"\n'
    )
    files = ["Cargo.toml", "src/main.rs", "src/bin/x.rs"]
    assert crates.manifest_bins(declared, files) == ["a", "b"]  # autobins off: only [[bin]]
    auto = '[package]\nname = "p"\n\n[[bin]]\nname = "a"\npath = "src/a.rs"\n'
    files = ["src/main.rs", "src/bin/x.rs", "src/bin/y/main.rs", "src/bin/y/util.rs", "src/lib.rs"]
    assert crates.manifest_bins(auto, files) == ["a", "p", "x", "y"]
    assert crates.manifest_bins('[package]\nname = "p"\n', ["src/lib.rs"]) == []
    assert crates.manifest_bins("not toml [", ["src/main.rs"]) == []


def test_a_crates_binaries_are_read_from_the_crate_file() -> None:
    c = crate("auto-rs", "1.0.0", {"auto-rs": "a", "auto-two": "b"}, declared=False)
    assert crate_bins(c.data, "auto-rs-1.0.0/") == ["auto-rs", "auto-two"]
    d = crate("decl", "0.1.0", {"one": "1", "two": "2"})
    assert crate_bins(d.data, "decl-0.1.0/") == ["one", "two"]


def test_gemspec_executables_from_rubygems_yaml() -> None:
    spec = (
        "--- !ruby/object:Gem::Specification\nname: hello\nbindir: exe\n"
        "executables:\n- hello\n- '2fa'\n- \"hi\"\nextensions: []\n"
    )
    assert rubygems.gemspec_executables(spec) == ["hello", "2fa", "hi"]
    assert rubygems.gemspec_executables("name: x\nexecutables: []\nfiles:\n- a\n") == []
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        data = gzip.compress(spec.encode())
        info = tarfile.TarInfo("metadata.gz")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    assert gem_metadata(buf.getvalue()) == spec


def test_go_version_module_follows_tsukus_inference() -> None:
    assert goproxy.version_module("github.com/go-delve/delve/cmd/dlv") == (
        "github.com/go-delve/delve"
    )
    assert goproxy.version_module("honnef.co/go/tools/cmd/staticcheck") == "honnef.co/go/tools"
    assert goproxy.version_module("mvdan.cc/gofumpt") == "mvdan.cc/gofumpt"
    assert goproxy.version_module("github.com/a/b") == "github.com/a/b"
    declared = "golang.org/x/tools"
    assert goproxy.version_module("golang.org/x/tools/gopls/x", declared) == declared


def test_go_binary_names_and_main_packages() -> None:
    assert goproxy.binary_name("example.com/Fake/hellogo") == "hellogo"
    assert goproxy.binary_name("example.com/tool/v2") == "tool"
    assert goproxy.binary_name("example.com/tool/v2/cmd/tool-extra") == "tool-extra"
    assert goproxy.binary_name("example.com/v1") == "v1"  # v1 is never a major suffix
    main = go_module("example.com/Fake/hellogo", "v1.0.0", "hi", mains={"cmd/x": "x"})
    assert goproxy.main_packages(main.zip, main.path, main.version) == ["", "cmd/x"]
    lib = go_module("example.com/fake/lib", "v1.0.0", None, mains={"a/b": "x"})
    assert goproxy.main_packages(lib.zip, lib.path, lib.version) == ["a/b"]
    assert goproxy.main_packages(b"not a zip", lib.path, lib.version) == []
    assert goproxy.zip_url("http://p/", "example.com/Fake/x", "v1.0.0") == (
        "http://p/example.com/!fake/x/@v/v1.0.0.zip"
    )
