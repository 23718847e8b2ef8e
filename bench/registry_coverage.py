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
counted here so new registry keys get noticed. Each parsed recipe is also planned
(``tsukuctl plan``'s pure planner) on the four standard platforms at a stand-in version,
with the release's assets and a bottle stood in by names its patterns match (no network):
per action, how many of the recipes using it plan that action on every platform where
it serves, so a gap in planning is seen beside a gap in support. Then (unless
``--no-install``) each recipe is installed for this host's platform by the real
installer, in-process, against fakes serving a synthesized release for it
(``_coverage_installs.py``): per action, how many of the recipes using it there install.
No network, no daemon. The last line reads ``parsed P/N, supported S/N``.
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
from typing import TYPE_CHECKING

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:  # `python bench/x.py` puts bench/ first, not the repo
    sys.path.insert(0, str(REPO))

from tsukud.recipe import (  # noqa: E402
    STANDARD_PLATFORMS,
    GitHubArchiveStep,
    GitHubFileStep,
    HomebrewStep,
    Recipe,
    RecipeParseError,
    ResolvedVersion,
    UnsupportedPlatform,
    check_platform,
    host_platform,
    load_recipe,
    matching_steps,
    unknown_keys,
    unsupported_actions,
)
from tsukud.recipe.homebrew import BottleRef  # noqa: E402
from tsukud.recipe.plan import plan_recipe  # noqa: E402
from tsukud.recipe.platform import Platform  # noqa: E402
from tsukud.recipe.render import expand, mapped  # noqa: E402
from tsukud.recipe.system import SYSTEM_MANAGERS  # noqa: E402

if TYPE_CHECKING:
    from bench._coverage_installs import Installs

NAME = "registry_coverage"
_INDEX = re.compile(r"\[\d+\]")
_CLASS = re.compile(r"\[\^?([^\]])[^\]]*\]")
STAND_IN = ResolvedVersion("1.0.0", "v1.0.0")


@dataclass
class Coverage:
    total: int = 0
    parsed: int = 0
    supported: int = 0
    parse_failures: Counter[str] = field(default_factory=Counter)
    unsupported: Counter[str] = field(default_factory=Counter)
    unknown: Counter[str] = field(default_factory=Counter)
    examples: dict[str, str] = field(default_factory=dict)
    # action → recipes using it, and of those the ones whose plan has it everywhere
    uses: Counter[str] = field(default_factory=Counter)
    plans: Counter[str] = field(default_factory=Counter)
    # What the real installer installed against the fakes (_coverage_installs.py).
    installs: Installs | None = None

    def lines(self, show: int = 10) -> list[str]:
        n = self.total
        out = [f"recipes: {n}"]
        out.append(f"parse failures: {n - self.parsed}")
        for why, count in self.parse_failures.most_common(show):
            out.append(f"  {count:5d}  {why}  (e.g. {self.examples[why]})")
        out.append(f"parsed but unsupported: {self.parsed - self.supported}")
        for action, count in self.unsupported.most_common(show):
            out.append(f"  {count:5d}  {action}")
        if self.uses:
            out.append(
                "plans per action (recipes that plan it on every platform it serves / using it):"
            )
            for action, count in self.uses.most_common():
                out.append(f"  {self.plans[action]:5d}/{count:<5d}  {action}")
        if self.installs is not None:
            got = self.installs
            out.append(
                f"installs per action on {got.platform} against the fakes "
                "(recipes that install / using it there):"
            )
            for action, count in got.uses.most_common():
                out.append(f"  {got.installed[action]:5d}/{count:<5d}  {action}")
            for code, count in got.failures.most_common(show):
                out.append(f"  {count:5d}  not installed: {code}")
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
        for action, planned in planned_actions(recipe).items():
            report.uses[action] += 1
            report.plans[action] += planned
        missing = unsupported_actions(recipe)
        report.unsupported.update(missing)
        if not missing:
            report.supported += 1
    return report


def _matching_name(pattern: str) -> str:
    """A file name ``pattern`` (a Go glob) matches: what a release would have to list."""
    return _CLASS.sub(r"\1", pattern).replace("*", "x").replace("?", "x")


# linux/amd64 on each family tsuku names (the system package actions serve only there).
FAMILY_PLATFORMS = tuple(
    Platform("linux", "amd64", "musl" if m.family == "alpine" else "glibc", m.family)
    for m in SYSTEM_MANAGERS.values()
)


def planned_actions(recipe: Recipe) -> dict[str, bool]:
    """Each action of ``recipe`` → whether the planner plans it on every standard
    platform where one of its steps serves (at ``STAND_IN``; a GitHub release stood in
    by one asset per pattern, a bottle by a made-up blob). An action serving nowhere
    there (a platform the metadata rules out) is not counted. Linux/amd64 is also
    planned once per Linux family (musl for alpine), where the system package steps
    (``apt_install``, ``apk_install``, ...) serve."""
    out: dict[str, bool] = {}
    for target in (*STANDARD_PLATFORMS, *FAMILY_PLATFORMS):
        try:
            check_platform(recipe, target)
        except UnsupportedPlatform:  # the recipe rules the platform out: nothing to plan
            continue
        selected = matching_steps(recipe, target, STAND_IN.version)
        if not selected:
            continue
        assets: list[str] = []
        bottles: dict[int, BottleRef] = {}
        for index, step in selected:
            if isinstance(step, GitHubArchiveStep | GitHubFileStep):
                os_name, arch = mapped(step, target)
                name = expand(step.asset_pattern, version=STAND_IN.version, os=os_name, arch=arch)
                assets.append(_matching_name(name))
            elif isinstance(step, HomebrewStep):
                bottles[index] = BottleRef(
                    formula=step.formula,
                    pkg_version=STAND_IN.version,
                    platform_tag="stand_in",
                    url=f"https://ghcr.test/{step.formula}",
                    sha256="0" * 64,
                )
        plan = plan_recipe(
            recipe, STAND_IN, target, install_dir="{install_dir}", assets=assets, bottles=bottles
        )
        whole = any(gap.index is None for gap in plan.unsupported)
        gaps = {gap.index for gap in plan.unsupported}
        for index, step in selected:
            ok = not whole and index not in gaps
            out[step.action] = out.get(step.action, True) and ok
    return out


def default_registry() -> Path:
    shared = Path(os.environ.get("TSUKU_SHARED") or REPO.parent / "shared")
    return shared / "fixtures" / "tsuku-recipes"


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("registry", nargs="?", type=Path, default=None)
    ap.add_argument("--show", type=int, default=10, help="rows per breakdown")
    ap.add_argument("--quick", action="store_true", help="accepted for run_all; no effect")
    ap.add_argument(
        "--no-install", action="store_true", help="plan only: install nothing against the fakes"
    )
    args = ap.parse_args(argv)
    root: Path = args.registry or default_registry()
    if not root.is_dir():
        print(f"registry_coverage: {root} is not a directory", file=sys.stderr)
        return 2
    paths = sorted(root.rglob("*.toml"))
    report = measure(paths)
    if not args.no_install:
        from bench._coverage_installs import measure_installs

        recipes = []
        for path in paths:
            try:
                recipes.append(load_recipe(path))
            except RecipeParseError:
                continue
        report.installs = measure_installs(recipes, host_platform())
    print("\n".join(report.lines(args.show)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
