"""Examples at the end of each command's ``--help``: two or three real command lines.

Loaded only when help is asked for (``-h``, ``--help``, ``tsukuctl help ...``), so the
commands scripts and the shell hook run never pay for the text. A test parses every
line here with tsukuctl's own parser, so an example cannot name a flag that does not
exist. Keyed by the command's words (``"batch add"``); a command with subcommands shows
its own examples and each subcommand its own.
"""

from __future__ import annotations

EXAMPLES: dict[str, tuple[str, ...]] = {
    "status": (
        "tsukuctl status                      # budget, breakers, ledger, settings",
        "tsukuctl status --json               # the same as one JSON object",
    ),
    "events": (
        "tsukuctl events --since 7d --type 'llm.*'     # the model calls of the last week",
        "tsukuctl events summary --by day              # cost and tokens per day",
        "tsukuctl events verify                        # check the ledger's hash chain",
    ),
    "daemon": (
        "tsukuctl daemon start                # start tsukud (commands start it anyway)",
        "tsukuctl daemon logs --lines 50      # its last log lines",
        "tsukuctl daemon restart",
    ),
    "config": (
        "tsukuctl config list                 # every setting, its value and its source",
        "tsukuctl config set llm.daily_budget 2.5",
        "tsukuctl config get llm.provider",
    ),
    "sandbox": (
        "tsukuctl sandbox status              # the container runtime and validation image",
        "tsukuctl sandbox prepare             # build the validation image (offline-capable)",
        "tsukuctl sandbox check               # prove the container's isolation",
    ),
    "llm": (
        "tsukuctl llm status                  # each provider: model, key, price",
        "tsukuctl llm test --provider claude --yes",
    ),
    "install": (
        "tsukuctl install ripgrep             # from its recipe (or discovered, asking first)",
        "tsukuctl install age@1.2.0 k9s       # a version, and several tools at once",
        "tsukuctl install prettier --from npm:prettier",
    ),
    "list": (
        "tsukuctl list",
        "tsukuctl list --json",
    ),
    "remove": (
        "tsukuctl remove ripgrep",
        "tsukuctl remove age k9s --json       # a JSON line per tool",
        "tsukuctl remove --unused             # hidden toolchains no tool uses (asks)",
    ),
    "verify": (
        "tsukuctl verify ripgrep              # run its verify command, re-hash its binaries",
        "tsukuctl verify ripgrep --json",
    ),
    "info": (
        "tsukuctl info ripgrep                # recipe, platform support, install state",
        "tsukuctl info ripgrep --json",
    ),
    "update-registry": (
        "tsukuctl update-registry             # refresh the recipe list and cached recipes",
        "tsukuctl update-registry --json",
    ),
    "plan": (
        "tsukuctl plan ripgrep                # what an install would do, step by step",
        "tsukuctl plan age@1.2.0 --platform darwin/arm64 --json",
    ),
    "outdated": (
        "tsukuctl outdated                    # installed tools with a newer release",
        "tsukuctl outdated ripgrep --json",
    ),
    "upgrade": (
        "tsukuctl upgrade ripgrep age",
        "tsukuctl upgrade --all",
    ),
    "create": (
        "tsukuctl create k9s --from github:derailed/k9s        # preview, then save or install",
        "tsukuctl create k9s --from github:derailed/k9s --yes  # write it without questions",
        "tsukuctl create jq --from github:jqlang/jq --deterministic-only --output -",
    ),
    "batch": (
        "tsukuctl batch add sources.txt       # queue TOOL SOURCE lines",
        "tsukuctl batch run --deterministic-only --max-usd 5",
        "tsukuctl batch status",
    ),
    "batch add": (
        "tsukuctl batch add sources.txt",
        "tsukuctl batch add sources.jsonl --json",
    ),
    "batch run": (
        "tsukuctl batch run --deterministic-only",
        "tsukuctl batch run --max-usd 5 --jobs 4",
    ),
    "batch status": (
        "tsukuctl batch status",
        "tsukuctl batch status --json",
    ),
    "batch retry": (
        "tsukuctl batch retry                 # failed and deferred jobs back in the queue",
        "tsukuctl batch retry --failed",
    ),
    "batch export": (
        "tsukuctl batch export ./recipes      # each tool's latest recipe as a file",
        "tsukuctl batch export ./recipes --json",
    ),
    "batch clear": (
        "tsukuctl batch clear",
        "tsukuctl batch clear --json",
    ),
    "eval": (
        "tsukuctl eval create --corpus builtin --max-usd 2",
        "tsukuctl eval discover --corpus builtin --max-usd 1",
        "tsukuctl eval compare RUN_A RUN_B",
    ),
    "eval create": (
        "tsukuctl eval create --corpus builtin --max-usd 2",
        "tsukuctl eval create --corpus ./corpus --repairs 0 --yes",
    ),
    "eval discover": (
        "tsukuctl eval discover --corpus builtin --max-usd 1",
        "tsukuctl eval discover --corpus ./tools --provider gemini --yes --json",
    ),
    "eval compare": (
        "tsukuctl eval compare RUN_A RUN_B    # two runs' ids, from eval create's output",
        "tsukuctl eval compare RUN_A RUN_B --json",
    ),
    "hook": (
        "tsukuctl hook install                # PATH and command-not-found for your shell",
        "tsukuctl hook status",
        "tsukuctl hook mode confirm           # suggest, confirm or auto",
    ),
    "shell-init": (
        "tsukuctl shell-init bash             # the lines for an rc file you keep yourself",
        "tsukuctl shell-init fish",
    ),
    "demo": (
        "tsukuctl demo                        # the whole flow, offline, in a home of its own",
        "tsukuctl demo --keep                 # and keep that home to look at",
    ),
    "search": (
        "tsukuctl search ripgrep              # recipe, packages, what install would do",
        "tsukuctl search prettier --json",
    ),
    "discover": (
        "tsukuctl discover stripe-cli         # where it comes from (may ask to spend)",
        "tsukuctl discover stripe-cli --no-llm --json",
    ),
    "doctor": (
        "tsukuctl doctor                      # daemon, home, config, keys, sandbox, PATH",
        "tsukuctl doctor --json",
    ),
    "completion": (
        "tsukuctl completion bash             # source <(tsukuctl completion bash) in ~/.bashrc",
        "tsukuctl completion fish             # tsukuctl completion fish | source",
    ),
    "help": (
        "tsukuctl help install",
        "tsukuctl help events summary",
    ),
}


def epilog(words: str) -> str | None:
    """The ``examples:`` block for the command ``words``, or None."""
    lines = EXAMPLES.get(words)
    if not lines:
        return None
    return "examples:\n" + "\n".join(f"  {line}" for line in lines)
