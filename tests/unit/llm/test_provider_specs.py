"""One spec per LLM provider (a row of ``tsukud/provider_specs.LLM_PROVIDERS``, built into
adapters by ``tsukud/llm/providers.py``): the settings, the variables a request carries,
the service, ``llm status``, discovery, the pipeline and ``tsukuctl doctor`` read it, so
a provider's names, key variables and search strategy have one truth, and adding one is
its row, its adapter and its prices (docs/architecture.md, "Where a new thing goes")."""

from __future__ import annotations

import functools
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any, cast

import pytest

from tests.unit.mentions import mentions
from tsukuctl.doctor_commands import LLM_KEYS, NO_KEY_FIX
from tsukud import caller_env, config, provider_specs
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
    cls = providers.adapter_class(spec)
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
    # tsukuctl reads the table too (provider_specs: stdlib only), so doctor names the same
    # first variables as the service's hints, and checks every provider's key setting
    assert NO_KEY_FIX == (
        "create and discovery need an LLM key: export ANTHROPIC_API_KEY=... (or GOOGLE_API_KEY)"
    )
    assert tuple(s.key_setting for s in SPECS) == LLM_KEYS
    for spec in SPECS:
        assert (spec.key_env[0] in NO_KEY_FIX) == spec.key_required, spec.name
        for other in spec.key_env[1:]:
            assert other not in NO_KEY_FIX, other


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


# Where a provider's name (and the tag its responses carry) may appear in the product
# (``tsukud/testing`` aside): its row in the table and its adapter. Everything else
# reads the row, or speaks of a search strategy rather than of the provider that has it.
TABLE = "tsukud/provider_specs.py"


def _allowed(spec: providers.ProviderSpec) -> set[str]:
    return {TABLE, spec.adapter_module.replace(".", "/") + ".py"}


# "local" is a word of other things too: only the names no other thing has.
@pytest.mark.parametrize(
    "word",
    sorted({w for s in SPECS for w in (s.name, s.tag) if len(w) >= 6}),
)
def test_a_provider_s_name_appears_only_in_its_row_and_its_adapter(word: str) -> None:
    """Adding a provider touches its row, its adapter and its prices: at most 3 product
    files (issue 27 measured gemini in 15 modules, claude in 15, anthropic in 9)."""
    spec = next(s for s in SPECS if word in (s.name, s.tag))
    assert mentions(word) <= _allowed(spec), word
    assert len(mentions(word)) <= 3, sorted(mentions(word))


def test_the_settings_and_the_carried_variables_come_from_the_rows() -> None:
    """What config.py and the client's list used to spell out per provider."""
    for spec in SPECS:
        for setting in (spec.model, spec.url):
            key = config.KEYS[setting.name]
            assert (key.default, key.env, key.doc) == (setting.default, setting.env, setting.doc)
        key = config.KEYS[spec.key_setting]
        assert key.secret and key.env == spec.key_env
        assert set(spec.key_env) <= config.SECRET_ENV  # redacted wherever they travel
        for name in (*spec.key_env, *spec.url.env, *spec.model.env):
            assert caller_env.allowed(name), name
        if spec.key_env_setting is not None:
            assert config.KEY_ENV_SETTINGS[spec.key_setting] == spec.key_env_setting
            assert config.KEYS[spec.key_env_setting].doc.endswith(f"(before {spec.key_env[0]})")
    assert provider_specs.LLM_KEY_ENV == (
        "ANTHROPIC_API_KEY",
        "GOOGLE_API_KEY",
        "GEMINI_API_KEY",
        "TSUKU_OPENAI_API_KEY",
    )


def test_the_docs_that_give_provider_examples_read_as_before() -> None:
    """``config list`` shows each setting's doc: built from the rows, word for word."""
    assert config.KEYS["llm.provider"].doc == (
        "providers to try first, e.g. 'claude' or 'gemini,claude'; the others follow"
    )
    assert config.KEYS["discover.max_searches"].doc == (
        "web searches one discovery may make (Claude's max_uses; local models)"
    )
    assert config.KEYS["llm.gemini.api_key_env"].doc == (
        "environment variable holding the Gemini key (before GOOGLE_API_KEY)"
    )


def test_only_the_provider_whose_sdk_lists_deprecations_is_asked() -> None:
    # the list lives in a heavy SDK: a run on another provider never imports it
    assert [s.name for s in SPECS if s.sdk_deprecations] == ["claude"]
    assert providers.lists_deprecations("claude")
    assert not providers.lists_deprecations("gemini")
    assert not providers.lists_deprecations(None)


# A made-up provider, added the way docs/architecture.md says: its row, its adapter and
# its prices, in a copy of the product; nothing else of the copy is touched.
ROW = """    ProviderSpec(
        name="acmellm",
        tag="acmellm",
        vendor="Acme",
        adapter="tsukud.llm.acmellm:AcmeProvider",
        model=ProviderSetting("llm.acmellm_model", "acme-1", ("TSUKU_ACMELLM_MODEL",)),
        url=ProviderSetting("llm.acmellm_base_url", "http://127.0.0.1:9", ("ACMELLM_BASE_URL",)),
        key_setting="secrets.acmellm_api_key",
        key_env=("ACMELLM_API_KEY",),
        key_env_setting="llm.acmellm.api_key_env",
    ),
"""
ADAPTER = '''"""Acme's models: an OpenAI-compatible API behind a key."""

from tsukud.llm.openai_compat import OpenAICompatProvider


class AcmeProvider(OpenAICompatProvider):
    key_hint = "ACMELLM_API_KEY"

    def __init__(self, api_key: str, *, model: str, base_url: str, proxy: str | None) -> None:
        super().__init__(base_url, model=model, api_key=api_key, name="acmellm", proxy=proxy)
'''
PRICES = '\n[[price]]\nmodel = "acme-1"\ninput = "1"\noutput = "3"\n'
KEY = "acme-KEY-0123456789abcdef"

# What the copy's own modules say of the new provider: the variables a request carries
# (client side, then daemon side), the settings they land in, the service's providers
# (``llm status`` lists ``PROVIDERS`` through ``info`` and ``price``), doctor's hint.
PROBE = f"""
import datetime, json, tsukud
from tsukud import caller_env, config, provider_specs
from tsukud.clock import SystemClock
from tsukud.llm import providers
from tsukud.llm.service import LLM, PROVIDERS
from tsukuctl.doctor_commands import LLM_KEYS, NO_KEY_FIX

sent = caller_env.collect(
    {{"ACMELLM_API_KEY": {KEY!r}, "ACMELLM_BASE_URL": "http://127.0.0.1:8", "ACME_OTHER": "x"}}
)
cfg = config.resolve(env={{}}).with_caller_env(caller_env.accept(sent))
llm = LLM(config=lambda: cfg, store=None, budget=None, generations=None, breakers=None,
          confirmations=None, clock=SystemClock())
info = llm.info("acmellm")
print(json.dumps({{
    "where": tsukud.__file__,
    "sent": sorted(sent),
    "secret_env": "ACMELLM_API_KEY" in config.SECRET_ENV,
    "source": cfg.setting("secrets.acmellm_api_key").source,
    "providers": list(PROVIDERS),
    "order": llm.order(),
    "info": [info.model, info.base_url, info.credential, info.usable],
    "price": str(llm.price("acmellm").input),
    "adapter": providers.adapter_class(providers.BY_NAME["acmellm"]).__name__,
    "doctor": [LLM_KEYS, NO_KEY_FIX],
}}))
"""


def _with_a_provider_added(tree: Path) -> None:
    for part in ("tsukud", "tsukuctl"):
        shutil.copytree(REPO / part, tree / part, ignore=shutil.ignore_patterns("testing"))
    table = tree / TABLE
    lines = table.read_text().splitlines(keepends=True)
    start = lines.index("LLM_PROVIDERS: tuple[ProviderSpec, ...] = (\n")
    end = lines.index(")\n", start)
    table.write_text("".join([*lines[:end], ROW, *lines[end:]]))
    (tree / "tsukud/llm/acmellm.py").write_text(ADAPTER)
    with (tree / "tsukud/llm/prices.toml").open("a") as f:
        f.write(PRICES)


def test_a_provider_added_as_its_row_its_adapter_and_its_prices_is_everywhere(
    tmp_path: Path,
) -> None:
    tree = tmp_path / "tree"
    _with_a_provider_added(tree)
    env = {"PATH": os.environ["PATH"], "TSUKU_HOME": str(tmp_path / "home")}
    run = functools.partial(
        subprocess.run, capture_output=True, text=True, env=env, cwd=tree, timeout=60
    )
    # `tsukuctl config list` (the copy's client: no daemon needed)
    listed = run([sys.executable, "-m", "tsukuctl", "config", "list", "--json"])
    assert listed.returncode == 0, listed.stderr
    shown = {s["key"]: s for s in json.loads(listed.stdout)["settings"]}
    assert shown["llm.acmellm_model"]["value"] == "acme-1"
    assert shown["llm.acmellm_base_url"]["value"] == "http://127.0.0.1:9"
    assert shown["secrets.acmellm_api_key"]["secret"]
    assert shown["llm.acmellm.api_key_env"]["doc"] == (
        "environment variable holding the Acme key (before ACMELLM_API_KEY)"
    )
    probe = run([sys.executable, "-c", PROBE])
    assert probe.returncode == 0, probe.stderr
    said = json.loads(probe.stdout)
    assert said["where"] == str(tree / "tsukud/__init__.py")  # the copy, not this checkout
    assert said["sent"] == ["ACMELLM_API_KEY", "ACMELLM_BASE_URL"]  # a look-alike is not
    assert said["secret_env"]  # redacted wherever it travels
    assert said["source"] == "caller:ACMELLM_API_KEY"
    assert said["providers"] == ["claude", "gemini", "local", "acmellm"]
    assert said["order"] == said["providers"]
    assert said["info"] == ["acme-1", "http://127.0.0.1:8", "(set)", True]  # the caller's URL
    assert said["price"] == "1"
    assert said["adapter"] == "AcmeProvider"
    assert "secrets.acmellm_api_key" in said["doctor"][0]
    assert "ACMELLM_API_KEY" in said["doctor"][1]
    assert KEY not in probe.stdout + probe.stderr + listed.stdout + listed.stderr
