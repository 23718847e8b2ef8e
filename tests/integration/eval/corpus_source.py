"""The builtin eval corpus, derived from the shared fixtures: every distinct human
recipe of the create ground truth (the 9 tools and llm-test-matrix.json), with the
assets it downloads on each standard platform at the newest release the fake world
gives it. ``tsukud/eval/corpus.json`` is this, written out (the package cannot read
../shared from a wheel); a unit test fails while the two differ.

Regenerate: ``.venv/bin/python -m tests.integration.eval.corpus_source``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.integration.create.helpers import ground_truth_cases, load_human, tags_for
from tests.unit.create.releases import expected_names, repo_of
from tsukud.recipe import STANDARD_PLATFORMS, normalize_version

SHIPPED = Path(__file__).resolve().parents[3] / "tsukud" / "eval" / "corpus.json"


def recipe_paths() -> list[str]:
    return sorted(set(ground_truth_cases().values()))


def build_corpus() -> dict[str, Any]:
    items = []
    for path in recipe_paths():
        human = load_human(path)
        tool = human.metadata.name
        tag = tags_for(tool)[0]
        items.append(
            {
                "tool": tool,
                "source": f"github:{repo_of(human)}",
                "version": normalize_version(tag),
                "assets": {
                    p.key: list(expected_names(human, tag, p) or []) for p in STANDARD_PLATFORMS
                },
            }
        )
    return {"format": 1, "name": "builtin", "items": items}


def corpus_text() -> str:
    return json.dumps(build_corpus(), indent=1, sort_keys=True) + "\n"


if __name__ == "__main__":
    SHIPPED.write_text(corpus_text())
    print(f"wrote {SHIPPED}")
