"""The event catalogue: every type the daemon writes has a Struct, the docs list the same
set with the same fields, and payloads are checked on the way in but read leniently."""

from __future__ import annotations

import re
from pathlib import Path

import msgspec
import pytest

from tsukud.errors import InternalError
from tsukud.events import catalogue
from tsukud.events.catalogue import EVENTS, BudgetSettled, InstallCompleted, check, read

REPO = Path(__file__).resolve().parents[3]


def _documented() -> dict[str, set[str]]:
    """docs/events.md's Types table: type → fields (``name?`` when it may be absent)."""
    text = (REPO / "docs" / "events.md").read_text()
    table = text[text.index("## Types") :]
    out: dict[str, set[str]] = {}
    for line in table.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 3 or not cells[0].startswith("`"):
            continue
        # Parentheses explain a field (its values, its meaning): not field names.
        fields = set(re.findall(r"`([a-z0-9_]+\??)`", re.sub(r"\([^)]*\)", "", cells[1])))
        for type_ in re.findall(r"`([a-z_]+\.[a-z_*]+)`", cells[0]):
            assert type_ not in out, f"{type_} is documented twice"
            out[type_] = fields
    return out


def _declared(cls: type[catalogue.Payload]) -> set[str]:
    return {f.encode_name + ("" if f.required else "?") for f in msgspec.structs.fields(cls)}


def test_docs_list_every_type_and_nothing_else() -> None:
    documented = set(_documented())
    assert documented == set(EVENTS) | {"client.*"}


def test_docs_give_each_type_exactly_its_fields_and_which_may_be_absent() -> None:
    documented = _documented()
    for type_, cls in EVENTS.items():
        assert documented[type_] == _declared(cls), type_


def test_every_type_name_is_a_dotted_lowercase_name() -> None:
    for type_ in EVENTS:
        assert re.fullmatch(r"[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)+", type_), type_
        assert not catalogue.is_client(type_)


@pytest.mark.parametrize(
    ("type_", "payload", "says"),
    [
        ("nope.never", {}, "not in the event catalogue"),
        ("budget.reserved", {"reservation": "r-1", "day": "2026-11-23"}, "amount_usd"),
        (
            "budget.reserved",
            {"reservation": "r-1", "day": "2026-11-23", "amount_usd": "lots"},
            "Expected `float`, got `str`",
        ),
        ("llm.turn", {"provider": "claude", "costusd": 0.1}, "unknown field(s) ['costusd']"),
        ("confirmation.granted", {"reason": "maybe"}, "reason"),
        ("provider.failover", {"from_": "a", "to": "b", "reason": "r"}, "from_"),
    ],
)
def test_check_refuses_what_does_not_fit(type_: str, payload: dict[str, object], says: str) -> None:
    with pytest.raises(InternalError) as e:
        check(type_, payload)
    assert says in e.value.message
    assert e.value.code == "internal"


def test_check_accepts_real_payloads_and_any_client_payload() -> None:
    check("provider.failover", {"from": "claude", "to": "gemini", "reason": "open"})
    check("budget.settled", {"reservation": "r-1", "actual_usd": 0})  # int for float: fine
    check("sandbox.lock_released", {})
    check("client.note", {"anything": [1, {"goes": None}]})
    check("client.x.y", {})


def test_read_ignores_unknown_fields_and_fills_defaults() -> None:
    # A row an earlier version wrote: an extra key, and without the later `reserved_usd`.
    old = {"reservation": "r-1", "actual_usd": 0.25, "legacy": True}
    s = read(old, BudgetSettled)
    assert (s.reservation, s.actual_usd, s.day, s.reserved_usd) == ("r-1", 0.25, None, None)


def test_read_refuses_a_row_missing_what_readers_need() -> None:
    with pytest.raises(msgspec.ValidationError, match="binaries"):
        read({"tool": "jq", "version": "1.7"}, InstallCompleted)
