"""One spec per LLM provider (tsukud/llm/providers.py): the service, ``llm status``,
discovery, the pipeline and ``tsukuctl doctor`` read it, so a provider's names, key
variables and search strategy have one truth."""

from __future__ import annotations

from pathlib import Path
from typing import Any, cast

import pytest

from tests.unit.mentions import mentions
from tsukud import config
from tsukud.create.pipeline import provider_name
from tsukud.discover.llm_discovery import strategy_for
from tsukud.llm import providers
from tsukud.llm.providers import SPECS, key_variables, name_of_tag, searches_itself
from tsukud.llm.service import DEFAULT_ORDER, LLM, PROVIDERS
from tsukud.llm.types import AssistantMessage, Response, Usage

REPO = Path(__file__).resolve().parents[3]


def service(tmp_path: Path, env: dict[str, str]) -> LLM:
    """The service's configuration half (``info``); nothing else is touched."""
    cfg = config.resolve(env=env, path=tmp_path / "config.toml")
    none = cast(Any, None)
    return LLM(
        config=lambda: cfg,
        store=none,
        budget=none,
        generations=none,
        breakers=none,
        confirmations=none,
        clock=none,
    )


def test_the_service_s_providers_are_the_specs() -> None:
    assert PROVIDERS == DEFAULT_ORDER == ("claude", "gemini", "local")
    assert [s.name for s in SPECS] == list(PROVIDERS)


@pytest.mark.parametrize("spec", SPECS, ids=lambda s: s.name)
def test_a_spec_names_settings_that_exist(spec: providers.ProviderSpec) -> None:
    for key in (spec.model_setting, spec.url_setting, spec.key_setting):
        assert key in config.KEYS, key
    assert config.KEYS[spec.key_setting].secret
    assert spec.key_env  # a key can be given through the environment
    cls = spec.adapter_class()
    assert cls.__module__ == spec.adapter_module


@pytest.mark.parametrize("spec", [s for s in SPECS if s.key_required], ids=lambda s: s.name)
def test_a_missing_key_is_named_by_the_variable_the_settings_read_first(
    tmp_path: Path, spec: providers.ProviderSpec
) -> None:
    info = service(tmp_path, {}).info(spec.name)
    assert not info.usable and info.credential == "(not set)"
    first = config.KEYS[spec.key_setting].env[0]
    assert f"set {first} or `tsukuctl config set {spec.key_setting}`" in info.reason
    # and that variable is read: set, the provider is usable, at its default model
    info = service(tmp_path, {first: "k-123"}).info(spec.name)
    assert info.usable and info.credential == "(set)"
    assert (info.model, info.base_url) == (spec.default_model, spec.default_url)


def test_gemini_s_key_is_google_api_key_everywhere(tmp_path: Path) -> None:
    # doctor named GEMINI_API_KEY while `llm status` named GOOGLE_API_KEY (issue 27)
    gemini = providers.BY_NAME["gemini"]
    assert gemini.key_env[0] == "GOOGLE_API_KEY"
    assert "GOOGLE_API_KEY" in service(tmp_path, {}).info("gemini").reason
    assert key_variables() == "ANTHROPIC_API_KEY or GOOGLE_API_KEY"


def test_doctor_names_each_provider_s_first_key_variable() -> None:
    # tsukuctl imports only the stdlib, so it spells the variables out: held to the specs
    text = (REPO / "tsukuctl/doctor_commands.py").read_text()
    fix = next(line for line in text.splitlines() if "need an LLM key" in line)
    for spec in SPECS:
        if spec.key_required:
            assert spec.key_env[0] in fix, spec.name
    for spec in SPECS:
        for other in spec.key_env[1:]:
            assert other not in fix, other


def test_a_local_server_needs_its_url_not_a_key(tmp_path: Path) -> None:
    info = service(tmp_path, {}).info("local")
    assert not info.usable
    assert "set llm.openai_base_url (TSUKU_OPENAI_BASE_URL)" in info.reason
    info = service(tmp_path, {"TSUKU_OPENAI_BASE_URL": "http://127.0.0.1:9"}).info("local")
    assert info.usable and info.credential == "not needed"


@pytest.mark.parametrize(
    ("name", "model", "strategy"),
    [
        ("claude", "claude-sonnet-5-5", "server"),
        ("gemini", "gemini-3.8-flash", "server"),
        ("gemini", "gemini-2.5-flash", "two_step"),
        ("gemini", "models/gemini-1.5-pro", "two_step"),
        ("local", "llama3.2", "client"),
        ("unknown", "whatever", "client"),
    ],
)
def test_discovery_searches_the_way_the_spec_says(name: str, model: str, strategy: str) -> None:
    assert strategy_for(name, model) == strategy
    assert searches_itself(name) == (strategy != "client")


@pytest.mark.parametrize(
    ("tag", "name"),
    [("anthropic", "claude"), ("gemini", "gemini"), ("openai_compat", "local"), ("x", "x")],
)
def test_a_response_s_tag_reads_as_the_provider_s_name(tag: str, name: str) -> None:
    assert name_of_tag(tag) == name
    response = Response(
        message=AssistantMessage(),
        stop_reason="end_turn",
        raw_stop_reason="end_turn",
        usage=Usage(),
        provider=cast(Any, tag),
        model="m",
    )
    assert provider_name(response) == name


def test_only_a_grounded_provider_is_billed_per_grounded_prompt() -> None:
    assert [s.name for s in SPECS if s.grounded] == ["gemini"]
    assert [s.name for s in SPECS if not s.priced] == ["local"]


# Where a provider's name may appear in the product (``tsukud/testing`` aside): its spec,
# its adapter, the settings (core: config.py cannot read the specs) and the client's
# list of variables a request carries (stdlib only: caller_env.py cannot either).
def _allowed(spec: providers.ProviderSpec) -> set[str]:
    adapter = spec.adapter_module.replace(".", "/") + ".py"
    return {"tsukud/llm/providers.py", adapter, "tsukud/config.py", "tsukud/caller_env.py"}


# Providers still named elsewhere, with the modules that do (issue 27 measured gemini:
# 15 modules, now the four above). Each list may only shrink: a module leaving it must
# leave it here too.
STILL_NAMED: dict[str, set[str]] = {}  # none left (was claude's 12 modules)


# "local" is a word of other things too: only the names no other thing has.
@pytest.mark.parametrize("spec", [s for s in SPECS if len(s.name) >= 6], ids=lambda s: s.name)
def test_a_provider_s_name_appears_only_in_its_spec_adapter_and_settings(
    spec: providers.ProviderSpec,
) -> None:
    """Adding a provider touches its spec, its adapter and its prices (and its
    settings): code and prose elsewhere read the spec, or speak of a search strategy
    rather than of the provider that has it."""
    allowed = _allowed(spec) | STILL_NAMED.get(spec.name, set())
    assert mentions(spec.name) <= allowed, spec.name
    assert STILL_NAMED.get(spec.name, set()) <= mentions(spec.name), "shrunk: update"


@pytest.mark.parametrize("spec", [s for s in SPECS if len(s.name) >= 6], ids=lambda s: s.name)
def test_a_provider_is_named_by_at_most_four_product_modules(spec: providers.ProviderSpec) -> None:
    # Issue 27's measure: gemini 15 modules when it was filed, claude 15.
    assert len(mentions(spec.name)) <= 4, sorted(mentions(spec.name))


def test_only_the_provider_whose_sdk_lists_deprecations_is_asked() -> None:
    # the list lives in a heavy SDK: a run on another provider never imports it
    assert [s.name for s in SPECS if s.sdk_deprecations] == ["claude"]
    assert providers.lists_deprecations("claude")
    assert not providers.lists_deprecations("gemini")
    assert not providers.lists_deprecations(None)
