"""Hypothesis profiles: ``ci`` keeps the example counts the suite's guarantees were set
with; ``dev`` runs a fifth of them for a quick local run.

The profile is ``ci`` under ``CI=true`` or ``TSUKU_TEST_ALL=1`` (a full run is a full
run wherever it happens) and ``dev`` otherwise; ``TSUKU_HYPOTHESIS_PROFILE`` names one
explicitly. A profile only sets what a test leaves unsaid, so a test that needs a
number of examples for what it promises writes ``max_examples=examples(N)``: N in
``ci``, fewer in ``dev``. The slow set's 100,000 hostile frames are not hypothesis's:
they come from a seeded generator (tests/hostile_random.py), counted by the test itself
(tests/integration/test_rpc_hostile_socket.py), and run only where slow tests run.

``tests/conftest.py`` loads the profile before any test module is imported (settings
objects take their defaults from the profile loaded when they are made).
"""

from __future__ import annotations

import os

from hypothesis import settings

CI = "ci"
DEV = "dev"
DEV_SHARE = 5  # dev runs 1/DEV_SHARE of each count
DEV_FLOOR = 10  # and never fewer than this many examples

# Hypothesis's own defaults (100 examples, its deadline): what every test that names no
# count has always had in CI.
settings.register_profile(CI, settings())
settings.register_profile(DEV, max_examples=100 // DEV_SHARE)


def chosen() -> str:
    named = os.environ.get("TSUKU_HYPOTHESIS_PROFILE")
    if named:
        return named
    full = os.environ.get("CI", "").lower() == "true" or os.environ.get("TSUKU_TEST_ALL") == "1"
    return CI if full else DEV


def load() -> None:
    settings.load_profile(chosen())


def examples(n: int) -> int:
    """``n`` examples under ``ci``; a fifth of them (at least 10) under ``dev``."""
    if settings.get_current_profile_name() == DEV:
        return min(n, max(DEV_FLOOR, n // DEV_SHARE))
    return n
