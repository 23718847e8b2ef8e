"""Deterministic verify self-repair: proposals from the verify command's own result."""

from __future__ import annotations

from tsukud.create.verify_repair import help_score, looks_like_help, output_pattern, propose
from tsukud.recipe import check_verify_output, render_verify

COBRA_HELP = """\
Error: unknown flag: --version
Usage:
  gitleaks [command]

Available Commands:
  completion  Generate the autocompletion script
  detect      detect secrets in code
  help        Help about any command
  version     display gitleaks version

Flags:
  -h, --help   help for gitleaks
"""


def _commands(proposals: list) -> list[str]:
    return [p.command for p in proposals]


def test_version_subcommand_first_when_help_lists_it() -> None:
    proposals = propose("gitleaks --version", COBRA_HELP, 1, version="8.30.0")
    assert _commands(proposals)[0] == "gitleaks version"
    # The failing command is never proposed again as a version check.
    assert "gitleaks --version" not in _commands([p for p in proposals if p.mode == "version"])
    assert {"gitleaks -V", "gitleaks -v"} <= set(_commands(proposals))
    first = proposals[0]
    assert (first.mode, first.pattern, first.exit_code) == ("version", "{version}", 0)


def test_short_flags_hinted_by_help() -> None:
    help_text = "usage: tool [-V] [-q]\n  -V  print version and exit\n"
    proposals = propose("tool --version", help_text, 2, version="1.0.0")
    assert _commands(proposals)[0] == "tool -V"


def test_help_output_becomes_an_exact_case_output_check() -> None:
    proposals = propose("gitleaks --version", COBRA_HELP, 1, version="8.30.0")
    detected = next(p for p in proposals if p.method == "output_detection")
    assert detected.command == "gitleaks --version"
    assert detected.mode == "output"
    assert detected.pattern == "Usage"  # as printed: the reference's "usage" never matched
    assert detected.exit_code == 1
    # The proposed verify section passes the recipe's own check on that same output.
    rendered = render_verify(detected.to_verify(), "8.30.0", "/tools/gitleaks")
    assert rendered is not None and rendered.mode == "output"
    check_verify_output(rendered.check, 1, COBRA_HELP)


def test_help_fallbacks_derive_their_pattern_after_running() -> None:
    proposals = propose("tool --version", "", 1, version="1.0.0")
    helps = [p for p in proposals if p.method.startswith("help")]
    assert [p.command for p in helps] == ["tool --help", "tool -h"]
    assert all(p.pattern is None and p.mode == "output" for p in helps)
    later_output = "TOOL(1)\nUSAGE: tool [OPTIONS]\n"
    assert output_pattern(later_output, "tool") == "USAGE"
    verify = helps[0].to_verify(output_pattern(later_output, "tool"))
    assert (verify.command, verify.pattern, verify.mode) == ("tool --help", "USAGE", "output")


def test_version_printed_with_nonzero_exit() -> None:
    (proposal,) = propose(
        "java -version", 'openjdk version "21.0.5" 2024-10-15', 1, version="21.0.5"
    )
    assert proposal.method == "accept_exit_code"
    assert proposal.command == "java -version" and proposal.exit_code == 1
    check_verify_output(
        render_verify(proposal.to_verify(), "21.0.5", "/t").check,  # type: ignore[union-attr]
        1,
        'openjdk version "21.0.5" 2024-10-15',
    )


def test_pattern_relaxed_when_output_has_the_version_differently() -> None:
    (proposal,) = propose(
        "kind version",
        "kind v0.20.0 go1.20.4 linux/amd64",
        0,
        version="0.20.0",
        pattern="kind version {version}",
    )
    assert proposal.method == "relax_pattern"
    assert proposal.pattern == "v{version}"
    (plain,) = propose("tool --version", "tool 1.2.3", 0, version="1.2.3", pattern="v{version}")
    assert plain.pattern == "{version}"


def test_nothing_to_propose_when_the_binary_cannot_run() -> None:
    assert propose("tool --version", "sh: tool: not found", 127, version="1.0") == []
    assert propose("tool --version", "exec format error", 1, version="1.0") == []
    assert propose("tool --version", "", 126, version="1.0") == []
    assert (
        propose(
            "tool --version",
            "error while loading shared libraries: libssl.so.3: cannot open shared object file",
            127,
            version="1.0",
        )
        == []
    )
    assert propose("tool 'unclosed", "", 1, version="1.0") == []


def test_passing_verify_needs_no_repair() -> None:
    assert propose("tool --version", "tool 1.2.3", 0, version="1.2.3") == []


def test_cargo_plugins_get_their_subcommand() -> None:
    proposals = propose("cargo-deny --version", "error: unexpected argument", 2, version="0.14.3")
    assert proposals[0].command == "cargo-deny deny --version"


def test_help_score_is_case_insensitive() -> None:
    assert help_score("USAGE:\n  tool [flags]\nOPTIONS:\n  -h, --help", "tool") >= 2
    assert help_score("segmentation fault", "tool") < 2


LONG_ERROR = (
    "picky: error: unknown flag --version. picky could not parse its arguments; the "
    "configuration in /etc/picky/picky.conf was not found and picky refuses to continue "
    "until it is created. See the picky documentation for the list of valid flags; picky "
    "exits non-zero."
)


def test_a_long_error_naming_the_tool_is_not_help() -> None:
    assert len(LONG_ERROR) > 200
    assert help_score(LONG_ERROR, "picky") == 0
    assert not looks_like_help(LONG_ERROR, "picky")
    # So the failing command is never proposed as an output check that "verifies".
    proposals = propose("picky --version", LONG_ERROR, 2, version="1.0.0")
    assert not [p for p in proposals if p.method == "output_detection"]


def test_a_marker_is_needed_and_error_words_count_against() -> None:
    assert looks_like_help("NAME\n  tool - does things\nSYNOPSIS\n  tool [-q] file\n", "tool")
    assert looks_like_help("Commands:\n  run   run it\n  -h, --help\n", "tool")
    # A usage line after an error is weak; a whole help page after one still counts.
    assert not looks_like_help("Error: invalid argument 'x'\nUsage: tool [flags]\n", "tool")
    assert looks_like_help(COBRA_HELP, "gitleaks")
    assert help_score("Usage: tool [flags]", "tool") > help_score(
        "error: not found\nUsage: tool [flags]", "tool"
    )
