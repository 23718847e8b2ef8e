"""Version order: semver precedence for pre-releases (numeric identifiers compare as
numbers, a release is newer than its pre-releases), checked on examples and as
properties over generated versions."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tsukud.recipe.version_range import compare_versions, in_range, sort_key


@pytest.mark.parametrize(
    ("older", "newer"),
    [
        ("1.2.3-rc9", "1.2.3-rc10"),
        ("2.0.0-beta.2", "2.0.0-beta.11"),
        ("1.2.3-rc1", "1.2.3"),
        ("1.0.0-alpha", "1.0.0-alpha.1"),
        ("1.0.0-alpha.1", "1.0.0-alpha.beta"),
        ("1.0.0-alpha.beta", "1.0.0-beta"),
        ("1.0.0-beta", "1.0.0-beta.2"),
        ("1.0.0-beta.11", "1.0.0-rc.1"),
        ("1.0.0-rc.1", "1.0.0"),
        ("1.0.0-1", "1.0.0-alpha"),
        ("1.9.9", "1.10.0"),
    ],
)
def test_semver_precedence_examples(older: str, newer: str) -> None:
    assert compare_versions(older, newer) == -1
    assert compare_versions(newer, older) == 1


def test_build_metadata_and_trailing_zeros_do_not_count() -> None:
    assert compare_versions("1.0.0+build.5", "1.0.0") == 0
    assert compare_versions("1.2", "1.2.0") == 0
    assert in_range("1.2.3-rc10", ">1.2.3-rc9, <1.2.3")


core = st.lists(st.integers(0, 30), min_size=1, max_size=4).map(lambda ns: ".".join(map(str, ns)))
identifier = st.one_of(
    st.integers(0, 200).map(str), st.sampled_from(["alpha", "beta", "rc", "pre", "dev"])
)
pre = st.lists(identifier, min_size=1, max_size=3).map(lambda ids: "-" + ".".join(ids))
version = st.builds(lambda c, p: c + p, core, st.one_of(st.just(""), pre))


@given(version, version)
def test_antisymmetric(a: str, b: str) -> None:
    assert compare_versions(a, b) == -compare_versions(b, a)


@given(version, version, version)
def test_transitive(a: str, b: str, c: str) -> None:
    if compare_versions(a, b) <= 0 and compare_versions(b, c) <= 0:
        assert compare_versions(a, c) <= 0


@given(core, pre)
def test_a_release_is_newer_than_each_of_its_pre_releases(release: str, suffix: str) -> None:
    assert compare_versions(release + suffix, release) == -1


@given(core, st.sampled_from(["alpha", "beta", "rc"]), st.integers(0, 10**6), st.integers(0, 10**6))
def test_numeric_pre_release_parts_compare_as_numbers(
    release: str, label: str, m: int, n: int
) -> None:
    expected = (m > n) - (m < n)
    assert compare_versions(f"{release}-{label}.{m}", f"{release}-{label}.{n}") == expected
    assert compare_versions(f"{release}-{label}{m}", f"{release}-{label}{n}") == expected


@given(version, version, st.sampled_from(["", "v", "V"]), st.sampled_from(["", "v", "V"]))
def test_a_leading_v_is_not_part_of_the_version(a: str, b: str, pa: str, pb: str) -> None:
    assert compare_versions(pa + a, pb + b) == compare_versions(a, b)


def test_a_leading_v_keeps_numeric_pre_release_order() -> None:
    assert compare_versions("v1.2.3-rc10", "v1.2.3-rc9") == 1
    assert compare_versions("V1.10.0", "v1.9.9") == 1


@given(st.lists(version, min_size=1, max_size=8))
def test_sorting_agrees_with_pairwise_comparison(versions: list[str]) -> None:
    ordered = sorted(versions, key=sort_key)
    for earlier, later in itertools.pairwise(ordered):
        assert compare_versions(earlier, later) <= 0
