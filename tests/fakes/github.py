"""The fixture world for tests: the fake GitHub (``tsukud.testing.github``) filled with
the shared reference data's recorded releases (:mod:`tests.shared`) and synthesised
releases for every human-written recipe.

The fake itself lives in the package (``tsukud.testing``, like ``trio.testing``) because
``tsukuctl demo`` serves it too; what needs the shared data stays here.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

from tests.shared import RECIPES as RECIPES_DIR
from tests.shared import RELEASES as RELEASES_DIR
from tests.shared import SHARED, require
from tsukud.testing.github import (  # re-exported for the tests
    NOT_FOUND,
    RATE_LIMIT_BODY,
    FakeGitHub,
    Override,
    Req,
)

__all__ = [
    "DEFAULT_VERSIONS",
    "FIXTURE_VERSIONS",
    "NOT_FOUND",
    "RATE_LIMIT_BODY",
    "RECIPES_DIR",
    "RELEASES_DIR",
    "SHARED",
    "FakeGitHub",
    "Override",
    "Req",
    "fixture_recipe_paths",
    "fixture_world",
    "iter_fixture_recipes",
]

# Versions synthesised for each fixture recipe (oldest first). age and stern use their
# real version numbers; the rest share a plausible history. Each repo also gets a newer
# prerelease and a newer draft, which "latest" must skip.
FIXTURE_VERSIONS: dict[str, list[str]] = {
    "age": ["1.1.1", "1.2.0", "1.2.1"],
    "stern": ["1.30.0", "1.31.0", "1.32.0"],
    "liberica": ["21.0.4", "21.0.5"],
}
DEFAULT_VERSIONS = ["2.3.0", "2.4.1", "2.5.0"]


def fixture_recipe_paths() -> list[Path]:
    """The human-written recipes; none when the shared data is missing (a test
    parametrised over none is skipped, which fails in CI)."""
    return sorted(RECIPES_DIR.glob("*/*.toml"))


def fixture_world(fake: FakeGitHub | None = None) -> FakeGitHub:
    """The recorded releases, synthesised releases for every fixture recipe, and the
    fixture recipes in the registry."""
    from tsukud.recipe import load_recipe, version_source
    from tsukud.testing.releases import recipe_repo, recorded_repo

    fake = fake or FakeGitHub()
    for path in sorted(require(RELEASES_DIR).glob("*.json")):
        fake.add_repo(recorded_repo(path))
    # gitleaks' recipe still names the old repository; GitHub redirects it.
    fake.aliases["zricethezav/gitleaks"] = "gitleaks/gitleaks"
    for path in fixture_recipe_paths():
        recipe = load_recipe(path)
        name = recipe.metadata.name
        fake.add_recipe(name, path.read_text())
        repo = version_source(recipe).repo
        if repo.lower() in fake.repos or repo.lower() in fake.aliases:
            continue
        versions = FIXTURE_VERSIONS.get(name, DEFAULT_VERSIONS)
        major, minor, _patch = [*versions[-1].split("."), "0", "0"][:3]
        newer = f"{major}.{int(minor) + 1}.0"
        fake.add_repo(
            recipe_repo(
                recipe,
                versions,
                prerelease=[f"{newer}-rc.1"],
                draft=[f"{major}.{int(minor) + 2}.0"],
            )
        )
    return fake


def iter_fixture_recipes() -> Iterator[tuple[str, Path]]:
    for path in fixture_recipe_paths():
        yield path.stem, path


def main() -> None:
    """``python -m tests.fakes.github``: serve the fixture world until interrupted and
    print the environment that points tsukud at it."""
    import signal
    import sys

    fake = fixture_world().start()
    for key, value in fake.env().items():
        print(f"export {key}={value}", flush=True)
    print(f"# fake GitHub serving {len(fake.repos)} repositories; Ctrl-C stops it", file=sys.stderr)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    try:
        while not stop.wait(0.5):  # a bare wait() would not see the signal
            pass
    except KeyboardInterrupt:
        pass
    finally:
        fake.close()


if __name__ == "__main__":
    main()
