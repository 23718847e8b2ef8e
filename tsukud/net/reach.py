"""What was out of reach, in a person's words: the service, its URL and its setting.

Offline, behind a firewall, or with a setting pointing at the wrong place, a person
needs to know which service could not be reached and what points there: the setting
and its variable, since that is what they change (or they wait for the network).
Every command says it the same way, whichever client met the failure
(``HttpUnreachable.at``, the LLM service, discovery's sources together), so the words
are built here once. Pure: plain values in, text and wire data out.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, NamedTuple


class Place(NamedTuple):
    """A service tried: ``endpoint`` in a person's words ("recipe registry"), ``base``
    its URL, ``setting`` the setting that configures it ("" when the URL came from
    elsewhere: a recipe, a page)."""

    endpoint: str
    base: str
    setting: str = ""


def setting_names(setting: str) -> str:
    """A URL setting as a person sets it: its key and, when it has one, its variable
    (``registry.url (TSUKU_REGISTRY_URL)``)."""
    from tsukud.config import KEYS  # core, as this module; read only to name a setting

    key = KEYS.get(setting)
    return f"{setting} ({key.env[0]})" if key is not None and key.env else setting


def offline_hint(what: str, fix: str) -> str:
    """The hint of everything out of reach: offline, a proxy, or the setting."""
    return (
        f"Offline? {what} cannot be reached, and trying again would not help. Check the "
        f"network connection or the proxy (HTTPS_PROXY), or {fix}."
    )


def described(place: Place) -> str:
    """``the recipe registry https://…, set by registry.url (TSUKU_REGISTRY_URL),``"""
    named = f", set by {setting_names(place.setting)}," if place.setting else ""
    return f"the {place.endpoint} {place.base}{named}"


def hint_for(places: Sequence[Place]) -> str:
    """The offline hint naming every place tried and the settings that point there."""
    what = " and ".join(dict.fromkeys(f"the {p.endpoint} {p.base}" for p in places))
    settings = list(dict.fromkeys(setting_names(p.setting) for p in places if p.setting))
    fix = (
        f"point {' or '.join(settings)} at a server you can reach" if settings else "check that URL"
    )
    return offline_hint(what[:1].upper() + what[1:], fix)


def as_data(places: Iterable[Place]) -> list[dict[str, str]]:
    """The places as an error's ``data.places`` (schema/rpc.md, ``network_unreachable``)."""
    return [p._asdict() for p in places]


def places_in(data: Mapping[str, Any]) -> list[Place]:
    """The places an error's data names (none when it was not placed)."""
    return [Place(**p) for p in data.get("places") or ()]
