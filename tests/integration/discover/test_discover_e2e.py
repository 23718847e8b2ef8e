"""``tsukuctl install <tool>`` without a recipe, end to end: a real tsukud subprocess,
the real client, fake GitHub / ecosystems / search / Claude on loopback and the real
container runtime for the generated recipe's validation."""

from __future__ import annotations

import json
import os
import pty
import select
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.conftest import RETIRING, Tsuku, base_env, short_home
from tests.integration.discover.helpers import (
    CANARIES,
    World,
    claude_finds,
    extract_args,
    set_repo,
)
from tests.integration.sandbox.conftest import docker_endpoint, image  # noqa: F401
from tsukud.errors import ExitCode
from tsukud.testing.http import FakeHTTPServer


@contextmanager
def daemon(world: World, **extra: str) -> Iterator[Tsuku]:
    home = short_home()
    env = {**base_env(home), **world.env(home, "claude", **extra)}
    env.pop("HOME", None)
    env["HOME"] = os.environ.get("HOME", str(home))
    t = Tsuku(home, env)
    try:
        t.start()
        yield t
    finally:
        RETIRING.retire(t)  # stopped and removed in the background (tests/conftest.py)


@pytest.fixture
def tk(world: World) -> Iterator[Tsuku]:
    with daemon(world) as t:
        yield t


def ledger(t: Tsuku, *types: str) -> list[dict]:  # type: ignore[type-arg]
    args = ["events", "--json", "--limit", "0"]
    for ty in types:
        args += ["--type", ty]
    return [json.loads(x) for x in t.ctl(*args, check=True).stdout.splitlines()]


@pytest.mark.slow  # a real package manager or container per run; injected-fork test stays
def test_install_stripe_cli_yes_discovers_verifies_creates_installs(
    world: World,
    tk: Tsuku,
    image: str,  # noqa: F811
) -> None:
    claude_finds(world.claude)
    cp = tk.ctl("install", "stripe-cli", "--yes", timeout=120)
    assert cp.returncode == 0, cp.stderr
    err = cp.stderr
    for part in (
        "Found stripe-cli via web search (claude):",
        "Source:       github:stripe/stripe-cli",
        "Stars:        1,800",
        "Owner:        stripe (Organization)",
        "Approved by --yes: verified on GitHub, not a fork, 1800 stars.",
        "writing a recipe for stripe-cli from github:stripe/stripe-cli",
        "validation passed",
    ):
        assert part in err, part
    assert "discovered stripe-cli: github:stripe/stripe-cli" in cp.stdout
    assert "installed stripe-cli 1.22.0 (stripe)" in cp.stdout
    out = subprocess.run(
        [str(tk.home / "bin" / "stripe"), "--version"], capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "stripe v1.22.0"
    assert (tk.home / "recipes" / "stripe-cli.toml").is_file()
    kinds = [e["type"] for e in ledger(tk, "discovery.*", "generation.*", "install.*")]
    assert kinds.index("discovery.completed") < kinds.index("generation.completed")
    assert kinds[-1] == "install.completed"
    (done,) = ledger(tk, "discovery.completed")
    assert done["payload"]["approval"] == "yes_flag"
    for f in (tk.home / "tsuku.db", tk.home / "logs" / "tsukud.log"):
        data = f.read_bytes()
        assert not any(k.encode() in data for k in CANARIES)


@pytest.mark.slow  # a real package manager or container per run; injected-fork test stays
def test_no_terminal_and_no_yes_is_an_error_naming_both_ways_out(world: World, tk: Tsuku) -> None:
    claude_finds(world.claude)
    cp = tk.ctl("install", "stripe-cli")
    assert cp.returncode == 12, cp.stderr
    assert "there is no terminal to ask" in cp.stderr
    assert "--yes" in cp.stderr and "--from github:stripe/stripe-cli" in cp.stderr
    assert not (tk.home / "recipes" / "stripe-cli.toml").exists()


def test_injected_fork_is_refused_even_with_yes(world: World, tk: Tsuku) -> None:
    set_repo(
        world.github, "evil/stripe-cli", stars=2, fork=True, parent=("stripe/stripe-cli", 1800)
    )
    claude_finds(world.claude, extract_args("evil/stripe-cli", 100))
    cp = tk.ctl("install", "stripe-cli", "--yes")
    assert cp.returncode == 12, cp.stderr
    assert "needs a person's approval: it is a fork" in cp.stderr
    assert "--from github:stripe/stripe-cli" in cp.stderr
    assert not (tk.home / "bin" / "stripe").exists()


def on_a_terminal(
    tk: Tsuku,
    args: list[str],
    replies: list[tuple[bytes, bytes]],
    timeout: float = 30,
    thinking: dict[bytes, float] | None = None,
) -> tuple[int, str, str]:
    """``tsukuctl *args`` with stdin and stderr on a pty (stdout a pipe), answering each
    prompt in turn once it shows (``thinking[prompt]`` seconds after it shows, like a
    person reading); the exit code, the whole screen (newlines as written) and stdout."""
    master, slave = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-m", "tsukuctl", *args],
        env=tk.env,
        stdin=slave,
        stdout=subprocess.PIPE,
        stderr=slave,
    )
    os.close(slave)
    seen = b""
    try:
        for n, (prompt, reply) in enumerate(replies):
            while seen.count(prompt) < sum(p == prompt for p, _ in replies[: n + 1]):
                ready, _, _ = select.select([master], [], [], timeout)
                try:
                    chunk = os.read(master, 4096) if ready else b""
                except OSError:  # the client is gone
                    chunk = b""
                if not chunk:
                    proc.kill()
                    raise AssertionError(f"no {prompt!r} on the screen:\n{seen.decode()}")
                seen += chunk
            time.sleep((thinking or {}).get(prompt, 0.0))
            os.write(master, reply)
        code = proc.wait(timeout=timeout)
        while select.select([master], [], [], 0.2)[0]:  # what it wrote after the last prompt
            try:
                chunk = os.read(master, 4096)
            except OSError:  # EIO: the client closed the terminal
                break
            if not chunk:
                break
            seen += chunk
    finally:
        os.close(master)
        assert proc.stdout is not None
        stdout = proc.stdout.read().decode()
        proc.stdout.close()
    return code, seen.decode().replace("\r\n", "\n"), stdout


@pytest.mark.slow  # a real package manager or container per run; injected-fork test stays
def test_the_question_on_a_terminal(world: World, tk: Tsuku) -> None:
    claude_finds(world.claude)
    code, text, _ = on_a_terminal(tk, ["install", "stripe-cli"], [(b"[y/N]", b"n\n")])
    assert code == 13
    assert "Install stripe-cli from this source? [y/N]" in text
    assert "Source:       github:stripe/stripe-cli" in text
    assert "Confidence:   95/100" in text
    (declined,) = ledger(tk, "confirmation.declined")
    assert declined["payload"]["discovery"]["repo"] == "stripe/stripe-cli"


# Cursor up, erase line, carriage return, a hyperlink (OSC 8) and a bidi override: what a
# page title or a model's evidence could use to repaint the question and hide a warning.
HOSTILE = (
    "\x1b[1A\x1b[2K\rApproved by --yes"
    "\x1b]8;;https://evil.example/x\x1b\\official\x1b]8;;\x1b\\ \u202eetats\u202c"
)


def test_hostile_text_cannot_repaint_the_question(world: World, tk: Tsuku) -> None:
    set_repo(
        world.github, "evil/stripe-cli", stars=2, fork=True, parent=("stripe/stripe-cli", 1800)
    )
    evil = "https://github.com/evil/stripe-cli"
    claude_finds(
        world.claude,
        extract_args("evil/stripe-cli", 100, evidence=[f"{evil} {HOSTILE}"]),
        results=[(evil, f"Stripe CLI {HOSTILE}")],
    )
    code, screen, _ = on_a_terminal(tk, ["install", "stripe-cli"], [(b"[y/N]", b"n\n")])
    assert code == 13
    # Nothing reached the terminal that moves the cursor, erases, links or reorders text:
    # no ESC at all, no carriage return but the terminal's own before each newline.
    assert "\x1b" not in screen and "\x9b" not in screen and "\x9d" not in screen
    assert "\r" not in screen  # (the terminal's own before each newline aside)
    assert not any(c in screen for c in "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")
    assert "evil.example" not in screen  # the hyperlink's hidden target is gone
    assert "Approved by --yesofficial etats" in screen  # its visible text stays, inert
    assert "! this repository is a FORK of stripe/stripe-cli" in screen
    asked = screen[: screen.index("[y/N]") + len("[y/N]")]
    assert asked.endswith("Install stripe-cli from this source? [y/N]")  # nothing repainted it


def test_a_recipe_written_by_install_is_previewed_like_create(
    world: World,
    tk: Tsuku,
    image: str,  # noqa: F811
) -> None:
    prompt = b"[v]iew full recipe, [i]nstall, [c]ancel? "
    code, screen, stdout = on_a_terminal(
        tk,
        ["install", "stripe-cli", "--from", "github:stripe/stripe-cli"],
        [(prompt, b"v\n"), (prompt, b"i\n")],
        timeout=120,
    )
    assert code == 0, screen
    # create's own preview: downloads per platform, actions, verification, validation.
    assert "Generated recipe for stripe-cli (github:stripe/stripe-cli at v1.22.0):" in screen
    assert "  Downloads (1.22.0):" in screen and "  Verification: stripe --version" in screen
    assert "  Validation: passed on linux/" in screen
    assert '[metadata]\nname = "stripe-cli"' in screen  # [v]iew showed the whole recipe
    assert "installed stripe-cli 1.22.0 (stripe)" in stdout
    assert (tk.home / "recipes" / "stripe-cli.toml").is_file()
    (granted,) = ledger(tk, "confirmation.granted")
    assert granted["payload"]["kind"] == "recipe"
    assert granted["payload"]["recipe"]["tool"] == "stripe-cli"


def test_without_a_terminal_a_written_recipe_needs_yes(
    world: World,
    tk: Tsuku,
    image: str,  # noqa: F811
) -> None:
    cp = tk.ctl("install", "stripe-cli", "--from", "github:stripe/stripe-cli", timeout=120)
    assert cp.returncode == 12, cp.stderr
    assert "must be reviewed before it is installed" in cp.stderr
    assert "hint: Run it again with --yes" in cp.stderr
    assert not (tk.home / "recipes" / "stripe-cli.toml").exists()
    assert not (tk.home / "bin" / "stripe").exists()


def _crates_world(tmp: Path) -> tuple[FakeHTTPServer, dict[str, str]]:
    from tsukud.testing.crates import FakeCratesIo, crate

    crates = FakeCratesIo()
    for v in ("0.1.0", "0.2.0", "1.0.0"):
        crates.publish(
            crate("rgx", v, {"rgx": f"rgx {v}"}),
            recent_downloads=5000,
            repository="https://github.com/fake/rgx",
        )
    return crates, crates.env(git=True)


def _rubygems_world(tmp: Path) -> tuple[FakeHTTPServer, dict[str, str]]:
    from tsukud.testing.gems import FakeRubyGems, build_gem

    gems = FakeRubyGems()
    for v in ("0.1.0", "0.2.0", "0.3.0", "0.4.0", "1.0.0"):
        gems.publish(
            build_gem(tmp, "rgx", v, {"rgx": f"rgx {v}"}),
            downloads=5000,
            source_code_uri="https://github.com/fake/rgx",
        )
    return gems, gems.env()


@pytest.mark.slow  # a real package manager or container per run; injected-fork test stays
@pytest.mark.parametrize(
    ("registry", "toolchain", "action", "fetched"),
    [
        ("crates.io", "cargo", "cargo_install", "/api/v1/crates/rgx/1.0.0/download"),
        ("rubygems", "gem", "gem_install", "/gems/rgx-1.0.0.gem"),
    ],
)
def test_install_a_crate_or_gem_without_a_recipe(
    world: World, tmp_path: Path, registry: str, toolchain: str, action: str, fetched: str
) -> None:
    """``tsukuctl install rgx``: discovery's probe finds it on crates.io (or RubyGems),
    the only match; the registry's builder writes the recipe from its metadata, the
    real cargo (gem) installs it in the validation container to validate it, then for
    good: runnable. The registry is a fake serving a real crate (gem)."""
    if shutil.which(toolchain) is None:
        pytest.skip(f"{toolchain} is not installed")
    make = _crates_world if registry == "crates.io" else _rubygems_world
    fake, fake_env = make(tmp_path)
    with fake, daemon(world, **fake_env) as t:
        cp = t.ctl("install", "rgx", "--yes", timeout=180)
        assert cp.returncode == 0, cp.stderr
        assert f"discovered rgx: {registry}:rgx (approved by --yes)" in cp.stdout
        assert "the only clear match" not in cp.stdout + cp.stderr
        assert "installed rgx 1.0.0 (rgx)" in cp.stdout
        out = subprocess.run(
            [str(t.home / "bin" / "rgx"), "x"], capture_output=True, text=True, check=True
        )
        assert out.stdout.strip() == "rgx 1.0.0 x"
        recipe = (t.home / "recipes" / "rgx.toml").read_text()
        assert f'action = "{action}"' in recipe
        assert not world.claude.requests
        kinds = [e["type"] for e in ledger(t, "validation.*")]
        assert kinds == ["validation.started", "validation.passed"]
        # the pinned package was fetched for the validation and for the install
        assert fetched in [r.route for r in fake.requests]


def prettyfmt_runs(tk: Tsuku, tool: str, version: str) -> None:
    """The npm package prettyfmt is installed for ``tool`` by an npm_install recipe."""
    out = subprocess.run(
        [str(tk.home / "bin" / "prettyfmt"), "x"], capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == f"prettyfmt {version} x"
    recipe = (tk.home / "recipes" / f"{tool}.toml").read_text()
    assert 'action = "npm_install"' in recipe and 'package = "prettyfmt"' in recipe


@pytest.mark.slow  # a real package manager or container per run; injected-fork test stays
@pytest.mark.skipif(shutil.which("npm") is None, reason="npm is not installed")
def test_install_an_npm_package_without_a_recipe(world: World, tk: Tsuku) -> None:
    """Discovery's ecosystem probe finds it on npm (the only match), the npm builder
    writes the recipe, it is validated in the container and installed: runnable."""
    from tsukud.testing.packages import npm_tarball

    for v in ("0.9.0", "1.0.0", "1.1.0", "1.2.0", "1.3.0"):
        world.eco.publish_npm(npm_tarball("prettyfmt", v, {"prettyfmt": f"prettyfmt {v}"}))
    world.eco.npm_downloads["prettyfmt"] = 50_000
    world.eco.npm["prettyfmt"]["repository"] = {"url": "git+https://github.com/fmt/prettyfmt.git"}
    cp = tk.ctl("install", "prettyfmt", "--yes", timeout=180)
    assert cp.returncode == 0, cp.stderr
    assert "discovered prettyfmt: npm:prettyfmt" in cp.stdout
    assert "installed prettyfmt 1.3.0 (prettyfmt)" in cp.stdout
    prettyfmt_runs(tk, "prettyfmt", "1.3.0")
    assert not world.claude.requests  # no model: found by the probe, built from metadata
    kinds = [e["type"] for e in ledger(tk, "validation.*")]
    assert kinds == ["validation.started", "validation.passed"]


@pytest.mark.slow  # a real package manager or container per run; injected-fork test stays
@pytest.mark.skipif(shutil.which("npm") is None, reason="npm is not installed")
def test_web_search_finds_an_npm_package_that_installs_through_the_npm_builder(
    world: World, tk: Tsuku
) -> None:
    """No package is named prettyfmt-cli; the page web search finds says ``npm install -g
    prettyfmt``; Claude (real SDK) calls extract_source with builder npm; the npm probe
    verifies it; the npm builder writes the recipe, npm installs it: runnable."""
    from tsukud.testing.packages import npm_tarball

    for v in ("1.0.0", "1.1.0", "1.2.0"):
        world.eco.publish_npm(npm_tarball("prettyfmt", v, {"prettyfmt": f"prettyfmt {v}"}))
    world.eco.npm_downloads["prettyfmt"] = 30_000
    world.eco.npm["prettyfmt"]["repository"] = {"url": "git+https://github.com/fmt/prettyfmt.git"}
    for _ in range(2):  # discover, then install
        claude_finds(
            world.claude,
            {
                "builder": "npm",
                "source": "prettyfmt",
                "confidence": 90,
                "evidence": ["https://prettyfmt.dev/install says: npm install -g prettyfmt"],
                "reasoning": "The install page installs the CLI from npm.",
            },
            results=[("https://prettyfmt.dev/install", "Install: npm install -g prettyfmt")],
        )
    cp = tk.ctl("discover", "prettyfmt-cli", "--yes", timeout=60)
    assert cp.returncode == 0, cp.stderr
    assert cp.stdout.startswith(
        "prettyfmt-cli: npm package prettyfmt (found via web search (claude), confidence 90)"
    )
    assert (
        "install it with: tsukuctl install prettyfmt-cli --from npm:prettyfmt"
        " (or without tsuku: npm install -g prettyfmt)" in cp.stdout
    )
    cp = tk.ctl("install", "prettyfmt-cli", "--yes", timeout=180)
    assert cp.returncode == 0, cp.stderr
    for part in (
        "Found prettyfmt-cli via web search (claude):",
        "Source:       npm:prettyfmt  (npm install -g prettyfmt)",
        "Approved by --yes: found on npm and fits prettyfmt-cli, npm package prettyfmt",
        "writing a recipe for prettyfmt-cli from npm:prettyfmt",
    ):
        assert part in cp.stderr, part
    assert "discovered prettyfmt-cli: npm:prettyfmt (approved by --yes)" in cp.stdout
    assert "installed prettyfmt-cli 1.2.0" in cp.stdout
    prettyfmt_runs(tk, "prettyfmt-cli", "1.2.0")
    done = [e["payload"] for e in ledger(tk, "discovery.completed")]
    assert [(d["builder"], d["stage"]) for d in done] == [("npm", "llm")] * 2


# Among the slowest tests (issue 26): pip creates a real venv and installs from the fake
# index (seconds of pip per install; the package manager is the subject).
@pytest.mark.slow  # a real package manager or container per run; injected-fork test stays
def test_install_a_pypi_package_without_a_recipe(world: World, tk: Tsuku) -> None:
    """PyPI reports no downloads, so a same-name project is found by its name alone:
    ``--yes`` does not take it; a person's pick on a terminal does."""
    from tsukud.testing.packages import wheel

    for v in ("0.1", "0.2", "1.0"):
        world.eco.publish_wheel(wheel("pyfmt", v, {"pyfmt": f"pyfmt {v}"}))
    cp = tk.ctl("install", "pyfmt", "--yes", timeout=60)
    assert cp.returncode == 12, cp.stderr
    assert "pypi does not report how much it is used" in cp.stderr
    assert "tsukuctl install pyfmt --from pypi:pyfmt" in cp.stderr
    code, screen, stdout = on_a_terminal(
        tk, ["install", "pyfmt", "--yes"], [(b"for none] ", b"1\n")], timeout=180
    )
    assert code == 0, screen
    assert "discovered pyfmt: pypi:pyfmt (approved by you)" in stdout
    out = subprocess.run(
        [str(tk.home / "bin" / "pyfmt")], capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "pyfmt 1.0"
    assert not world.claude.requests


# Among the slowest tests (issue 26): pip creates a real venv and installs from the fake
# index (seconds of pip per install; the package manager is the subject).
@pytest.mark.slow  # a real package manager or container per run; injected-fork test stays
def test_install_from_pypi_skips_discovery(world: World, tk: Tsuku) -> None:
    from tsukud.testing.packages import wheel

    world.eco.publish_wheel(wheel("pyfmt", "1.0", {"pyfmt": "pyfmt 1.0"}))
    cp = tk.ctl("install", "pyfmt", "--from", "pypi:pyfmt", "--yes", timeout=180)
    assert cp.returncode == 0, cp.stderr
    assert (tk.home / "bin" / "pyfmt").exists()
    assert not world.claude.requests
    probes = ("/crates/", "/npm/", "/rubygems/", "/goproxy/")
    assert not [p for p in world.eco.paths() if p.startswith(probes)]  # no discovery probe


@pytest.mark.slow  # a real package manager or container per run; injected-fork test stays
def test_discover_command_reports_without_installing(world: World, tk: Tsuku) -> None:
    claude_finds(world.claude)
    cp = tk.ctl("discover", "stripe-cli", "--yes")
    assert cp.returncode == 0, cp.stderr
    assert cp.stdout.startswith("stripe-cli: github:stripe/stripe-cli (found via web search")
    assert "auto-approvable" in cp.stdout and "install it: tsukuctl install stripe-cli" in cp.stdout
    claude_finds(world.claude)
    res = json.loads(tk.ctl("discover", "stripe-cli", "--json", "--yes", check=True).stdout)
    assert res["source"] == "stripe/stripe-cli" and res["metadata"]["auto_approvable"] is True
    assert not (tk.home / "recipes").exists()


def test_homoglyph_name_is_refused_before_any_request(world: World, tk: Tsuku) -> None:
    cp = tk.ctl("install", "\u0455tripe-cli")
    assert cp.returncode == 2, cp.stderr
    assert "CYRILLIC SMALL LETTER DZE" in cp.stderr and "homoglyph" in cp.stderr
    assert not world.claude.requests and not world.eco.requests


def test_from_skips_discovery(world: World, tk: Tsuku, image: str) -> None:  # noqa: F811
    cp = tk.ctl("install", "stripe-cli", "--from", "github:stripe/stripe-cli", "--yes", timeout=120)
    assert cp.returncode == 0, cp.stderr
    assert "installed stripe-cli 1.22.0" in cp.stdout
    assert not world.claude.requests and not world.eco.requests


def test_from_installs_when_the_recipe_registry_cannot_be_reached(
    world: World,
    tk: Tsuku,
    image: str,  # noqa: F811
) -> None:
    """The person named the source: a recipe registry that does not answer (offline, a
    firewall, an outage) is said, not a stop; the recipe written from the source is
    installed. (503 with ``retry-after: 0``: an outage without the retries' waits.)"""
    world.github.override(r"^/registry/", status=503, headers={"retry-after": "0"}, role="web")
    cp = tk.ctl("install", "stripe-cli", "--from", "github:stripe/stripe-cli", "--yes")
    assert cp.returncode == 0, cp.stderr
    assert "installed stripe-cli 1.22.0" in cp.stdout
    assert "the recipe registry could not be reached" in cp.stderr
    assert "writing a recipe from --from github:stripe/stripe-cli as you named it" in cp.stderr
    assert not world.claude.requests
    # Nothing named: the registry's silence still stops the install, with its reason.
    cp = tk.ctl("install", "kind", "--yes")
    assert cp.returncode == ExitCode.NETWORK, cp.stderr
    assert "503" in cp.stderr and not (tk.home / "recipes" / "kind.toml").exists()


REVIEW = b"[v]iew full recipe, [i]nstall, [c]ancel? "


# Among the slowest tests (issue 26): the deadline is real machine time (scaled to 4 s) and
# the person is 5 s slower on purpose.
@pytest.mark.slow  # a real package manager or container per run; injected-fork test stays
def test_a_person_slower_than_the_deadline_still_gets_the_install(
    world: World,
    image: str,  # noqa: F811
) -> None:
    """The deadline is machine time: with every limit scaled to 4 s and the LLM cost
    question asked inside the LLM stage, a person who takes 5 s over it (the issue's 20 s
    against 15 s, scaled) still gets the install."""
    claude_finds(world.claude)
    claude_finds(world.claude)
    with daemon(world, TSUKU_LLM_CONFIRM_THRESHOLD="0.0001") as t:  # the cost is asked
        # The SDK's first import (seconds on a busy runner) happens before the limits shrink.
        t.ctl("discover", "stripe-cli", "--yes", check=True)
        for key in ("discover.timeout_s", "discover.llm_timeout_s"):
            t.ctl("config", "set", key, "4", check=True)
        code, screen, stdout = on_a_terminal(
            t,
            ["install", "stripe-cli"],
            [(b"Continue? [y/N]", b"y\n"), (b"source? [y/N]", b"y\n"), (REVIEW, b"i\n")],
            timeout=120,
            thinking={b"Continue? [y/N]": 5.0},
        )
        assert code == 0, screen
        assert "installed stripe-cli 1.22.0 (stripe)" in stdout
        done = ledger(t, "discovery.completed")[-1]
        assert done["payload"]["ms"] < 4000  # machine time: the answer is not in it
        kinds = [e["payload"]["reason"] for e in ledger(t, "confirmation.granted")]
        assert kinds == ["answered", "answered", "answered"]


# Among the slowest tests (issue 26): a real package manager (npm/pip/gem) installs from the
# fake registries, and the recipe is validated in a real container.
@pytest.mark.slow  # a real package manager or container per run; injected-fork test stays
def test_two_candidates_below_the_bar_are_a_numbered_choice_and_the_pick_installs(
    world: World,
    tk: Tsuku,
    image: str,  # noqa: F811
) -> None:
    world.github.clear_overrides()  # the world's stripe/stripe-cli has 1,800 stars
    set_repo(world.github, "stripe/stripe-cli", stars=30)
    set_repo(world.github, "someone/stripe-cli", stars=12, owner_type="User")
    claude_finds(
        world.claude,
        extract_args("someone/stripe-cli", 90),
        extract_args("stripe/stripe-cli", 80),
    )
    code, screen, stdout = on_a_terminal(
        tk,
        ["install", "stripe-cli"],
        [(b"for none] ", b"2\n"), (REVIEW, b"i\n")],
        timeout=120,
    )
    assert code == 0, screen
    assert "Discovery found 2 possible sources for stripe-cli; none clears the bar:" in screen
    assert "  1. github:someone/stripe-cli  (12 stars, created 7 years ago, owner someone" in screen
    assert "  2. github:stripe/stripe-cli  (30 stars, created 7 years ago, owner stripe" in screen
    assert "not recommended: 30 stars (fewer than 50)" in screen
    assert "Which source should tsuku use for stripe-cli? [1-2, 0 or Enter for none]" in screen
    assert "discovered stripe-cli: github:stripe/stripe-cli (approved by you)" in stdout
    assert "installed stripe-cli 1.22.0 (stripe)" in stdout
    choice = ledger(tk, "confirmation.granted")[0]["payload"]
    assert choice["kind"] == "discovery.choice" and choice["choice"] == 2
    assert choice["offered"] == ["github:someone/stripe-cli", "github:stripe/stripe-cli"]


# Among the slowest tests (issue 26): a real package manager (npm/pip/gem) installs from the
# fake registries, and the recipe is validated in a real container.
@pytest.mark.slow  # a real package manager or container per run; injected-fork test stays
def test_the_person_picks_the_second_of_several_ecosystem_matches_and_it_installs(
    world: World, tk: Tsuku
) -> None:
    """fmtx is a package on npm and on PyPI, both fit and neither is clearly more used:
    a numbered choice on the terminal; the person types 2 (PyPI) and the pypi builder's
    recipe installs it."""
    from tsukud.testing.packages import npm_tarball, wheel

    for v in ("1.0.0", "1.1.0", "1.2.0"):
        world.eco.publish_npm(npm_tarball("fmtx", v, {"fmtx": f"fmtx {v} (npm)"}))
    world.eco.npm_downloads["fmtx"] = 20_000
    for v in ("0.9", "1.0", "1.1"):
        world.eco.publish_wheel(wheel("fmtx", v, {"fmtx": f"fmtx {v} (pypi)"}))
    code, screen, stdout = on_a_terminal(
        tk,
        ["install", "fmtx"],
        [(b"for none] ", b"2\n"), (REVIEW, b"i\n")],
        timeout=180,
    )
    assert code == 0, screen
    assert (
        "Discovery found 2 possible sources for fmtx; 2 packages in different ecosystems fit"
        in screen
    )
    assert (
        "  1. npm:fmtx  (20.0K weekly downloads, 3 versions, first published 2024-01-01, "
        "NO repository)" in screen
    )
    assert (
        "  2. pypi:fmtx  (use not reported, 3 versions, first published 2024-01-01, "
        "NO repository)" in screen
    )
    assert (
        "not recommended: found by its name alone: it names no source repository; pypi "
        "does not report how much it is used" in screen
    )
    assert "Which source should tsuku use for fmtx? [1-2, 0 or Enter for none]" in screen
    assert "Use npm: fmtx?" not in screen  # no more one-at-a-time yes/no
    assert "discovered fmtx: pypi:fmtx (approved by you)" in stdout
    out = subprocess.run(
        [str(tk.home / "bin" / "fmtx")], capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "fmtx 1.1 (pypi)"
    assert 'action = "pipx_install"' in (tk.home / "recipes" / "fmtx.toml").read_text()
    choice = ledger(tk, "confirmation.granted")[0]["payload"]
    assert choice["kind"] == "discovery.choice" and choice["choice"] == 2
    assert choice["offered"] == ["npm:fmtx", "pypi:fmtx"]
    assert not world.claude.requests


def test_ecosystem_ties_without_a_terminal_name_each_from(world: World, tk: Tsuku) -> None:
    world.eco.add_npm("fmtx", weekly_downloads=20_000, versions=6, description="fmtx CLI")
    world.eco.add_pypi("fmtx", releases=4, summary="fmtx CLI")
    cp = tk.ctl("install", "fmtx", "--yes")
    assert cp.returncode == 10, cp.stderr
    assert "1. npm:fmtx" in cp.stderr and "2. pypi:fmtx" in cp.stderr
    for way in ("tsukuctl install fmtx --from npm:fmtx", "tsukuctl install fmtx --from pypi:fmtx"):
        assert way in cp.stderr, way
    assert not (tk.home / "recipes" / "fmtx.toml").exists()


@pytest.mark.slow  # a real package manager or container per run; injected-fork test stays
def test_without_a_terminal_the_choice_is_an_error_listing_the_from_to_use(
    world: World, tk: Tsuku
) -> None:
    world.github.clear_overrides()  # the world's stripe/stripe-cli has 1,800 stars
    set_repo(world.github, "stripe/stripe-cli", stars=30)
    claude_finds(world.claude, extract_args("stripe/stripe-cli", 60))
    cp = tk.ctl("install", "stripe-cli", "--yes")
    assert cp.returncode == 12, cp.stderr
    assert "1. github:stripe/stripe-cli" in cp.stderr
    assert "not recommended: confidence 60 is below 70" in cp.stderr
    assert "tsukuctl install stripe-cli --from github:stripe/stripe-cli" in cp.stderr
    assert not (tk.home / "recipes" / "stripe-cli.toml").exists()


@pytest.mark.slow  # a real package manager or container per run; injected-fork test stays
def test_install_collect_tool_stats_prints_discoverys_tool_calls(
    world: World,
    tk: Tsuku,
    image: str,  # noqa: F811
) -> None:
    claude_finds(world.claude)
    cp = tk.ctl("install", "stripe-cli", "--yes", "--collect-tool-stats", timeout=120)
    assert cp.returncode == 0, cp.stderr
    header = next(line for line in cp.stderr.splitlines() if line.startswith("TOOL"))
    assert header.split() == ["TOOL", "ARGUMENT", "MS", "RESULT", "BYTES"]
    rows = [line.split() for line in cp.stderr.splitlines()[cp.stderr.splitlines().index(header) :]]
    assert ["web_search", "stripe-cli", "github", "0", "ok"] in rows  # Claude's own search
    assert any(r[:2] == ["extract_source", "stripe/stripe-cli"] and "ok" in r for r in rows)
    assert "installed stripe-cli 1.22.0 (stripe)" in cp.stdout
    calls = ledger(tk, "tool.called")
    assert [c["payload"]["name"] for c in calls][:2] == ["web_search", "extract_source"]
    res = json.loads(
        tk.ctl("install", "stripe-cli", "--json", "--collect-tool-stats", check=True).stdout
    )
    assert res["already_installed"] and res["tool_stats"] == []  # a recipe: no model asked


@pytest.mark.slow  # a real package manager or container per run; injected-fork test stays
def test_discover_collect_tool_stats_prints_the_models_tool_calls(world: World, tk: Tsuku) -> None:
    """``discover --collect-tool-stats``: the table on stderr (the summary stays on
    stdout), and ``tool_stats`` in ``--json``; without the flag, neither."""
    claude_finds(world.claude)
    cp = tk.ctl("discover", "stripe-cli", "--collect-tool-stats")
    assert cp.returncode == 0, cp.stderr
    lines = cp.stderr.splitlines()
    header = next(line for line in lines if line.startswith("TOOL"))
    assert header.split() == ["TOOL", "ARGUMENT", "MS", "RESULT", "BYTES"]
    rows = [line.split() for line in lines[lines.index(header) + 1 :]]
    assert ["web_search", "stripe-cli", "github", "0", "ok"] in rows  # Claude's own search
    assert any(r[:2] == ["extract_source", "stripe/stripe-cli"] and "ok" in r for r in rows)
    assert "TOOL" not in cp.stdout and "stripe/stripe-cli" in cp.stdout

    claude_finds(world.claude)
    res = json.loads(
        tk.ctl("discover", "stripe-cli", "--json", "--collect-tool-stats", check=True).stdout
    )
    names = [s["name"] for s in res["tool_stats"]]
    assert names[:2] == ["web_search", "extract_source"]
    assert all(s["ok"] for s in res["tool_stats"])

    claude_finds(world.claude)
    plain = tk.ctl("discover", "stripe-cli", check=True)
    assert "TOOL" not in plain.stderr and "tool calls" not in plain.stderr
    claude_finds(world.claude)
    res = json.loads(tk.ctl("discover", "stripe-cli", "--json", check=True).stdout)
    assert not res.get("tool_stats")


@pytest.mark.slow  # a real package manager or container per run; injected-fork test stays
def test_install_only_provider_asks_that_provider_alone_and_keeps_the_key_hint(
    world: World,
) -> None:
    """``--provider gemini --only-provider`` reaches discovery: Claude (configured first)
    is never asked, and Gemini's 401 ends the run with the hint about its key."""
    world.gemini.error(401, "UNAUTHENTICATED", "API key not valid. Please pass a valid API key.")
    home = short_home()
    env = {**base_env(home), **world.env(home, "claude", "gemini")}
    env["HOME"] = os.environ.get("HOME", str(home))
    t = Tsuku(home, env)
    try:
        t.start()
        cp = t.ctl("install", "stripe-cli", "--yes", "--provider", "gemini", "--only-provider")
    finally:
        t.stop_all()
        shutil.rmtree(home, ignore_errors=True)
    assert cp.returncode != 0
    assert world.claude.requests == [] and len(world.gemini.requests) == 1
    assert "401" in cp.stderr and "GOOGLE_API_KEY" in cp.stderr, cp.stderr
    assert "Try again later" not in cp.stderr  # waiting will not fix a key
