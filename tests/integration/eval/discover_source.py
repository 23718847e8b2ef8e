"""The builtin discovery corpus, derived from the shared fixtures: each human recipe of
the create ground truth names its tool and the repository it comes from (where it
lives now: a repository the recorded release fixtures hold under another owner has
moved there, as gitleaks did from zricethezav, and GitHub redirects the old name), and
each recorded search response names the repository its results point to (the tool is
the repository's name). ``tsukud/eval/discover.json`` is this, written out (the package
cannot read ../shared from a wheel); a unit test fails while the two differ.

Regenerate: ``.venv/bin/python -m tests.integration.eval.discover_source``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.integration.create.helpers import load_human
from tests.integration.eval.corpus_source import recipe_paths
from tests.shared import RELEASES, SEARCH, require
from tests.unit.create.releases import repo_of

SHIPPED = Path(__file__).resolve().parents[3] / "tsukud" / "eval" / "discover.json"


def moved() -> dict[str, str]:
    """Repository name -> owner/name, for every recorded releases fixture."""
    out = {}
    for path in sorted(require(RELEASES).glob("*.json")):
        owner, name = path.stem.split("__", 1)
        out[name.lower()] = f"{owner}/{name}"
    return out


def searched() -> dict[str, str]:
    """Tool -> owner/repo: the first github.com repository each recorded successful
    search response links to."""
    import re

    found: dict[str, str] = {}
    for path in sorted(require(SEARCH).glob("*_success.*")):
        text = path.read_text()
        m = re.search(r"https://github\.com/([\w.-]+)/([\w.-]+)", text)
        if m:
            found.setdefault(m.group(2).lower(), f"{m.group(1)}/{m.group(2)}")
    return found


def build_corpus() -> dict[str, Any]:
    now = moved()
    items: dict[str, str] = {}
    for path in recipe_paths():
        human = load_human(path)
        repo = repo_of(human)
        items[human.metadata.name] = now.get(repo.split("/")[1].lower(), repo)
    for tool, repo in searched().items():
        items.setdefault(tool, repo)
    return {
        "format": 1,
        "name": "builtin-discover",
        "items": [{"tool": t, "source": f"github:{r}"} for t, r in sorted(items.items())],
    }


def corpus_text() -> str:
    return json.dumps(build_corpus(), indent=1, sort_keys=True) + "\n"


if __name__ == "__main__":
    SHIPPED.write_text(corpus_text())
    print(f"wrote {SHIPPED}")
