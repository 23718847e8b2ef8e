"""What a function returns is said by a Struct, not ``dict[str, Any]`` (issue 27, item 4).

Every ``tsukud`` module is parsed; a function (or method) whose return annotation is
``dict[str, Any]`` or ``dict[str, Any] | None`` must be listed in ``ALLOWED`` with why
its answer is free-form JSON by nature: a document written to TOML, the body of a
foreign wire format (an LLM SDK's payload, the Docker Engine API, the DevTools
protocol, a registry's JSON), a tool result whose shape is the model's, an event
payload (``append``/``Emit`` take a dict that ``catalogue.check`` holds to its Struct in
``events/catalogue.py``, the one place its shape is written), a shipped fake's document,
or a module the client shares (stdlib only: no msgspec). A few are listed because
another change owns their module this session; they say so.

The test fails when a new one appears outside the list and when a listed one is gone
(remove it: the list only ever shrinks), and ``CEILING`` holds the list's length.
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2] / "tsukud"

#: Return annotations that say nothing of what is returned.
UNTYPED = frozenset({"dict[str, Any]", "dict[str, Any] | None", "Optional[dict[str, Any]]"})

_TOML = "a TOML document's table, read or written"
_KWARGS = "keyword arguments spread into a call (LLM.run/estimate, an error's data)"
_EVENT = "an event payload: append/Emit take a dict, its Struct is in events/catalogue.py"
_MODEL = "a tool call's result handed to the model: its shape is the model's JSON"
_DOCKER = "the Docker Engine API's JSON (container config, version, inspect)"
_LLM = "an LLM SDK's request body or answer (llm/, s12-prov's this session)"
_FAKE = "a shipped fake's document in the real service's wire format"
_PLAN = "the installation plan's dict, built by recipe/plan.py (s12-toolchain's)"
_FRAME = "the RPC frame envelope, any answer inside (rpc/server.py's hot path, s12-perf's)"
_STDLIB = "a module the client shares: stdlib only, no msgspec"
_CONFIG = "config.get/set/list's answers: config.py is s12-prov's this session"
_REGISTRY = "a package registry's JSON document, read as it comes"
_INSTALLED = "install.completed's payload or a part of it (asset, relocation), or it folded"
_PARSED = "a search result's scratch record, filled while the HTML is parsed"
_PROGRESS = "a Progress frame: progress.py's callable takes a dict"
_STEP = "a step as the ledger and tools.info show it (recipe/model.py is s12-eco's)"
_DISCOVERY = (
    "discovery.verified's payload (its Struct: catalogue.DiscoveryVerified) and the open"
    " Discovery.metadata record the later stages add to (page, platform, approval)"
)

ALLOWED: dict[str, str] = {
    "tsukud.config:Setting.shown": _CONFIG,
    "tsukud.rpc.methods:config_get": _CONFIG,
    "tsukud.rpc.methods:config_set": _CONFIG,
    "tsukud.create.homebrew_builder:effective": "Homebrew's formula JSON with its variation",
    "tsukud.create.tools:tool_error": _MODEL,
    "tsukud.create.tools:listing_result": _MODEL,
    "tsukud.create.tools:RepoTools.call": _MODEL,
    "tsukud.create.tools:RepoTools.inspect_archive": _MODEL,
    "tsukud.create.tools:RepoTools._inspect": _MODEL,
    "tsukud.discover.chain:llm_allowance": _KWARGS,
    "tsukud.discover.chain:_probe_summary": _DISCOVERY,
    "tsukud.discover.present:metadata": _DISCOVERY,
    "tsukud.discover.present:_package_metadata": _DISCOVERY,
    "tsukud.discover.chromium:Session.send": "the DevTools protocol's answer",
    "tsukud.discover.llm_discovery:LLMDiscovery._search_started": _EVENT,
    "tsukud.discover.llm_discovery:LLMDiscovery._charged": _EVENT,
    "tsukud.discover.search:_DDGParser._new": _PARSED,
    "tsukud.errors:TsukuError.to_wire": _STDLIB,
    "tsukud.launch:FrameReader.read": _STDLIB + " (a decoded frame, any answer)",
    "tsukud.events.anchors:heads_payload": _EVENT,
    "tsukud.flows.batch_run:BatchRunner._frame": _PROGRESS,
    "tsukud.generation.loop:failure_data": _KWARGS,
    "tsukud.install.attempt:InstallAttempt._fetch_and_unpack": _INSTALLED,
    "tsukud.install.homebrew.client:HomebrewClient.formula": "Homebrew's formula JSON",
    "tsukud.install.homebrew.pour:merge_summaries": _INSTALLED,
    "tsukud.install.homebrew.relocate:Report.summary": _INSTALLED,
    "tsukud.install.installer:Installer.record": _INSTALLED,
    "tsukud.install.installer:Installer.plan": _PLAN,
    "tsukud.install.planning:plan_tool": _PLAN,
    "tsukud.install.planning:_unresolved_plan": _PLAN,
    "tsukud.recipe.plan:_params": _PLAN,
    "tsukud.rpc.install_methods:tools_plan": _PLAN,
    "tsukud.llm.adapter:HttpAdapter._json_object": _LLM,
    "tsukud.llm.claude:build_params": _LLM,
    "tsukud.llm.claude:_web_search": _LLM,
    "tsukud.llm.claude:_arguments": _LLM,
    "tsukud.llm.openai_compat:_assistant": _LLM,
    "tsukud.llm.openai_compat:build_payload": _LLM,
    "tsukud.recipe.model:step_summary": _STEP,
    "tsukud.recipe.toml_io:_table": _TOML,
    "tsukud.recipe.toml_io:_exact_table": _TOML,
    "tsukud.recipe.toml_io:_step_dict": _TOML,
    "tsukud.recipe.toml_io:recipe_to_dict": _TOML,
    "tsukud.registries._common:as_dict": _REGISTRY,
    "tsukud.registries.npm:manifest": _REGISTRY,
    "tsukud.events.catalogue:as_payload": "a catalogue Struct as the dict append and Emit take",
    "tsukud.rpc.protocol:result_frame": _FRAME,
    "tsukud.rpc.protocol:progress_frame": _FRAME,
    "tsukud.rpc.protocol:error_frame": _FRAME,
    "tsukud.sandbox.runtime:RunSpec.container_config": _DOCKER,
    "tsukud.sandbox.runtime:_AioDocker.version": _DOCKER,
    "tsukud.sandbox.runtime:_AioDocker.inspect": _DOCKER,
    "tsukud.sandbox.runtime:ContainerRuntime.inspect_container": _DOCKER,
    "tsukud.testing.answers:_desired": _FAKE,
    "tsukud.testing.answers:_diff": _FAKE,
    "tsukud.testing.crates:FakeCratesIo.api_doc": _FAKE,
    "tsukud.testing.gems:FakeRubyGems.gem_doc": _FAKE,
    "tsukud.testing.github:FakeGitHub._asset_json": _FAKE,
    "tsukud.testing.github:FakeGitHub._release_json": _FAKE,
    "tsukud.testing.github:FakeGitHub._manifest": _FAKE,
    "tsukud.validation.summary:verdict_event": _EVENT,
}

#: The list's length may only go down: lower it when an entry goes.
CEILING = 61


def _untyped(tree: ast.AST, prefix: str) -> Iterator[str]:
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, ast.ClassDef):
            yield from _untyped(node, f"{prefix}{node.name}.")
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            if node.returns is not None and ast.unparse(node.returns) in UNTYPED:
                yield f"{prefix}{node.name}"
            yield from _untyped(node, f"{prefix}{node.name}.")


@functools.cache
def untyped_functions(root: Path = ROOT) -> frozenset[str]:
    """``module:qualname`` of every function under ``root`` returning an untyped dict."""
    found = set()
    for path in sorted(root.rglob("*.py")):
        module = ".".join(path.relative_to(root.parent).with_suffix("").parts)
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        found |= {f"{module}:{name}" for name in _untyped(tree, "")}
    return frozenset(found)


def test_no_new_function_returns_an_untyped_dict() -> None:
    new = sorted(untyped_functions() - set(ALLOWED))
    assert not new, (
        "these return dict[str, Any]: return a msgspec Struct that says what they return"
        " (e.g. install/results.py), or, if the answer is free-form JSON by nature, list"
        f" them in ALLOWED with why: {new}"
    )


def test_the_list_only_shrinks() -> None:
    gone = sorted(set(ALLOWED) - untyped_functions())
    assert not gone, f"typed now or removed: take them off ALLOWED and lower CEILING: {gone}"
    assert len(ALLOWED) <= CEILING


def test_a_new_untyped_answer_is_found(tmp_path: Path) -> None:
    """The scan sees a method, a nested function and the optional form."""
    pkg = tmp_path / "tsukud"
    (pkg / "feature").mkdir(parents=True)
    (pkg / "feature" / "service.py").write_text(
        "from typing import Any\n"
        "class Service:\n"
        "    async def status(self) -> dict[str, Any]: ...\n"
        "def outer() -> None:\n"
        "    def inner() -> dict[str, Any] | None: ...\n"
        "def typed() -> dict[str, int]: ...\n"
    )
    assert untyped_functions(pkg) == {
        "tsukud.feature.service:Service.status",
        "tsukud.feature.service:outer.inner",
    }
