"""How much of a recipe registry tsuku can read, and how much it can install.

    .venv/bin/python bench/registry_coverage.py [REGISTRY_DIR] [--show N]

Reads every ``*.toml`` under the directory (default: the shared fixtures,
``../shared/fixtures/tsuku-recipes``, or ``$TSUKU_SHARED/fixtures/tsuku-recipes``) and
sorts each recipe into one of three piles, so a parser gap is never counted as a
missing action or the other way round:

* **parse failures**, grouped by the field and expectation the parser names;
* **parsed, unsupported**: some step (on some platform) uses an action, a parameter or
  a version source tsuku cannot run yet, counted per action;
* **supported**: every step of the recipe is one tsuku runs.

Keys the format does not model are kept (and written back) by the parser; they are
counted here so new registry keys get noticed. No network, no daemon. The last line
reads ``parsed P/N, supported S/N``.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:  # `python bench/x.py` puts bench/ first, not the repo
    sys.path.insert(0, str(REPO))

from tsukud.recipe import (  # noqa: E402
    RecipeParseError,
    load_recipe,
    unknown_keys,
    unsupported_actions,
)

NAME = "registry_coverage"
_INDEX = re.compile(r"\[\d+\]")


@dataclass
class Coverage:
    total: int = 0
    parsed: int = 0
    supported: int = 0
    parse_failures: Counter[str] = field(default_factory=Counter)
    unsupported: Counter[str] = field(default_factory=Counter)
    unknown: Counter[str] = field(default_factory=Counter)
    examples: dict[str, str] = field(default_factory=dict)

    def lines(self, show: int = 10) -> list[str]:
        n = self.total
        out = [f"recipes: {n}"]
        out.append(f"parse failures: {n - self.parsed}")
        for why, count in self.parse_failures.most_common(show):
            out.append(f"  {count:5d}  {why}  (e.g. {self.examples[why]})")
        out.append(f"parsed but unsupported: {self.parsed - self.supported}")
        for action, count in self.unsupported.most_common(show):
            out.append(f"  {count:5d}  {action}")
        if self.unknown:
            out.append(f"unknown keys (kept, not fatal): {sum(self.unknown.values())}")
            for key, count in self.unknown.most_common(show):
                out.append(f"  {count:5d}  {key}")
        out.append(f"parsed {self.parsed}/{n}, supported {self.supported}/{n}")
        return out


def _failure_kind(exc: RecipeParseError) -> str:
    """The field (indexes dropped, so steps[3] and steps[0] group) and what was wrong."""
    message = exc.message.split(": ", 1)[1] if ": " in exc.message else exc.message
    return _INDEX.sub("[]", message)


def measure(paths: Iterable[Path]) -> Coverage:
    report = Coverage()
    for path in paths:
        report.total += 1
        try:
            recipe = load_recipe(path)
        except RecipeParseError as exc:
            kind = _failure_kind(exc)
            report.parse_failures[kind] += 1
            report.examples.setdefault(kind, path.name)
            continue
        report.parsed += 1
        report.unknown.update(_INDEX.sub("[]", k) for k in unknown_keys(recipe))
        missing = unsupported_actions(recipe)
        report.unsupported.update(missing)
        if not missing:
            report.supported += 1
    return report


def default_registry() -> Path:
    shared = Path(os.environ.get("TSUKU_SHARED") or REPO.parent / "shared")
    return shared / "fixtures" / "tsuku-recipes"


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("registry", nargs="?", type=Path, default=None)
    ap.add_argument("--show", type=int, default=10, help="rows per breakdown")
    ap.add_argument("--quick", action="store_true", help="accepted for run_all; no effect")
    args = ap.parse_args(argv)
    root: Path = args.registry or default_registry()
    if not root.is_dir():
        print(f"registry_coverage: {root} is not a directory", file=sys.stderr)
        return 2
    report = measure(sorted(root.rglob("*.toml")))
    print("\n".join(report.lines(args.show)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
