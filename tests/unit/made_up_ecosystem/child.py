"""Run as ``python -m tests.unit.made_up_ecosystem.child``: the product with the made-up
record written into ``tsukud/registries/ecosystems.py`` (its text read from disk, the
import and the record added as a person adding an ecosystem would, loaded from memory;
every other module imported from disk as it is), then what tsuku does with a recipe of
the new action, printed as JSON for the test to judge."""

from __future__ import annotations

import json
import sys
import types
from pathlib import Path
from typing import Any

from tests.unit.made_up_ecosystem import IMPORT, RECORD

REPO = Path(__file__).resolve().parents[3]
RECORDS = REPO / "tsukud" / "registries" / "ecosystems.py"
# Where the additions go: after the readers' imports, at the head of ECOSYSTEMS.
AFTER_IMPORTS = "from tsukud.registries._common import Get, PackageFacts\n"
HEAD = "ECOSYSTEMS: tuple[Ecosystem, ...] = (\n"

RECIPE = """\
[metadata]
name = "wombat"

[[steps]]
action = "quokka_install"
pouch = "wombat-cli"
executables = ["wombat"]

[verify]
command = "wombat --version"
"""


def load_records() -> None:
    """``tsukud.registries.ecosystems`` as it reads with the record added."""
    import tsukud.registries

    text = RECORDS.read_text()
    assert text.count(AFTER_IMPORTS) == 1 and text.count(HEAD) == 1, "anchors moved"
    text = text.replace(AFTER_IMPORTS, AFTER_IMPORTS + IMPORT).replace(HEAD, HEAD + RECORD)
    name = "tsukud.registries.ecosystems"
    module = types.ModuleType(name)
    module.__file__ = str(RECORDS)
    sys.modules[name] = module
    exec(compile(text, str(RECORDS), "exec"), module.__dict__)
    tsukud.registries.ecosystems = module  # type: ignore[attr-defined]


def report() -> dict[str, Any]:
    import msgspec

    from tests.unit.made_up_ecosystem import runner
    from tsukud.config import KEYS
    from tsukud.create.ecosystem_builders import DRAFTERS
    from tsukud.discover import ecosystem as discovery
    from tsukud.install.ecosystem import actions
    from tsukud.install.ecosystem.versions import FETCHERS
    from tsukud.install.pins import create_source
    from tsukud.recipe import ResolvedVersion, dump_recipe, parse_recipe
    from tsukud.recipe.model import RecipeError, require_supported, step_summary
    from tsukud.recipe.plan import plan_recipe
    from tsukud.recipe.platform import Platform
    from tsukud.registries.ecosystems import sources_hint
    from tsukud.source import parse_source

    recipe = parse_recipe(RECIPE, "wombat.toml")
    (step,) = recipe.steps
    linux = Platform("linux", "amd64", "glibc")
    plan = plan_recipe(recipe, ResolvedVersion("2.0.0", "2.0.0"), linux, install_dir="/t")

    entry = actions.ACTIONS["quokka_install"]

    def refusal(text: str) -> str:
        try:
            parse_recipe(text, "wombat.toml")
        except RecipeError as exc:
            return str(exc)
        return "read"

    return {
        "step": [type(step).__name__, step.action, step.package_name, list(step.executables)],
        "dumped": dump_recipe(recipe),
        "supported": [i for i, _ in require_supported(recipe, linux)],
        "summary": step_summary(step),
        "plan": json.loads(msgspec.json.encode(plan)),
        "wrong_type": refusal(RECIPE.replace('"wombat-cli"', "3")),
        "bad_name": refusal(RECIPE.replace('"wombat-cli"', '"--exec=x"')),
        "missing": refusal(RECIPE.replace('pouch = "wombat-cli"\n', "")),
        "runner_installs": entry.runner is runner.install,
        "drafter": "quokka" in DRAFTERS
        and actions.ACTIONS["quokka_install"].drafter is runner.draft,
        "fetch": actions.action_for(step).fetch is runner.fetch,
        "versions_fetcher": "quokka_pouches" in FETCHERS,
        "discovery": "quokka" in discovery.BUILDERS and "quokka" in discovery.DEFAULT_URLS,
        "setting": KEYS["discover.quokka_url"].env,
        "source": str(parse_source("quokka:wombat-cli")),
        "create_source": create_source(recipe),
        "hint": "quokka:<pouch>" in sources_hint(),
    }


if __name__ == "__main__":
    load_records()
    print(json.dumps(report()))
