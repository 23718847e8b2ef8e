"""The pure judgement of anchors (``events/anchors.py``): which anchored heads a chain
no longer passes through."""

from __future__ import annotations

from tsukud.events import anchors, catalogue
from tsukud.events.anchors import AnchoredHead


def head(seq: int, found: str | None, last: int, h: str = "aa" * 32) -> AnchoredHead:
    return AnchoredHead("host-a", 7, "host-b", seq, h, found, last)


def test_heads_payload_fits_the_catalogue_and_leaves_out_empty_chains() -> None:
    payload = anchors.heads_payload([("b", 3, "h3"), ("a", 0, "0" * 64), ("c", 1, "h1")])
    assert payload == {
        "heads": [{"origin": "b", "seq": 3, "hash": "h3"}, {"origin": "c", "seq": 1, "hash": "h1"}]
    }
    catalogue.check(anchors.EVENT_TYPE, payload)


def test_an_intact_chain_passes_every_anchor() -> None:
    assert anchors.check([head(5, "aa" * 32, 9), head(9, "aa" * 32, 9)]) is None


def test_a_chain_cut_below_an_anchored_head_names_origin_seq_and_anchor() -> None:
    bad = anchors.check([head(5, "aa" * 32, 9), head(12, None, 9)])
    assert bad is not None and bad.origin == "host-b" and bad.head.seq == 12
    assert bad.damage.lost == (10, 12) and bad.damage.first_bad_id == 10
    assert "host-a's event 7" in bad.damage.reason


def test_a_chain_rewritten_at_an_anchored_head_is_found() -> None:
    bad = anchors.check([head(5, "bb" * 32, 9)])
    assert bad is not None and bad.damage.first_bad_id == 5
    assert "rewritten" in bad.damage.reason
