"""``eval discover``'s pure parts: a discovery's failure is a category the figures
name, the stand-in for a person answers as one who knows the right source, and a
replay's miss is found wherever an error wraps it."""

from __future__ import annotations

from pathlib import Path

import pytest
import trio

from tsukud.discover.errors import (
    DiscoveryAmbiguous,
    DiscoveryBudgetExceeded,
    DiscoveryDenied,
    DiscoveryNotFound,
    DiscoverySearchFailed,
    DiscoveryTimeout,
)
from tsukud.errors import ConfirmationRequired, TsukuError, UsageError
from tsukud.flows.eval_discover import StandIn, category_of
from tsukud.flows.eval_run import DiscoverOptions, EvalOptions, checked_options, replay_miss
from tsukud.llm.provider import ReplayMiss


@pytest.mark.parametrize(
    ("error", "category"),
    [
        (DiscoveryNotFound("x"), "not_found"),
        (DiscoveryAmbiguous("x"), "ambiguous"),
        (DiscoveryDenied("x"), "ambiguous"),
        (DiscoveryBudgetExceeded("x"), "stopped"),
        (DiscoverySearchFailed("x"), "outage"),
        (DiscoveryTimeout("x"), "outage"),
    ],
)
def test_a_failure_is_a_category(error: TsukuError, category: str) -> None:
    assert category_of(error) == category


def test_the_stand_in_says_yes_and_declines_a_choice() -> None:
    async def main() -> None:
        person = StandIn("github:stern/stern")
        await person.ask(ConfirmationRequired("Install stern from this source?"))
        assert person.asked == "confirm"
        offered = [{"kind": "github", "source": "Stern/Stern"}, {"kind": "npm", "source": "s"}]
        picked = await person.choose(ConfirmationRequired("which?"), offered)
        assert picked is None  # declined: discovery did not settle on one source
        assert (person.asked, person.offered_right) == ("choice", True)
        other = StandIn("github:stern/stern")
        await other.choose(ConfirmationRequired("which?"), offered[1:])
        assert other.offered_right is False

    trio.run(main)


def test_a_replay_miss_is_found_through_its_wrappers() -> None:
    miss = ReplayMiss("no recording for request abc", key="abc", closest=None, provider="claude")
    try:
        try:
            raise miss
        except ReplayMiss as e:
            raise TsukuError("the model could not be asked") from e
    except TsukuError as wrapped:
        group = ExceptionGroup("x", [wrapped])
    assert replay_miss(group) == "no recording for request abc"
    assert replay_miss(TsukuError("other")) is None


def test_a_replay_names_a_directory_of_recordings(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="absolute"):
        checked_options(EvalOptions(replay="rec"))
    with pytest.raises(UsageError, match="holds no recorded"):
        checked_options(EvalOptions(replay=str(tmp_path)))
    (tmp_path / "k.json").write_text(
        '{"key": "k", "provider": "gemini", "model": "m", "request": {}, "responses": []}'
    )
    checked_options(EvalOptions(replay=str(tmp_path)))
    checked_options(DiscoverOptions(max_usd=1.0))
