"""``install_shell_init``'s pure part and its reading: tsuku's checks when the recipe
is read, tsuku's file names, the question that shows every fragment in full, and a
``source_command`` that may only run one of the tool's own programs."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tsukud.install.errors import InstallError
from tsukud.install.shell_init import consent_question, discard, gather, refusal, write
from tsukud.recipe import (
    InstallShellInitStep,
    Platform,
    RecipeParseError,
    ResolvedVersion,
    dump_recipe,
    parse_recipe,
)
from tsukud.recipe.plan import plan_recipe

NVM = """
[metadata]
name = "nvm"

[[steps]]
action = "download_archive"
url = "https://example.test/nvm-{version}.tar.gz"
install_mode = "directory"

[[steps]]
action = "install_shell_init"
source_file = "nvm.sh"
target = "nvm"
"""


def test_tsukus_nvm_step_reads_plans_and_round_trips() -> None:
    recipe = parse_recipe(NVM)
    step = recipe.steps[1]
    assert isinstance(step, InstallShellInitStep)
    assert (step.source_file, step.target, step.shells) == ("nvm.sh", "nvm", ("bash", "zsh"))
    plan = plan_recipe(
        recipe, ResolvedVersion("0.40.1", "v0.40.1"), Platform("linux", "amd64"), install_dir="/t"
    )
    planned = plan.steps[-1]
    assert planned.action == "install_shell_init"
    assert planned.params == {"shells": ["bash", "zsh"], "source_file": "nvm.sh", "target": "nvm"}
    assert (planned.evaluable, planned.deterministic) == (False, True)
    assert parse_recipe(dump_recipe(recipe)) == recipe


@pytest.mark.parametrize(
    ("change", "where"),
    [
        ('source_file = "nvm.sh"\nsource_command = "nvm init"', "exactly one of source_file"),
        ('shells = ["bash"]', "exactly one of source_file"),  # neither
        ('source_file = "nvm.sh"\nshells = ["fish"]', "shells[0]"),
        ('source_file = "../../.bashrc"', "source_file"),
    ],
)
def test_what_tsuku_refuses_is_refused_when_read(change: str, where: str) -> None:
    with pytest.raises(RecipeParseError, match=re.escape(where)):
        parse_recipe(NVM.replace('source_file = "nvm.sh"', change))


@pytest.mark.parametrize("target", ["0env", "a@b", "x/y", ""])
def test_a_target_must_keep_fragment_names_apart(target: str) -> None:
    with pytest.raises(RecipeParseError, match="target"):
        parse_recipe(NVM.replace('target = "nvm"', f'target = "{target}"'))


def test_the_question_shows_every_fragment_in_full(tmp_path: Path) -> None:
    (tmp_path / "nvm.sh").write_text("export NVM_DIR=x\nnvm() { :; }\n")
    step = parse_recipe(NVM).steps[1]
    assert isinstance(step, InstallShellInitStep)
    fragments = gather(step, tmp_path, "0.40.1", {})
    assert [f.path for f in fragments] == [
        "share/shell.d/nvm@0.40.1.bash",
        "share/shell.d/nvm@0.40.1.zsh",
    ]
    question = consent_question("nvm", 1, fragments)
    assert "    | export NVM_DIR=x\n    | nvm() { :; }\n" in question.message
    assert question.data["kind"] == "shell_init"
    assert question.data["option"]["files"][0]["content"] == "export NVM_DIR=x\nnvm() { :; }\n"
    said = refusal("nvm", 1, step, yes=True)
    assert said.code == "shell_init_needs_consent" and "--yes does not accept" in said.message
    home = tmp_path / "home"
    written = write(home, fragments)
    assert [p.read_text() for p in written] == [fragments[0].content] * 2
    discard(home, [f.path for f in fragments] + ["tools/other-1/bin/x", "share/shell.d/../x"])
    assert not any(p.exists() for p in written)


def test_a_source_command_runs_only_the_tools_own_program(tmp_path: Path) -> None:
    (tmp_path / "bin").mkdir()
    prog = tmp_path / "bin" / "niwa"
    prog.write_text('#!/bin/sh\n[ "$2" = zsh ] && exit 1\necho "niwa() { :; } # $1 $2"\n')
    prog.chmod(0o755)
    step = parse_recipe(
        NVM.replace(
            'source_file = "nvm.sh"', 'source_command = "{install_dir}/bin/niwa shell-init {shell}"'
        )
    ).steps[1]
    assert isinstance(step, InstallShellInitStep)
    (only,) = gather(step, tmp_path, "1.0", {"PATH": "/usr/bin:/bin"})  # zsh failed: skipped
    assert (only.shell, only.content) == ("bash", "niwa() { :; } # shell-init bash\n")
    outside = parse_recipe(
        NVM.replace('source_file = "nvm.sh"', 'source_command = "/bin/echo hi"')
    ).steps[1]
    assert isinstance(outside, InstallShellInitStep)
    with pytest.raises(InstallError, match="is not a program in"):
        gather(outside, tmp_path, "1.0", {})
