"""Nothing dropped: a full run collects at least the number of tests kept in
``tests/collected_floor.txt``, or it fails.

A test that vanishes (a module that no longer imports its cases, an empty
parametrisation, a renamed fixture directory, a marker that deselects too much) passes
nothing and fails nothing: only a count can see it. Every run prints how many tests it
collected; a *full* run (no paths, ``-k``, ``-m`` or ``--deselect`` narrowing it)
compares that with the floor and fails the session when fewer were collected. Raise the
floor in the same commit that adds tests; lower it only in a commit that says which
tests went and why.

Under pytest-xdist the workers collect and the controller, which prints the summary and
decides the exit status, learns the count from ``pytest_xdist_node_collection_finished``.
``tests/conftest.py`` installs these hooks.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

FLOOR_FILE = Path("tests") / "collected_floor.txt"
_COUNT = pytest.StashKey[int]()
_DROPPED = pytest.StashKey[str]()


def is_worker(config: pytest.Config) -> bool:
    return hasattr(config, "workerinput")


def floor(config: pytest.Config) -> int | None:
    """The floor kept in the repository (None where there is none: a child pytest)."""
    path = config.rootpath / FLOOR_FILE
    if not path.is_file():
        return None
    return int(path.read_text().split("#", 1)[0].strip())


def is_full_run(config: pytest.Config) -> bool:
    """Whether nothing narrowed the run: no paths but the test root, no ``-k``, ``-m``,
    ``--deselect``, ``--lf``/``--ff``-style selection."""
    o = config.option
    narrowed = (
        getattr(o, "keyword", "")
        or getattr(o, "markexpr", "")
        or getattr(o, "deselect", None)
        or getattr(o, "lf", False)
        or getattr(o, "last_failed_no_failures", "all") != "all"
    )
    if narrowed:
        return False
    roots = {config.rootpath.resolve(), (config.rootpath / "tests").resolve()}
    return all(Path(a.split("::")[0]).resolve() in roots for a in config.args)


def _counted(config: pytest.Config, count: int) -> None:
    if _COUNT in config.stash:
        return
    config.stash[_COUNT] = count
    bar = floor(config)
    if bar is not None and count < bar and is_full_run(config):
        config.stash[_DROPPED] = (
            f"{count} tests collected, fewer than the floor of {bar} in {FLOOR_FILE}: "
            "tests were dropped. Find what stopped being collected; lower the floor only "
            "in a commit that says which tests went and why."
        )


def pytest_collection_finish(session: pytest.Session) -> None:
    if not is_worker(session.config):
        _counted(session.config, len(session.items))


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_node_collection_finished(node: Any, ids: list[str]) -> None:
    _counted(node.config, len(ids))


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    if _DROPPED in session.config.stash and exitstatus == pytest.ExitCode.OK:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    count = config.stash.get(_COUNT, None)
    if count is None:
        return
    bar = floor(config)
    line = f"collected {count} tests"
    if bar is not None:
        line += f" (floor {bar}, {FLOOR_FILE}; compared in a full run only)"
    terminalreporter.write_line(line)
    if _DROPPED in config.stash:
        terminalreporter.section("tests dropped")
        terminalreporter.line(config.stash[_DROPPED])
