"""The ``ci`` profile keeps every count the suite's guarantees were set with; ``dev`` is
chosen only where the run is not a full one."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
from hypothesis import settings

from tests import hypothesis_profiles as hp
from tests.integration import test_rpc_hostile_socket


@pytest.fixture
def restore_profile() -> Iterator[None]:
    before = settings.get_current_profile_name()
    yield
    settings.load_profile(before)


@pytest.mark.parametrize(
    ("env", "profile"),
    [
        ({"CI": "true"}, hp.CI),
        ({"CI": "TRUE"}, hp.CI),
        ({"TSUKU_TEST_ALL": "1"}, hp.CI),
        ({}, hp.DEV),
        ({"CI": "false"}, hp.DEV),
        ({"TSUKU_HYPOTHESIS_PROFILE": "ci"}, hp.CI),
        ({"CI": "true", "TSUKU_HYPOTHESIS_PROFILE": "dev"}, hp.DEV),
    ],
)
def test_the_profile_follows_the_run(
    monkeypatch: pytest.MonkeyPatch, env: dict[str, str], profile: str
) -> None:
    for name in ("CI", "TSUKU_TEST_ALL", "TSUKU_HYPOTHESIS_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert hp.chosen() == profile


def test_ci_keeps_every_count_and_dev_runs_a_fifth(restore_profile: None) -> None:
    settings.load_profile(hp.CI)
    assert settings.default.max_examples == 100  # hypothesis's own default, as before
    assert [hp.examples(n) for n in (25, 400, 2000)] == [25, 400, 2000]
    settings.load_profile(hp.DEV)
    assert settings.default.max_examples == 20
    assert [hp.examples(n) for n in (5, 25, 400, 2000)] == [5, 10, 80, 400]


def test_the_slow_set_still_sends_100k_hostile_frames() -> None:
    """The profile never touches the slow set's bar (only TSUKU_HOSTILE_CASES lowers it,
    for a quick run by hand)."""
    m = test_rpc_hostile_socket
    bar = int(os.environ.get("TSUKU_HOSTILE_CASES", "100000"))
    assert bar == m.CASES
    assert m.SHARD_CASES * m.SHARDS >= m.CASES
