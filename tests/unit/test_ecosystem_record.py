"""One record per ecosystem (tsukud/registries/ecosystems.py): every table that names
ecosystems is derived from it, and an ecosystem's names appear nowhere else.

The count is what issue 27 measures: ``grep -rli rubygems tsukud`` outside
``tsukud/testing/``, for every record's registry names and its action (at most 3
modules: the record, the reader and the runner; one ``EcosystemStep`` serves every
action). A module that starts spelling one (a new table, a hint written out by hand,
an example in a comment) fails here until it derives from the record instead, or the
record lists it as holding that ecosystem's own code. And adding one is those three
files: a made-up ecosystem (tests/unit/made_up_ecosystem/) added the way a real one
is reads, plans and writes back with no other product module changed.
"""

from __future__ import annotations

import importlib
import inspect
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.unit.made_up_ecosystem.child import RECIPE
from tests.unit.mentions import mentions
from tsukud.config import KEYS
from tsukud.create.ecosystem_builders import DRAFTERS
from tsukud.discover import ecosystem as discovery
from tsukud.discover.service import ECOSYSTEM_KEYS
from tsukud.errors import CATALOGUE
from tsukud.flows.no_build import PAGE_ECOSYSTEMS
from tsukud.install.ecosystem.actions import ACTIONS
from tsukud.install.ecosystem.versions import FETCHERS
from tsukud.install.pins import create_source
from tsukud.instructions import answer
from tsukud.recipe import Metadata, Recipe
from tsukud.recipe.model import RUNNABLE_ECOSYSTEM_ACTIONS, EcosystemStep
from tsukud.recipe.plan import PLANNERS
from tsukud.registries.ecosystems import ECOSYSTEMS, URL_SETTINGS, Ecosystem, sources_hint
from tsukud.source import BadSource, EcosystemPackage, parse_source

REPO = Path(__file__).resolve().parents[2]


def _file(module: str) -> str:
    return module.replace(".", "/") + ".py"


# The bound issue 27 set: an ecosystem is its record, its reader and its runner, so
# its names appear in at most three product modules.
MAX_MODULES = 3


def counted_names(eco: Ecosystem) -> set[str]:
    """The names of ``eco`` the count holds: the registry's (discovery's builder, the
    ``--from`` prefix, the ``[version]`` source) and its step's action. ``go`` is a
    word of everything (a Go binary's build info, "go to"), so two letters are not
    counted; nor is the program a runner runs (``cargo``, ``gem``, ``python3``), a
    word of other things too (a GitHub tool's ``cargo-x`` plugin, ``gemini``, a
    system package)."""
    return {n.lower() for n in (eco.builder, eco.prefix, eco.version_source, eco.action)} - {
        n for n in (eco.builder, eco.prefix) if len(n) < 3
    }


def _named_by(name: str) -> set[str]:
    """The product modules naming ``name``: the issue's ``grep -rli`` for a registry's
    name; an action's name as a whole word (``go_install`` is in ``cargo_install``)."""
    if not name.endswith("_install"):
        return mentions(name)
    word = re.compile(r"(?<![a-z0-9_])" + re.escape(name) + r"(?![a-z0-9_])")
    return {m for m in mentions(name) if word.search((REPO / m).read_text().lower())}


@pytest.mark.parametrize("eco", ECOSYSTEMS, ids=lambda e: e.builder)
def test_an_ecosystem_is_named_only_by_its_record_its_reader_and_its_runner(eco):
    allowed = {
        "tsukud/registries/ecosystems.py",
        _file(eco.reader),
        *([_file(eco.runner)] if eco.runner else []),
        *(_file(m) for m in eco.modules),
    }
    for module in allowed:
        assert (REPO / module).is_file(), module
    for name in sorted(counted_names(eco)):
        named = _named_by(name)
        assert named <= allowed, (name, sorted(named - allowed))
        assert len(named) <= MAX_MODULES, (name, sorted(named))


def test_every_name_of_an_ecosystem_belongs_to_one_record():
    seen: dict[str, str] = {}
    for eco in ECOSYSTEMS:
        for name in eco.names:
            assert seen.setdefault(name, eco.builder) == eco.builder, name


def test_the_tables_that_list_ecosystems_are_the_records():
    builders = {e.builder for e in ECOSYSTEMS}
    assert set(discovery.BUILDERS) == builders
    assert {e.builder: e.prefix for e in ECOSYSTEMS} == discovery.BUILDER_SOURCES
    assert set(discovery.THRESHOLDS) == set(discovery.PRIORITY) == builders
    assert builders <= set(discovery.INSTALL_COMMANDS)
    # discovery's probe order is the ranking's tie order: the record's priority
    assert [discovery.PRIORITY[b] for b in discovery.BUILDERS] == sorted(
        e.priority for e in ECOSYSTEMS
    )
    assert set(discovery.DEFAULT_URLS) == set(ECOSYSTEM_KEYS)
    assert set(DRAFTERS) == {e.prefix for e in ECOSYSTEMS}
    assert set(ACTIONS) == {e.action for e in ECOSYSTEMS}
    assert set(FETCHERS) == {e.version_source for e in ECOSYSTEMS}
    assert {e.action for e in ECOSYSTEMS if e.runner} == RUNNABLE_ECOSYSTEM_ACTIONS
    assert set(ACTIONS) <= set(PLANNERS)
    # an install page's package managers: the instructions builder's tables and the
    # no-build flow's, all from the records that name one
    paged = {e.page_manager: e for e in ECOSYSTEMS if e.page_manager}
    assert {m: e.prefix for m, e in paged.items()} == PAGE_ECOSYSTEMS
    assert {m: e.action for m, e in paged.items()} == answer.ECOSYSTEM_ACTIONS
    assert {m: e.page_words for m, e in paged.items()} == answer.MANAGER_WORDS
    assert answer.SCHEMA_JSON["properties"]["ecosystem"]["properties"]["manager"]["enum"] == [
        *paged
    ]
    for m, e in paged.items():
        assert m in e.page_words and answer.ECOSYSTEM_COMMANDS[m] == e.install_command


@pytest.mark.parametrize("manager", ["brew", "gem", "curl", "NPM"])
def test_an_install_page_s_manager_no_record_names_is_refused(manager):
    # The model's answer is judged by code: a manager outside the records' is not a
    # package tsuku could build, whatever the page says.
    judged = answer.judge(
        {"kind": "ecosystem", "summary": "s", "ecosystem": {"manager": manager, "package": "t"}},
        tool="t",
        page_url="https://example.com/",
        origins=(),
        page_text=f"{manager} install t",
    )
    assert judged.recipe is None
    assert [f.message for f in judged.findings if "does not fit" in f.message], judged


@pytest.mark.parametrize("eco", ECOSYSTEMS, ids=lambda e: e.builder)
def test_a_record_agrees_with_its_step_its_runner_and_its_settings(eco):
    action = ACTIONS[eco.action]
    assert (action.toolchain, action.version_source) == (eco.toolchain, eco.version_source)
    assert action.url_setting == eco.registry.key
    if eco.runner:
        runner = importlib.import_module(eco.runner).install
        assert action.runner is runner and inspect.iscoroutinefunction(runner)
    assert eco.valid_name.__module__ == eco.reader
    # a source of this ecosystem reads back as this ecosystem; a name it cannot have
    # is refused with the record's words for it
    name = "example.com/tool" if eco.package_key == "module" else "tool"
    assert parse_source(f"{eco.prefix}:{name}") == EcosystemPackage(eco.prefix, name)
    assert parse_source(f"{eco.prefix}:{name}").record is eco  # type: ignore[union-attr]
    with pytest.raises(BadSource, match=eco.name_kind):
        parse_source(f"{eco.prefix}:--exec=x")
    step = EcosystemStep(action=eco.action, package_name=name)
    assert step.record is eco
    recipe = Recipe(metadata=Metadata(name="tool"), steps=(step,))
    assert create_source(recipe) == f"{eco.prefix}:{name}"


def test_the_settings_are_the_records_urls():
    for url in URL_SETTINGS:
        key = KEYS[url.key]
        assert (key.default, key.env) == (url.default, (url.env,))
        assert url.key.startswith("discover.") and url.env.startswith("TSUKU_")
    assert {u.key for u in URL_SETTINGS} == {
        *ECOSYSTEM_KEYS.values(),
        *(a.url_setting for a in ACTIONS.values()),
        *(a.index_setting for a in ACTIONS.values() if a.index_setting),
    }


def test_a_bad_source_names_every_source_there_is():
    hint = BadSource("x").hint
    assert hint == f"Name the source as --from {sources_hint()}."
    for eco in ECOSYSTEMS:
        assert f"{eco.prefix}:{eco.placeholder}" in hint
    # the catalogue (stdlib only, shared with the client) says it without the list
    assert "<ecosystem>:<package>" in CATALOGUE["create_bad_source"].hint


def test_the_client_s_help_names_the_same_sources():
    # tsukuctl imports only the stdlib, so it spells the sources out: held to the record
    for module in ("tsukuctl/create_commands.py", "tsukuctl/install_commands.py"):
        text = " ".join((REPO / module).read_text().replace('"\n', "").split())
        text = text.replace('" "', "").replace(' "', " ").replace('"', "")
        assert sources_hint() in text, module


def test_a_made_up_ecosystem_is_its_record_its_reader_and_its_runner():
    """Adding an ecosystem touches three product files. The made-up one's reader and
    runner live in tests/unit/made_up_ecosystem/ and its record is written into
    ``ecosystems.py`` (in memory, in a child process: this worker's modules stay as
    they are); every other product module is read from disk unchanged. A recipe of its
    action then reads, plans, checks and writes back byte for byte, and every table
    that lists ecosystems has it."""
    cp = subprocess.run(
        [sys.executable, "-m", "tests.unit.made_up_ecosystem.child"],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=60,
    )
    assert cp.returncode == 0, cp.stderr
    got = json.loads(cp.stdout)
    assert got.pop("step") == ["EcosystemStep", "quokka_install", "wombat-cli", ["wombat"]]
    assert got.pop("dumped") == RECIPE  # the record's key, where the registry writes it
    assert got.pop("summary") == {
        "action": "quokka_install",
        "pouch": "wombat-cli",
        "executables": ["wombat"],
    }
    (planned,) = got["plan"].pop("steps")
    assert planned == {
        "action": "quokka_exec",  # the record's plan_action, its resolved fields named
        "params": {"executables": ["wombat"], "pouch": "wombat-cli", "version": "2.0.0"},
        "evaluable": False,
        "deterministic": False,
        "computed_at_download": ["params.lock_data", "params.quokka_version"],
    }
    assert (got["plan"].pop("tool"), got["plan"].pop("unsupported")) == ("wombat", [])
    # a refusal names the record's key and its words for a valid name
    assert got.pop("wrong_type") == "wombat.toml: steps[0].pouch: expected a string, got 3"
    assert got.pop("bad_name") == (
        'wombat.toml: steps[0].pouch: expected a pouch name, got "--exec=x"'
    )
    assert got.pop("missing") == "wombat.toml: steps[0].pouch: required"
    assert got.pop("setting") == ["TSUKU_QUOKKA_URL"]
    assert got.pop("source") == got.pop("create_source") == "quokka:wombat-cli"
    got.pop("plan")
    assert got == {
        "supported": [0],
        "runner_installs": True,
        "drafter": True,
        "fetch": True,
        "versions_fetcher": True,
        "discovery": True,
        "hint": True,
    }
    # and the product spells none of its names: all came from the record
    assert not mentions("quokka") and not mentions("pouch")
