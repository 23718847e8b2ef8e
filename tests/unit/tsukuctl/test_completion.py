"""Completion scripts: generated from the parser (and committed up to date), printed by
`tsukuctl completion SHELL`, and loaded by the real shells."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO
from tests.integration.hooks.conftest import need_shell
from tsukuctl.completion_commands import SHELLS, script


def run(
    *argv: str, input: str | None = None, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        argv, capture_output=True, text=True, input=input, cwd=REPO, timeout=60, env=env
    )


def test_the_committed_scripts_are_a_fresh_generation() -> None:
    """A new command or flag fails this until `python scripts/gen_completions.py` runs."""
    cp = run(sys.executable, "scripts/gen_completions.py", "--check")
    assert cp.returncode == 0, cp.stderr


@pytest.mark.parametrize("shell", SHELLS)
def test_completion_prints_the_packaged_script(shell: str) -> None:
    cp = run(sys.executable, "-m", "tsukuctl", "completion", shell)
    assert cp.returncode == 0 and cp.stdout == script(shell)
    assert "gen_completions.py" in cp.stdout and "upgrade" in cp.stdout


def test_completion_builds_only_its_own_parser() -> None:
    code = (
        "import sys; from tsukuctl import cli; cli.build_parser('completion'); "
        "print(' '.join(sorted(m for m in sys.modules if m.startswith('tsukuctl.'))))"
    )
    loaded = set(run(sys.executable, "-c", code).stdout.split())
    assert loaded == {
        "tsukuctl.cli",
        "tsukuctl.client",
        "tsukuctl.verbosity",
        "tsukuctl.completion_commands",
    }


def test_an_unknown_shell_is_a_usage_error() -> None:
    cp = run(sys.executable, "-m", "tsukuctl", "completion", "bsah")
    assert cp.returncode == 2 and "did you mean 'bash'" in cp.stderr


BASH = """
source <({python} -m tsukuctl completion bash)
complete -p tsukuctl
t() {{
    COMP_WORDS=("$@"); COMP_CWORD=$(( ${{#COMP_WORDS[@]}} - 1 ))
    _tsukuctl; echo "${{COMPREPLY[*]}}"
}}
t tsukuctl ins
t tsukuctl up
t tsukuctl events --by h
t tsukuctl install --j
t tsukuctl -q help out
t tsukuctl completion ''
t tsukuctl upgrade --a
"""


def test_bash_completes_commands_flags_and_choices() -> None:
    cp = run(need_shell("bash"), "--norc", "-c", BASH.format(python=sys.executable))
    assert cp.returncode == 0, cp.stderr
    assert cp.stdout.splitlines() == [
        "complete -F _tsukuctl tsukuctl",
        "install",
        "update-registry upgrade",
        "hour",
        "--json",
        "outdated",
        "bash zsh fish",
        "--all",
    ]


ZSH = """
autoload -U compinit && compinit -u -D
source <({python} -m tsukuctl completion zsh)
print -r -- "$_comps[tsukuctl]"
compadd() {{ [[ $1 == -- ]] && shift; print -r -- "${{(j: :)@}}" }}
t() {{ words=("$@"); CURRENT=${{#words}}; _tsukuctl }}
t tsukuctl events --by ''
t tsukuctl install --j
t tsukuctl completion ''
t tsukuctl ins
"""


def test_zsh_registers_and_offers_the_candidates() -> None:
    """Headless zsh has no completion widget, so the candidates are read from compadd
    (zsh itself filters them by the typed prefix)."""
    cp = run(need_shell("zsh"), "-f", "-c", ZSH.format(python=sys.executable))
    assert cp.returncode == 0, cp.stderr
    lines = cp.stdout.splitlines()
    assert lines[0] == "_tsukuctl"
    assert lines[1] == "day hour provider model session type"
    assert "--json" in lines[2].split() and "install" not in lines[2].split()
    assert lines[3] == "bash zsh fish"
    assert {"install", "outdated", "doctor", "completion"} <= set(lines[4].split())


def test_fish_completes_through_its_own_engine() -> None:
    fish = need_shell("fish")
    source = f"{sys.executable} -m tsukuctl completion fish | source"
    asks = {
        "tsukuctl ins": ["install"],
        "tsukuctl events --by ho": ["hour"],
        "tsukuctl upgrade --a": ["--all"],
        "tsukuctl completion ": ["bash", "fish", "zsh"],
    }
    for typed, want in asks.items():
        cp = run(fish, "--no-config", "-c", f"{source}; complete -C '{typed}'")
        assert cp.returncode == 0, cp.stderr
        assert sorted(cp.stdout.split()) == want, typed


INDEX = (
    "# tsuku binary index v2: binary\ttool\tsource\n"
    "#ignored\tk9s\ta-kube\tregistry\n"
    "k9s\tk9s\tregistry\n"
    "rg\tripgrep\tinstalled\n"
    "sk\tstern\tregistry\n"
    "stern\tstern\tregistry\n"
)
TYPED = {  # what is typed → the tool names offered (issue 29, point 7)
    "install": ["k9s", "ripgrep", "stern"],  # every known tool, each once
    "remove": ["ripgrep"],  # installed ones only
    "upgrade": ["ripgrep"],
    "info": ["k9s", "ripgrep", "stern"],
}


@pytest.mark.parametrize("shell", SHELLS)
def test_tool_names_complete_from_the_command_index(shell: str, tmp_path: Path) -> None:
    """Read by the shell itself (awk over the index the daemon keeps): no Python runs.
    A home without an index offers nothing, and no error."""
    exe = need_shell(shell)
    (tmp_path / "share").mkdir()
    (tmp_path / "share" / "binary-index.tsv").write_text(INDEX)
    empty = tmp_path / "empty"
    loaded = script(shell)
    got: dict[str, list[str]] = {}
    for home in (tmp_path, empty):
        env = {**os.environ, "TSUKU_HOME": str(home), "HOME": str(home)}
        for command in TYPED:
            if shell == "bash":
                code = (
                    f"{loaded}\nCOMP_WORDS=(tsukuctl {command} ''); COMP_CWORD=2; _tsukuctl; "
                    'printf "%s\\n" "${COMPREPLY[@]}"'
                )
                cp = run(exe, "--norc", "-c", code, env=env)
            elif shell == "zsh":
                code = (
                    "autoload -U compinit && compinit -u -D\n"
                    f"{loaded}\n"
                    'compadd() { [[ $1 == -- ]] && shift; printf "%s\\n" "$@" }\n'
                    f"words=(tsukuctl {command} ''); CURRENT=3; _tsukuctl"
                )
                cp = run(exe, "-f", "-c", code, env=env)
            else:
                code = f"{loaded}\ncomplete -C 'tsukuctl {command} '"
                cp = run(exe, "--no-config", "-c", code, env=env)
            assert cp.returncode == 0 and "awk:" not in cp.stderr, cp.stderr
            got[f"{home.name} {command}"] = sorted(w for w in cp.stdout.split() if w)
    assert {k.split()[1]: v for k, v in got.items() if k.startswith(tmp_path.name)} == TYPED
    assert all(v == [] for k, v in got.items() if k.startswith("empty")), got
