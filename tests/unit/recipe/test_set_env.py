"""``set_env``: read in the registry's spelling (a table) and tsuku's older list of
``{name, value}``, planned as written, and written as tsuku's ``env.sh`` with every
value quoted, so sourcing the file sets the variables and runs nothing."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import msgspec
import pytest

from tsukud.recipe import (
    Platform,
    RecipeParseError,
    ResolvedVersion,
    dump_recipe,
    parse_recipe,
    unsupported_actions,
)
from tsukud.recipe.plan import plan_recipe
from tsukud.recipe.render import env_file

LINUX = Platform("linux", "amd64", "glibc")
V = ResolvedVersion("1.2.0", "v1.2.0")
HEAD = """[metadata]
name = "nvmish"

[[steps]]
action = "download_archive"
url = "https://e.test/v{version}.tar.gz"
strip_dirs = 1
install_mode = "directory"

[[steps]]
action = "set_env"
"""


def test_the_registry_spelling_is_planned_and_round_trips() -> None:
    recipe = parse_recipe(HEAD + 'vars = { NVMISH_DIR = "{install_dir}", V = "v{version}" }\n')
    assert unsupported_actions(recipe) == []
    assert parse_recipe(dump_recipe(recipe)) == recipe
    plan = json.loads(msgspec.json.encode(plan_recipe(recipe, V, LINUX, install_dir="/t")))
    assert plan["unsupported"] == []
    assert plan["steps"][-1] == {
        "action": "set_env",
        "params": {"vars": {"NVMISH_DIR": "{install_dir}", "V": "v1.2.0"}},
        "evaluable": True,
        "deterministic": True,
    }


def test_tsukus_list_spelling_reads_too() -> None:
    recipe = parse_recipe(HEAD + 'vars = [{ name = "JAVA_HOME", value = "{install_dir}" }]\n')
    assert parse_recipe(dump_recipe(recipe)) == recipe
    assert env_file(recipe, LINUX, "1.2.0", "/opt/t") == "export JAVA_HOME=/opt/t\n"


@pytest.mark.parametrize(
    "line",
    [
        'vars = { "A-B" = "x" }',
        'vars = { "1A" = "x" }',
        'vars = [{ name = "PATH;id", value = "x" }]',
        'vars = [{ name = "A" }]',
        'vars = "A=x"',
        "vars = {}",
    ],
)
def test_a_name_the_shell_would_not_read_as_one_is_refused(line: str) -> None:
    with pytest.raises(RecipeParseError, match="vars"):
        parse_recipe(HEAD + line + "\n")


def test_sourcing_the_file_sets_the_values_and_runs_nothing(tmp_path: Path) -> None:
    ran = tmp_path / "ran"
    value = f"a b; touch {ran}; $(touch {ran}) `touch {ran}` '\"{{version}}"
    recipe = parse_recipe(HEAD + f"vars = {{ ODD = {json.dumps(value)} }}\n")
    text = env_file(recipe, LINUX, "1.2.0", "/opt/t")
    assert text is not None
    env = tmp_path / "env.sh"
    env.write_text(text)
    out = subprocess.run(
        ["sh", "-c", f'. {env} && printf %s "$ODD"'], capture_output=True, text=True, check=True
    )
    assert out.stdout == value.replace("{version}", "1.2.0")
    assert not ran.exists()
