"""A machine without network: every command that reaches out ends the same way, at once.

Every outside endpoint of the test daemon is a loopback port nothing listens on (tests/
conftest.py ``base_env``), as for a person offline whose settings point at the real
services. No retry changes that, so each entry point fails in well under the seconds its
retries took, with ``network_unreachable`` (exit 5) whichever client met it first, and
names the service and the setting (with its variable) that points there: the wrapper
adds its context, it does not replace the code (``HttpUnreachable.at``). One daemon
answers the whole table."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass

from tests.conftest import CLOSED_PORT, Tsuku
from tsukud.errors import ExitCode

KEY = {"ANTHROPIC_API_KEY": "sk-ant-offline-test-0123456789abcdef"}

NPM_RECIPE = """[metadata]
name = "greet"
description = "an npm package for tests"

[[steps]]
action = "npm_install"
package = "greet"
executables = ["greet"]

[verify]
command = "greet --version"
pattern = "{version}"
"""

HOMEBREW_RECIPE = """[metadata]
name = "hello"
description = "a Homebrew formula for tests"

[version]
source = "homebrew"
formula = "hello"

[[steps]]
action = "homebrew"
formula = "hello"

[verify]
command = "hello --version"
pattern = "{version}"
"""

CPAN_RECIPE = """[metadata]
name = "hi-perl"
description = "a CPAN distribution for tests"

[version]
source = "metacpan"
distribution = "Acme-Hi"

[[steps]]
action = "cpan_install"
distribution = "Acme-Hi"
executables = ["hi"]

[verify]
command = "hi --version"
pattern = "{version}"
"""

VERSION_URL_RECIPE = f"""[metadata]
name = "zag"
description = "a tool whose versions a JSON document lists"

[version]
source = "http_json"
url = "{CLOSED_PORT}/zag.json"
version_path = "version"

[[steps]]
action = "download"
url = "{CLOSED_PORT}/zag-{{version}}.tar.gz"
checksum = "{"0" * 64}"

[[steps]]
action = "install_binaries"
binaries = ["zag"]

[verify]
command = "zag"
pattern = "zag {{version}}"
"""


@dataclass(frozen=True)
class Entry:
    """One command that reaches the network, and what it must name when it cannot."""

    why: str
    argv: tuple[str, ...]
    service: str  # the service, in the words the message uses
    variable: str  # the setting's variable (or the URL a recipe names), in the hint
    env: dict[str, str] | None = None


TABLE = (
    Entry("install from the registry", ("install", "jq"), "recipe registry", "TSUKU_REGISTRY_URL"),
    Entry("plan from the registry", ("plan", "jq"), "recipe registry", "TSUKU_REGISTRY_URL"),
    Entry("update the registry", ("update-registry",), "recipe manifest", "TSUKU_MANIFEST_URL"),
    Entry(
        "create from a GitHub repository",
        ("create", "rg", "--from", "github:BurntSushi/ripgrep"),
        "GitHub API",
        "TSUKU_GITHUB_API_URL",
    ),
    Entry(
        "install from an npm package",
        ("install", "cowsay", "--from", "npm:cowsay"),
        "npm registry",
        "TSUKU_NPM_URL",
    ),
    Entry(
        "create from a PyPI package",
        ("create", "black", "--from", "pypi:black"),
        "PyPI registry",
        "TSUKU_PYPI_URL",
    ),
    Entry(
        "install an ecosystem recipe (its versions)",
        ("plan", "greet"),
        "npm registry",
        "TSUKU_NPM_URL",
    ),
    Entry(
        "install a Homebrew recipe (its formula)",
        ("install", "hello"),
        "Homebrew formulae API",
        "TSUKU_HOMEBREW_API_URL",
    ),
    Entry(
        "install a CPAN recipe (its mirror's index)",
        ("plan", "hi-perl"),
        "CPAN mirror",
        "TSUKU_CPAN_MIRROR_URL",
    ),
    Entry(
        "a recipe's version URL",
        ("plan", "zag"),
        "recipe's version URL",
        f"{CLOSED_PORT}/zag.json",  # no setting: the recipe names it
    ),
    Entry("call the LLM", ("llm", "test"), "claude API", "ANTHROPIC_BASE_URL", KEY),
    Entry("search", ("search", "ripgrep"), "npm registry", "TSUKU_REGISTRY_URL"),
    Entry("discover", ("discover", "ripgrep"), "PyPI registry", "TSUKU_CRATES_URL"),
    Entry("discover with an LLM", ("discover", "ripgrep"), "claude API", "ANTHROPIC_BASE_URL", KEY),
)

#: Commands that ask before acting: the table answers yes (nothing is reached anyway).
_ASKS = {"install", "create"}


def test_every_entry_point_ends_network_unreachable_naming_its_setting(daemon: Tsuku) -> None:
    recipes = daemon.home / "recipes"
    recipes.mkdir(parents=True, exist_ok=True)
    (recipes / "greet.toml").write_text(NPM_RECIPE)
    (recipes / "hello.toml").write_text(HOMEBREW_RECIPE)
    (recipes / "zag.toml").write_text(VERSION_URL_RECIPE)
    (recipes / "hi-perl.toml").write_text(CPAN_RECIPE)
    wrong: list[str] = []
    for entry in TABLE:
        argv = (*entry.argv, "--json", *(("--yes",) if entry.argv[0] in _ASKS else ()))
        started = time.monotonic()
        cp = daemon.ctl(*argv, shell_env=entry.env, timeout=30)
        took = time.monotonic() - started
        try:
            error = json.loads(cp.stdout.splitlines()[-1])["error"]
        except (IndexError, KeyError, ValueError):
            wrong.append(f"{entry.why}: no error object: rc={cp.returncode} {cp.stdout!r}")
            continue
        problems = [
            f"exit {cp.returncode}" if cp.returncode != ExitCode.NETWORK else "",
            f"code {error['code']}" if error["code"] != "network_unreachable" else "",
            f"message lacks {entry.service!r}" if entry.service not in error["message"] else "",
            f"hint lacks {entry.variable}" if entry.variable not in error["hint"] else "",
            f"hint lacks {CLOSED_PORT}" if CLOSED_PORT not in error["hint"] else "",
            "no offline hint" if not error["hint"].startswith("Offline?") else "",
            # Five tries wait at least 3.75 s between them (net/retry.py): a bound just
            # under that still catches any retry, with room for a loaded CI machine.
            f"took {took:.1f} s" if took >= 3.7 else "",
        ]
        if any(problems):
            shown = "; ".join(p for p in problems if p)
            wrong.append(f"{entry.why}: {shown}: {json.dumps(error)}")
    assert not wrong, "\n".join(wrong)


def test_an_upgrade_offline_fails_naming_the_github_api_and_keeps_the_tool(inst: Tsuku) -> None:
    """``upgrade``: the tool was installed while the fake GitHub answered; with its API
    out of reach (a variable of this command only) the upgrade fails as offline, at
    once, and the installed version stays."""
    inst.ctl("install", "age@1.1.1", check=True)
    started = time.monotonic()
    offline = {"TSUKU_GITHUB_API_URL": CLOSED_PORT}
    cp = inst.ctl("upgrade", "age", "--json", shell_env=offline)
    assert time.monotonic() - started < 3.0
    assert cp.returncode == ExitCode.NETWORK, cp.stderr
    [failed] = json.loads(cp.stdout)["failed"]
    assert failed["error_code"] == "network_unreachable"
    assert (
        "the GitHub API http://127.0.0.1:9, set by github.api_url (TSUKU_GITHUB_API_URL)"
        in (failed["message"])
    )
    assert "age" in inst.ctl("list", check=True).stdout  # still installed, as it was
