"""``sandbox.max_concurrent``'s default is derived from the machine (CPUs and memory, at
a validation container's limits), computed in one place and shown with where it came
from; any explicit setting wins, and a spoiled file falls back to the derived value."""

from __future__ import annotations

from pathlib import Path

import pytest

from tsukud import config
from tsukud.config import (
    CONTAINER_CPUS,
    CONTAINER_MEMORY_BYTES,
    GiB,
    derive_max_concurrent,
    host_cpus,
    host_memory_bytes,
)
from tsukud.sandbox.runtime import RunSpec

KEY = "sandbox.max_concurrent"


@pytest.mark.parametrize(
    ("cpus", "memory", "expected"),
    [
        (2, 23 * GiB, 2),  # this kind of CI box: the cores bound it
        (16, 8 * GiB, 4),  # many cores, little memory: 2 GiB each
        (8, 3 * GiB, 1),  # less than two containers' worth of memory
        (1, 64 * GiB, 1),
        (4, None, 4),  # memory unknown: the cores alone
        (2, 1 * GiB, 1),  # never below one
    ],
)
def test_the_formula(cpus: int, memory: int | None, expected: int) -> None:
    value, source = derive_max_concurrent(cpus, memory)
    assert value == expected
    assert source.startswith(f"derived ({cpus} CPUs, ")
    assert ":" not in source  # `status` reads a colon as "kind:name"


def test_the_container_limits_are_the_sandboxs() -> None:
    spec = RunSpec(image="x", command=["true"])
    assert spec.memory_bytes == CONTAINER_MEMORY_BYTES
    assert spec.nano_cpus == CONTAINER_CPUS * 1_000_000_000


def test_unset_it_is_derived_and_says_so(tmp_path: Path) -> None:
    s = config.resolve(env={}, path=tmp_path / "none.toml").setting(KEY)
    expected = derive_max_concurrent(host_cpus(), host_memory_bytes())
    assert (s.value, s.source) == expected
    assert s.shown()["source"].startswith("derived (")


def test_an_explicit_setting_wins(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text("[sandbox]\nmax_concurrent = 7\n")
    path.chmod(0o600)
    assert config.resolve(env={}, path=path).setting(KEY).value == 7
    s = config.resolve(env={"TSUKU_SANDBOX_MAX_CONCURRENT": "1"}, path=path).setting(KEY)
    assert (s.value, s.source) == (1, "env:TSUKU_SANDBOX_MAX_CONCURRENT")
    caller = config.resolve(env={}, path=path).with_caller_env(
        {"TSUKU_SANDBOX_MAX_CONCURRENT": "3"}
    )
    assert caller[KEY] == 3


def test_a_spoiled_file_falls_back_to_the_derived_value(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text("[sandbox]\nmax_concurrent = 0\n")
    path.chmod(0o600)
    c = config.resolve(env={}, path=path)
    assert c.value_or_default(KEY) == derive_max_concurrent(host_cpus(), host_memory_bytes())[0]
