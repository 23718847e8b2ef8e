"""In CI (``CI=true``) a skipped test is a failed test, unless :data:`ALLOWED_SKIPS` says
why it can never run there.

A skip prints one line under ``-ra`` and the run still exits 0, so a suite can go green in
CI while whole areas (the sandbox, the shells, systemd, the shared fixtures) never ran.
This plugin acts on every skip, whatever raised it: ``pytest.skip`` in a test or fixture,
a ``skipif`` mark, a module-level skip, and the empty parametrisation pytest turns into a
skip when a parameter list comes out empty (e.g. a fixture directory that is missing).

``tests/conftest.py`` installs these hooks; a test of the policy loads this module as a
plugin (``-p tests.skip_policy``) in a child pytest.

Under pytest-xdist the hooks run in the workers and in the controller alike: a worker
turns a test's skip into a failure and marks the report (a user property, which travels
to the controller with it); the controller counts a marked report, and a skipped
module's collect report, and fails the session and names them. Only what the process
that prints the summary saw counts, so nothing is counted twice.
"""

from __future__ import annotations

import os
from collections.abc import Generator
from typing import Any

import pytest

# Test node ids (or a prefix ending in "::" or "/") allowed to skip in CI, each with the
# reason it can never run there. Empty: everything the suite needs is installed by
# `scripts/dev setup` (Docker, busybox-static, zsh, fish, shellcheck, systemd's tools,
# timeout, the ecosystems' toolchains) and CI runs as root (the peer-uid tests drop to
# nobody).
ALLOWED_SKIPS: dict[str, str] = {}

_CONVERTED_KEY = pytest.StashKey[dict[str, None]]()
# The user property a converted report carries (workers' reports reach the controller).
PROPERTY = "skipped_under_ci"


def in_ci() -> bool:
    return os.environ.get("CI", "").lower() == "true"


def allowed(nodeid: str) -> bool:
    return any(
        nodeid == key or (key.endswith(("::", "/")) and nodeid.startswith(key))
        for key in ALLOWED_SKIPS
    )


def skip_reason(report: pytest.TestReport | pytest.CollectReport) -> str:
    longrepr = report.longrepr
    if isinstance(longrepr, tuple) and len(longrepr) == 3:
        path, lineno, message = longrepr
        return f"{message} ({path}:{lineno})"
    return str(longrepr)


def _fail(report: pytest.TestReport) -> None:
    reason = skip_reason(report)
    report.outcome = "failed"
    report.longrepr = (
        f"skipped under CI=true, where no test may skip: {reason}\n"
        "Install what it needs (scripts/dev setup), or add it to ALLOWED_SKIPS in "
        "tests/skip_policy.py with the reason it can never run in CI."
    )
    # A new list: the report shares the item's, which later phases' reports reuse.
    report.user_properties = [*report.user_properties, (PROPERTY, f"{report.nodeid}: {reason}")]


def _record(config: pytest.Config, line: str) -> None:
    config.stash.setdefault(_CONVERTED_KEY, {})[line] = None


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, Any, None]:
    outcome = yield
    report: pytest.TestReport = outcome.get_result()
    # An xfail is reported as "skipped" too, with wasxfail set: it is not a skip.
    xfail = hasattr(report, "wasxfail")
    if report.skipped and not xfail and in_ci() and not allowed(item.nodeid):
        _fail(report)


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    """Count a converted skip where the report is logged (under xdist: the worker that
    ran it, and the controller it is sent to)."""
    for name, value in report.user_properties:
        if name == PROPERTY:
            _record(report_config(report), str(value))


def pytest_collectreport(report: pytest.CollectReport) -> None:
    """A skipped module stays reported as skipped (a failed collection would interrupt
    the whole run before any test ran) but fails the session in
    :func:`pytest_sessionfinish`."""
    if report.skipped and in_ci() and not allowed(report.nodeid):
        _record(report_config(report), f"{report.nodeid}: {skip_reason(report)}")


# Report hooks get no config: the innermost session's is the one running (pytester
# runs a session inside a test's).
_CONFIGS: list[pytest.Config] = []


def pytest_configure(config: pytest.Config) -> None:
    _CONFIGS.append(config)


def pytest_unconfigure(config: pytest.Config) -> None:
    if config in _CONFIGS:
        _CONFIGS.remove(config)


def report_config(_report: object) -> pytest.Config:
    return _CONFIGS[-1]


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    if session.config.stash.get(_CONVERTED_KEY, {}) and exitstatus == pytest.ExitCode.OK:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    converted = config.stash.get(_CONVERTED_KEY, {})
    if converted:
        terminalreporter.section("skips failed under CI=true")
        for line in converted:
            terminalreporter.line(line)
