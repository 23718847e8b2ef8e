"""``tsukuctl list`` of a hidden toolchain (nodejs installed for an npm tool): nothing
of it is linked into bin/, so its row claims no commands on PATH and says what it is,
in ``list --json`` (``toolchain_for``) and in the table."""

from __future__ import annotations

from typing import Any

from tsukuctl.install_commands import commands_shown
from tsukud.install.layout import installed_rows

NODE = {"node": {}, "npm": {}, "npx": {}}


def projection(**tools: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {name: {"version": "1.0.0", **rec} for name, rec in tools.items()}


def test_a_hidden_toolchain_claims_no_binaries_and_names_the_tools_on_it() -> None:
    rows = installed_rows(
        projection(
            nodejs={"binaries": NODE, "hidden": True},
            greet={"binaries": {"greet": {}}, "runtime_dependencies": ["nodejs"]},
            wave={"binaries": {"wave": {}}, "runtime_dependencies": ["nodejs"]},
            rust={"binaries": {"cargo": {}}, "hidden": True},  # needed only to build
        )
    )
    by = {r["tool"]: r for r in rows}
    assert (by["nodejs"]["binaries"], by["nodejs"]["toolchain_for"]) == ([], ["greet", "wave"])
    assert (by["rust"]["binaries"], by["rust"]["toolchain_for"]) == ([], [])
    assert by["greet"]["binaries"] == ["greet"] and "toolchain_for" not in by["greet"]
    assert [commands_shown(by[t]) for t in ("nodejs", "rust", "greet")] == [
        "(toolchain for greet, wave)",
        "(toolchain, not on PATH)",
        "greet",
    ]


def test_a_toolchain_asked_for_by_name_is_a_tool_like_any() -> None:
    # installed again by name it is linked and its record no longer says hidden
    (row,) = installed_rows(projection(nodejs={"binaries": NODE}))
    assert row["binaries"] == ["node", "npm", "npx"] and "toolchain_for" not in row
    assert commands_shown(row) == "node, npm, npx"


def test_a_toolchain_needed_only_to_build_names_the_tools_installed_with_it() -> None:
    # rust is no runtime dependency of a crate's tool; its install ran cargo from it, and
    # its removal takes rust with it (install/hidden.py), so list names it
    rows = installed_rows(
        projection(rust={"binaries": {"cargo": {}}, "hidden": True}, rg={"toolchains": ["rust"]})
    )
    assert commands_shown({r["tool"]: r for r in rows}["rust"]) == "(toolchain for rg)"
