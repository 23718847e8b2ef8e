"""The cargo, gem and go runners' commands and environments (pure parts)."""

from __future__ import annotations

from pathlib import Path

from tsukud.install.ecosystem import cargo, gem, golang
from tsukud.install.ecosystem.actions import index_key, registry_urls
from tsukud.install.ecosystem.prefix import Prefix, RunContext
from tsukud.recipe.model import EcosystemStep

PREFIX = Prefix("t", Path("/h/tools/t-1.0.0"), Path("/h/tools/.staging-t/scratch"))
DAEMON_ENV = {"PATH": "/usr/bin", "HOME": "/root", "ANTHROPIC_API_KEY": "sk-secret"}


def ctx(step: object, url: str, version: str = "1.0.0", index: str = "") -> RunContext:
    return RunContext(
        step,  # type: ignore[arg-type]
        version,
        PREFIX,
        Path("/opt/bin/tool"),
        url,
        DAEMON_ENV,
        index_url=index,
    )


def test_cargo_pins_the_version_and_uses_a_sparse_index_unless_crates_io() -> None:
    step = EcosystemStep(action="cargo_install", package_name="hello-rs", executables=("hello-rs",))
    argv = cargo.argv(ctx(step, "http://x", index="sparse+http://127.0.0.1:9/index"))
    assert argv[1:] == [
        "install",
        "--root",
        "/h/tools/t-1.0.0",
        "--version",
        "=1.0.0",
        "--locked",
        "--index",
        "sparse+http://127.0.0.1:9/index/",
        "hello-rs",
    ]
    assert cargo.index_arg("https://index.crates.io/") == []
    assert cargo.index_arg("sparse+https://index.crates.io") == []
    assert cargo.index_arg("") == []
    # a plain URL is a git index (cargo's syntax), for a cargo older than 1.68 too
    git = "http://127.0.0.1:9/index.git"
    assert cargo.index_arg(git) == ["--index", git] and not cargo.is_sparse(git)
    assert cargo.is_sparse("sparse+http://127.0.0.1:9/index/")
    assert not cargo.is_sparse("sparse+https://index.crates.io/")
    assert cargo.parse_version("cargo 1.95.0 (f2d3ce0bd 2026-03-21)") == (1, 95)
    assert cargo.parse_version("cargo 0.66.0") == (0, 66) < cargo.SPARSE_SINCE
    env = cargo.env_for(ctx(step, "http://x"))
    assert env["CARGO_HOME"].startswith(str(PREFIX.scratch))
    assert env["CARGO_TARGET_DIR"].startswith(str(PREFIX.scratch))
    assert env["CARGO_NET_GIT_FETCH_WITH_CLI"] == "true"
    assert "ANTHROPIC_API_KEY" not in env


def test_rustup_home_follows_the_daemons_home_or_its_setting(tmp_path: Path) -> None:
    (tmp_path / ".rustup").mkdir()
    assert cargo.rustup_env({"HOME": str(tmp_path)}) == {"RUSTUP_HOME": str(tmp_path / ".rustup")}
    assert cargo.rustup_env({"HOME": str(tmp_path / "none")}) == {}
    given = {"HOME": str(tmp_path), "RUSTUP_HOME": "/r", "RUSTUP_TOOLCHAIN": "stable"}
    assert cargo.rustup_env(given) == {"RUSTUP_HOME": "/r", "RUSTUP_TOOLCHAIN": "stable"}


def test_gem_uses_only_the_configured_source_and_wraps_binstubs() -> None:
    step = EcosystemStep(action="gem_install", package_name="hello-gem", executables=("hello",))
    argv = gem.argv(ctx(step, "http://127.0.0.1:9"))
    source = argv.index("--source")
    assert argv[source - 1] == "--clear-sources"  # before --source: nothing else is added
    assert argv[source + 1] == "http://127.0.0.1:9/"
    assert argv[argv.index("--install-dir") + 1] == "/h/tools/t-1.0.0"
    assert argv[argv.index("--version") + 1] == "1.0.0"
    text = gem.wrapper(Prefix("t", Path("/h/it's"), PREFIX.scratch), "hello")
    assert text.splitlines() == [
        "#!/bin/sh",
        "# hello: written by tsuku for the gem installed in this directory",
        "GEM_HOME='/h/it'\"'\"'s'",
        "GEM_PATH='/h/it'\"'\"'s'",
        "export GEM_HOME GEM_PATH",
        "exec '/h/it'\"'\"'s/gem-bin/hello' \"$@\"",
    ]


def test_go_installs_module_at_version_from_the_proxy_alone() -> None:
    step = EcosystemStep(
        action="go_install", package_name="example.com/fake/hellogo", executables=("hellogo",)
    )
    assert golang.argv(ctx(step, "", version="1.3.0"))[1:] == [
        "install",
        "example.com/fake/hellogo@v1.3.0",
    ]
    fake = golang.go_env(ctx(step, "http://127.0.0.1:9/"))
    assert fake["GOPROXY"] == "http://127.0.0.1:9" and fake["GOSUMDB"] == "off"
    assert fake["GOBIN"] == "/h/tools/t-1.0.0/bin"
    assert fake["GOTOOLCHAIN"] == "local" and fake["GOENV"] == "off"
    assert "ANTHROPIC_API_KEY" not in fake
    real = golang.go_env(ctx(step, "https://proxy.golang.org"))
    assert "GOSUMDB" not in real  # Go's own proxy: the checksum database stays on


def test_registry_urls_carry_cargos_index() -> None:
    settings = {
        "discover.crates_url": "http://c",
        "discover.crates_index_url": "http://c/index/",
        "discover.npm_url": "http://n",
        "discover.pypi_url": "http://p",
        "discover.rubygems_url": "http://r",
        "discover.goproxy_url": "http://g",
    }
    urls = registry_urls(settings.__getitem__)
    assert urls[index_key("crates_io")] == "http://c/index/"
    assert urls["crates_io"] == "http://c" and urls["goproxy"] == "http://g"
