"""The suite's order for pytest-xdist (tests/scheduling.py): the long tests dealt in
turn to the heads of worksteal's shares, nothing lost or repeated."""

from __future__ import annotations

from collections.abc import Callable

from tests.scheduling import LONG, deal, rank, shares


def _rank(long: dict[int, int]) -> Callable[[int], int]:
    return lambda i: long.get(i, 2)


def test_the_long_tests_head_each_workers_share_slow_first() -> None:
    items = list(range(30))
    long = {5: 0, 25: 1, 28: 1, 12: 1}  # 5 is slow; 12, 25 and 28 are long
    out = deal(items, 3, _rank(long))
    assert sorted(out) == items  # a reordering: nothing lost, nothing twice
    assert shares(30, 3) == [10, 10, 10]
    first, second, third = out[:10], out[10:20], out[20:]
    assert (first[:2], second[:1], third[:1]) == ([5, 28], [12], [25])
    # Each share is then filled with the rest, in the collection's order.
    rest = [i for i in out if i not in long]
    assert rest == [i for i in items if i not in long]
    assert first[2:] == rest[:8] and second[1:] == rest[8:17] and third[1:] == rest[17:]


def test_uneven_shares_are_those_xdist_hands_out() -> None:
    assert shares(11, 3) == [3, 4, 4] and sum(shares(3082, 3)) == 3082
    out = deal(list(range(11)), 3, _rank({10: 1}))
    assert out[:3] == [10, 0, 1] and sorted(out) == list(range(11))


def test_more_long_tests_than_a_share_holds_are_all_kept() -> None:
    out = deal(list(range(6)), 2, _rank(dict.fromkeys(range(5), 1)))
    assert sorted(out) == list(range(6)) and out[:3] == [0, 2, 4]


def test_serially_the_long_tests_simply_come_first() -> None:
    assert deal([1, 2, 3, 4], 1, _rank({3: 1, 4: 0})) == [4, 3, 1, 2]


def test_rank_slow_then_listed_then_the_rest() -> None:
    listed = LONG[0] + "test_x.py::test_y"
    assert rank(listed, slow=True) == 0
    assert rank(listed, slow=False) == 1
    assert rank("tests/unit/test_other.py::test_z", slow=False) == 2
