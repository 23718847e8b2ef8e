"""A hidden toolchain's life (``install/hidden.py``), the pure rules over the
installed-tools projection: which toolchains a ``remove`` takes with it (tsuku's
orphaned implicit dependencies: never one the user installed by name, never one another
tool still uses, never one the removed tool did not use) and the refusal of another
version of a hidden toolchain asked for by name while tools run on it."""

from __future__ import annotations

from typing import Any

import pytest

from tsukud.install.hidden import orphaned, refuse_replacing, users
from tsukud.install.homebrew.errors import DependencyInUse


def projection(**tools: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {
        name: {"version": "1.0.0", "install_dir": f"/t/{name}-1.0.0", **rec}
        for name, rec in tools.items()
    }


NODE = {"hidden": True}
ON_NODE = {"runtime_dependencies": ["nodejs"], "toolchains": ["nodejs"]}


def test_the_last_tool_on_a_hidden_toolchain_takes_it_with_it() -> None:
    alone = projection(nodejs=NODE, greet=ON_NODE, jq={})
    assert orphaned(alone, "greet") == [("nodejs", "greet")]
    assert users(alone, "nodejs") == ["greet"]
    # another tool still runs on it: it stays until that one goes too
    shared = projection(nodejs=NODE, greet=ON_NODE, wave=ON_NODE)
    assert orphaned(shared, "greet") == []
    assert orphaned({k: v for k, v in shared.items() if k != "greet"}, "wave") == [
        ("nodejs", "wave")
    ]


def test_a_toolchain_the_user_installed_by_name_is_never_removed_with_its_tools() -> None:
    # asked for by name (before or after): its record carries no hidden mark
    mine = projection(nodejs={}, greet=ON_NODE)
    assert orphaned(mine, "greet") == []


def test_an_unrelated_remove_touches_no_toolchain() -> None:
    # an orphan already (its tool's install failed): not jq's to remove
    stray = projection(nodejs=NODE, jq={})
    assert orphaned(stray, "jq") == []
    assert orphaned(stray, "not-installed") == []


def test_a_toolchain_needed_only_to_build_goes_with_the_last_tool_built_with_it() -> None:
    # rust is no runtime dependency of a crate's tool, but its install ran cargo from it
    built = projection(rust=NODE, rg={"toolchains": ["rust"]}, fd={"toolchains": ["rust"]})
    assert users(built, "rust") == ["fd", "rg"]
    assert orphaned(built, "rg") == []
    assert orphaned({k: v for k, v in built.items() if k != "fd"}, "rg") == [("rust", "rg")]


def test_a_hidden_toolchain_still_a_dependency_of_another_tool_stays() -> None:
    # another recipe names nodejs as a runtime dependency, or was built against it
    needed = projection(nodejs=NODE, greet=ON_NODE, other={"runtime_dependencies": ["nodejs"]})
    assert orphaned(needed, "greet") == []
    built = projection(nodejs=NODE, greet=ON_NODE, b={"build": {"dependencies": {"nodejs": "/"}}})
    assert orphaned(built, "greet") == []


def test_a_toolchains_own_hidden_toolchain_goes_with_it_after_it() -> None:
    chain = projection(
        greet={"toolchains": ["nodejs"]},
        nodejs={"hidden": True, "toolchains": ["python-standalone"]},
        **{"python-standalone": NODE},
    )
    assert orphaned(chain, "greet") == [("nodejs", "greet"), ("python-standalone", "nodejs")]


def refusal(installed: dict[str, dict[str, Any]], *, by_name: bool) -> DependencyInUse:
    """The refusal of nodejs 1.1.0 over the hidden 1.0.0 in ``installed``."""
    with pytest.raises(DependencyInUse) as caught:
        refuse_replacing(installed, "nodejs", "1.1.0", by_name=by_name)
    return caught.value


def test_a_newer_release_asked_for_by_name_is_refused_while_a_tool_runs_on_the_hidden_one() -> None:
    on_it = projection(nodejs=NODE, greet=ON_NODE)
    exc = refusal(on_it, by_name=True)
    assert exc.message == (
        "nodejs 1.0.0 is installed as the toolchain greet runs on (/t/nodejs-1.0.0); "
        "installing nodejs 1.1.0 would delete it"
    )
    assert exc.hint is not None
    assert "`tsukuctl install nodejs@1.0.0`" in exc.hint  # keeps greet running
    assert "`tsukuctl remove greet`" in exc.hint and "they run" not in exc.hint
    # the same version (installed again, linked), a visible one (the homebrew rule's
    # business), one nothing runs on, and a first install are not this refusal
    refuse_replacing(on_it, "nodejs", "1.0.0", by_name=True)
    refuse_replacing(projection(nodejs={}, greet=ON_NODE), "nodejs", "1.1.0", by_name=True)
    refuse_replacing(projection(nodejs=NODE), "nodejs", "1.1.0", by_name=True)
    refuse_replacing(projection(greet=ON_NODE), "nodejs", "1.1.0", by_name=True)


def test_upgrading_a_hidden_toolchain_tools_run_on_is_refused_in_its_own_words() -> None:
    """``upgrade nodejs`` (or ``--all``) keeps it hidden, and would delete the directory
    greet's wrapper runs node from: refused saying so, not as a library dependency
    ("their binaries load its libraries"), with how to move greet to the new one."""
    on_it = projection(nodejs=NODE, greet=ON_NODE, wave=ON_NODE)
    exc = refusal(on_it, by_name=False)
    assert exc.message == (
        "nodejs 1.0.0 is the hidden toolchain greet, wave run on: their commands run "
        "nodejs's programs from /t/nodejs-1.0.0, which upgrading nodejs to 1.1.0 would delete"
    )
    assert "libraries" not in exc.message + exc.hint
    assert exc.hint == (
        "To move greet, wave to nodejs 1.1.0: `tsukuctl remove greet wave` (removes the "
        "hidden nodejs with them), then `tsukuctl install greet wave`: they run on the "
        "newest nodejs, installed for them again. Until then nodejs 1.0.0 stays and "
        "greet, wave keep working."
    )
    assert exc.data["needed_by"] == ["greet", "wave"]
    # the same version, and a hidden one nothing runs on (rust for a crate), upgrade freely
    refuse_replacing(on_it, "nodejs", "1.0.0", by_name=False)
    refuse_replacing(
        projection(rust=NODE, rg={"toolchains": ["rust"]}), "rust", "2.0", by_name=False
    )
