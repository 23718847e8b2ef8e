"""command_not_found: what the shell hook adds to bash's own "command not found".

Three variants, each an interactive ``bash --noprofile --rcfile RC -i -c LOOP``:

- plain:   RC is empty; bash prints its own message for ``stern``;
- known:   RC sources the tsuku hook; ``stern`` is in the binary index (suggestion printed);
- unknown: RC sources the tsuku hook; ``nosuchcmd-xyz`` is not in the index.

The index is written by the daemon's own builder (``tsukud.hooks.index.build_index``)
with ~1,500 commands, the size of tsuku's registry, ``stern`` in the middle. Each LOOP
runs the command with stderr to /dev/null and takes ``$EPOCHREALTIME`` (µs) just before
and after, inside the shell: the figure is the command-not-found path alone (bash's
fork, the handler, the grep), without bash's start-up, which varies by more than the
effect measured. 4 rounds, variants interleaved, 2 untimed warm-ups then 5 timed runs
per round and variant: median of 20. Goal: <= 10 ms added.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from _common import REPO, fmt, goal, header, median, not_measured, note, parse_args, temp_home

from tsukud.hooks.index import build_index, write_index

NAME = "command_not_found"
GOAL_MS = 10.0
ROUNDS, WARMUP, TIMED = 4, 2, 5

LOOP = r"""
for ((i = 0; i < {total}; i++)); do
    t0=$EPOCHREALTIME
    {command} 2>/dev/null
    s=$?
    t1=$EPOCHREALTIME
    printf '%s %s %s\n' "$s" "$t0" "$t1"
done
"""


def fake_registry(n: int = 1500) -> list[tuple[str, str, list[str]]]:
    """``n`` tools named like real ones would sort, with stern among them."""
    syllables = ("ka", "zu", "mi", "ro", "te", "na", "shi", "po", "gu", "le", "xa", "bo")
    names = {"stern"}
    i = 0
    while len(names) < n:
        a, b, c = i % 12, (i // 12) % 12, (i // 144) % 12
        names.add(syllables[a] + syllables[b] + syllables[c] + ("" if i < 1728 else str(i)))
        i += 1
    return [(name, "registry", [name]) for name in sorted(names)]


def run_loop(rc: Path, command: str, env: dict[str, str], total: int) -> list[float]:
    """Milliseconds per run of ``command`` in one interactive bash; checks it said 127."""
    argv = ["bash", "--noprofile", "--rcfile", str(rc), "-i", "-c"]
    cp = subprocess.run(
        [*argv, LOOP.format(total=total, command=command)],
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    rows = [line.split() for line in cp.stdout.splitlines() if line.strip()]
    if len(rows) != total or any(r[0] != "127" for r in rows):
        raise RuntimeError(f"unexpected output from bash:\n{cp.stdout}\n{cp.stderr}")
    return [(float(t1) - float(t0)) * 1000 for _, t0, t1 in rows]


def main() -> int:
    args = parse_args(__doc__ or "")
    header(NAME, args.quick)
    if shutil.which("bash") is None:
        not_measured(NAME, f"<= {GOAL_MS:.0f} ms added", "no bash on this machine")
        return 0
    version = subprocess.run(
        ["bash", "-c", "echo $BASH_VERSION"], capture_output=True, text=True, check=True
    ).stdout.strip()
    with temp_home("tkb-cnf-") as h:
        hooks = h.path / "share" / "hooks"
        hooks.mkdir(parents=True)
        shutil.copy(REPO / "tsukuctl" / "hooks" / "tsuku.bash", hooks / "tsuku.bash")
        write_index(str(h.path), build_index(fake_registry(), {}))
        plain_rc = h.path / "plain.bashrc"
        plain_rc.write_text("")
        hook_rc = h.path / "hook.bashrc"
        hook_rc.write_text(f'. "{hooks / "tsuku.bash"}"\n')
        env = {**h.env, "HOME": str(h.path), "LC_ALL": "C", "PATH": "/usr/bin:/bin"}
        variants = {
            "plain": (plain_rc, "stern"),
            "known": (hook_rc, "stern"),
            "unknown": (hook_rc, "nosuchcmd-xyz"),
        }
        samples: dict[str, list[float]] = {k: [] for k in variants}
        for _ in range(ROUNDS):
            for key, (rc, command) in variants.items():
                ms = run_loop(rc, command, env, WARMUP + TIMED)
                samples[key] += ms[WARMUP:]
    base = median(samples["plain"])
    note(
        NAME,
        f"bash {version}; median of {ROUNDS * TIMED} runs per variant, timed inside an"
        " interactive bash with $EPOCHREALTIME around the command (stderr to /dev/null),"
        f" {ROUNDS} interleaved rounds; index of 1,500 commands",
    )
    worst = 0.0
    for key in ("known", "unknown"):
        m = median(samples[key])
        worst = max(worst, m - base)
        print(
            f"{NAME}_{key}: +{fmt(m - base)} ms ({fmt(m)} ms vs bash's {fmt(base)} ms)",
            flush=True,
        )
    goal(NAME, worst <= GOAL_MS, f"+{fmt(worst)} ms added <= {GOAL_MS:.0f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
