"""``tsukuctl create`` against a real tsukud, the fake GitHub, the fake Anthropic server
(real SDK) and real Docker: the issue's "done when" walk and the CLI around it."""

from __future__ import annotations

import json
import os
import pty
import subprocess
import sys
import tomllib
from collections.abc import Iterator
from typing import Any

import pytest

from tests.conftest import RETIRING, Tsuku, base_env, short_home
from tests.fakes import anthropic_server as anth
from tests.fakes.anthropic_server import FakeAnthropic
from tests.fakes.docker_cut import CuttableDocker
from tests.fakes.github import FakeGitHub, fixture_world
from tests.integration.create.helpers import CLAUDE_KEY, STERN
from tsukud.errors import ExitCode

pytestmark = pytest.mark.docker


@pytest.fixture(scope="module")
def fw() -> Iterator[FakeGitHub]:
    with fixture_world() as fake:
        yield fake


@pytest.fixture
def anthropic() -> Iterator[FakeAnthropic]:
    with FakeAnthropic() as fake:
        yield fake


@pytest.fixture
def home(fw: FakeGitHub, anthropic: FakeAnthropic, docker_endpoint: str) -> Iterator[Tsuku]:
    path = short_home()
    t = Tsuku(
        path,
        {
            **base_env(path),
            **fw.env(),
            "ANTHROPIC_API_KEY": CLAUDE_KEY,
            "ANTHROPIC_BASE_URL": anthropic.url,
        },
    )
    try:
        yield t
    finally:
        RETIRING.retire(t)  # stopped and removed in the background (tests/conftest.py)


def events(t: Tsuku, *types: str) -> list[dict[str, Any]]:
    args = ["events", "--json", "--limit", "0"]
    for ty in types:
        args += ["--type", ty]
    return [json.loads(x) for x in t.ctl(*args, check=True).stdout.splitlines()]


def script_stern(fake: FakeAnthropic, model: str = anth.MODEL) -> None:
    fake.reply(
        [
            anth.text("Let me look inside the linux archive."),
            anth.tool_use(
                "toolu_1", "inspect_archive", {"asset_name": "stern_1.32.0_linux_amd64.tar.gz"}
            ),
        ],
        "tool_use",
        usage_=anth.usage(3000, 80),
        model=model,
    )
    fake.reply(
        [anth.tool_use("toolu_2", "extract_pattern", STERN)],
        "tool_use",
        usage_=anth.usage(3500, 150),
        model=model,
    )


def no_secrets(t: Tsuku, *texts: str) -> None:
    for text in texts:
        assert CLAUDE_KEY not in text
    log = t.home / "logs"
    for path in [*log.rglob("*"), *(t.home / "recipes").rglob("*")] if log.exists() else []:
        if path.is_file():
            assert CLAUDE_KEY not in path.read_text(errors="replace"), path
    assert CLAUDE_KEY not in json.dumps(events(t))


def test_done_when_deterministic(home: Tsuku, anthropic: FakeAnthropic) -> None:
    home.start()
    cp = home.ctl(
        "create", "stern", "--from", "github:stern/stern", "--deterministic-only", "--yes"
    )
    assert cp.returncode == 0, cp.stderr
    recipe_path = home.home / "recipes" / "stern.toml"
    assert cp.stdout.splitlines()[0] == f"Recipe created: {recipe_path}"
    assert "Validation: passed on linux/" in cp.stdout
    # The fake's stern is a shell script: it ran on the container's platform, and on the
    # others it proves nothing platform-specific, which is what is said (issue 29, 12).
    neutral = "a script (platform-neutral: nothing platform-specific to prove)"
    assert (
        f"; platforms: linux/amd64 ran, linux/arm64 {neutral}, darwin/amd64 {neutral}, "
        f"darwin/arm64 {neutral}\n"
    ) in cp.stdout
    assert "emulation" not in cp.stdout and "headers checked" not in cp.stdout
    assert "To install it: tsukuctl install stern" in cp.stdout
    # Every phase shows, in the order it happens: the validation download, each platform.
    stages = (
        "fetching releases of stern/stern…",
        "matching the",
        "validating on linux/",
        "downloaded stern_1.32.0_linux_",  # 186 bytes: quick, so only its end is told
        "checking the darwin/arm64 build…",
    )
    at = [cp.stderr.find(stage) for stage in stages]
    assert -1 not in at and at == sorted(at), cp.stderr
    assert "\x1b" not in cp.stderr and "\r" not in cp.stderr  # not a terminal: plain lines
    assert "cost: $0 (deterministic matcher, no LLM)" in cp.stderr
    recipe = tomllib.loads(recipe_path.read_text())
    meta = recipe["metadata"]
    assert meta["generated_by"] == "deterministic"
    assert meta["validated_version"] == "1.32.0" and meta["validation_platform"].startswith(
        "linux/"
    )
    assert meta["validation_image"] == "tsuku/validate-debian:local"
    # Every platform's asset is pinned, not only the container's (darwin by its headers).
    assert sorted(meta["asset_sha256"]) == [
        f"stern_1.32.0_{os}_{arch}.tar.gz"
        for os in ("darwin", "linux")
        for arch in ("amd64", "arm64")
    ]
    assert recipe["steps"][0]["asset_pattern"] == "stern_{version}_{os}_{arch}.tar.gz"
    assert "llm_validation" not in meta and anthropic.requests == []

    cp = home.ctl("install", "stern")
    assert cp.returncode == 0, cp.stderr
    assert cp.stdout.startswith("installed stern 1.32.0 (stern)")
    assert "matches GitHub's digest, the recipe" in cp.stderr  # the recipe's sha256 pin
    out = subprocess.run(
        [str(home.home / "bin" / "stern"), "--version"], capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "stern v1.32.0"

    evs = events(home)
    session = next(e["session"] for e in evs if e["type"] == "create.started")
    create_types = [e["type"] for e in evs if e["session"] == session]
    assert create_types == [
        "create.started",
        "validation.started",
        "sandbox.lock_acquired",
        "sandbox.lock_released",
        # no second container run: a script under qemu-user would still run on the
        # container's own interpreter
        "validation.passed",
        "generation.completed",
        "recipe.written",
    ]
    (passed,) = [e for e in evs if e["type"] == "validation.passed"]
    assert passed["payload"]["platforms"] == [
        {"platform": "linux/amd64", "status": "passed", "how": "run"},
        {"platform": "linux/arm64", "status": "passed", "how": "script"},
        {"platform": "darwin/amd64", "status": "passed", "how": "script"},
        {"platform": "darwin/arm64", "status": "passed", "how": "script"},
    ]
    (installed,) = [e for e in evs if e["type"] == "install.completed"]
    assert installed["payload"]["recipe_source"] == "local"


@pytest.mark.slow  # a daemon loading the LLM SDKs and a multi-turn scripted create run
def test_done_when_scripted_llm(home: Tsuku, anthropic: FakeAnthropic) -> None:
    script_stern(anthropic)
    home.start()
    cp = home.ctl(
        "create", "stern", "--from", "github:stern/stern", "--llm", "--yes", "--collect-tool-stats"
    )
    assert cp.returncode == 0, cp.stderr
    assert "asking claude…" in cp.stderr
    assert "cost: $0.02 (6500 in / 230 out tokens, 2 turns, claude:claude-sonnet-5-5)" in cp.stderr
    assert "inspect_archive  stern_1.32.0_linux_amd64.tar.gz" in cp.stderr
    recipe = tomllib.loads((home.home / "recipes" / "stern.toml").read_text())
    assert recipe["metadata"]["generated_by"] == "claude:claude-sonnet-5-5"
    assert len(recipe["metadata"]["asset_sha256"]["stern_1.32.0_linux_amd64.tar.gz"]) == 64

    cp2 = home.ctl("install", "stern")
    assert cp2.returncode == 0, cp2.stderr
    assert cp2.stdout.startswith("installed stern 1.32.0 (stern)")

    # The request: tool choice any, our three tools, the key in a header only.
    first = anthropic.requests[0].json()
    assert first["tool_choice"] == {"type": "any"}
    assert [t["name"] for t in first["tools"]] == [
        "fetch_file",
        "inspect_archive",
        "extract_pattern",
    ]
    evs = events(home)
    session = next(e["session"] for e in evs if e["type"] == "create.started")
    types = [e["type"] for e in evs if e["session"] == session]
    assert types[:5] == [
        "create.started",
        "budget.reserved",
        "generation.started",  # the hourly slot is taken once the run is admitted
        "llm.call_started",
        "llm.turn",
    ]
    assert types.count("llm.turn") == 2 and types.count("tool.called") == 2
    assert types[-3:] == ["budget.settled", "generation.completed", "recipe.written"]
    turns = [e["payload"] for e in evs if e["type"] == "llm.turn"]
    assert sum(t["cost_usd"] for t in turns) == pytest.approx(0.0153)
    calls = [e["payload"] for e in evs if e["type"] == "tool.called"]
    assert calls[0]["name"] == "inspect_archive" and calls[0]["ok"] is True
    assert calls[0]["asset"] == "stern_1.32.0_linux_amd64.tar.gz" and calls[0]["bytes"] > 0
    done = next(e["payload"] for e in evs if e["type"] == "generation.completed")
    assert done["run_cost_usd"] == pytest.approx(0.0153) and done["validation"] == "passed"
    assert "cost_usd" not in done and "input_tokens" not in done  # never counted twice
    no_secrets(home, cp.stdout, cp.stderr, cp2.stdout, cp2.stderr)


@pytest.mark.slow  # a daemon loading the LLM SDKs and a multi-turn scripted create run
def test_malformed_tool_arguments_are_paid_for_and_fed_back(
    home: Tsuku, anthropic: FakeAnthropic
) -> None:
    """A paid turn whose arguments are not JSON, then one with the wrong types: each is
    recorded and priced, the model is told what was wrong, and the run's money adds up."""
    anthropic.reply(
        [anth.tool_use("toolu_1", "extract_pattern", '{"asset_type": "archive", ')],
        "tool_use",
        usage_=anth.usage(3000, 80),
    )
    anthropic.reply(
        [anth.tool_use("toolu_2", "extract_pattern", {**STERN, "asset_type": 5})],
        "tool_use",
        usage_=anth.usage(3200, 90),
    )
    anthropic.reply(
        [anth.tool_use("toolu_3", "extract_pattern", STERN)],
        "tool_use",
        usage_=anth.usage(3500, 150),
    )
    home.start()
    cp = home.ctl("create", "stern", "--from", "github:stern/stern", "--llm", "--yes")
    assert cp.returncode == 0, cp.stderr
    assert "(9700 in / 320 out tokens, 3 turns, claude:claude-sonnet-5-5)" in cp.stderr

    # Turn 2 heard that the arguments were not JSON; turn 3 why the types were refused.
    told = anthropic.requests[1].json()["messages"][-1]["content"]
    assert told[-1]["type"] == "text" and "not valid JSON" in told[-1]["text"]
    (refused,) = [
        b for b in anthropic.requests[2].json()["messages"][-1]["content"]
        if b["type"] == "tool_result"
    ]  # fmt: skip
    assert refused["tool_use_id"] == "toolu_2" and refused["is_error"] is True
    assert "asset_type" in json.dumps(refused["content"])

    turns = [e["payload"] for e in events(home, "llm.turn")]
    assert [t.get("error") for t in turns] == ["provider_malformed_output", None, None]
    assert turns[0]["cost_usd"] == pytest.approx(0.0068)  # 3000 x $2/M + 80 x $10/M
    total = sum(t["cost_usd"] for t in turns)
    assert total == pytest.approx(0.0226)
    (settled,) = events(home, "budget.settled")
    assert settled["payload"]["actual_usd"] == pytest.approx(total)
    done = next(e["payload"] for e in events(home, "generation.completed"))
    assert done["run_cost_usd"] == pytest.approx(total)


def test_existing_recipe_is_refused_before_any_money(home: Tsuku, anthropic: FakeAnthropic) -> None:
    (home.home / "recipes").mkdir(parents=True)
    (home.home / "recipes" / "stern.toml").write_text("# mine\n")
    home.start()
    cp = home.ctl("create", "stern", "--from", "github:stern/stern", "--llm", "--yes")
    assert cp.returncode == ExitCode.GENERAL
    assert "a recipe already exists at" in cp.stderr and "hint: Use --force" in cp.stderr
    assert anthropic.requests == [] and events(home, "budget.*", "create.*") == []
    assert (home.home / "recipes" / "stern.toml").read_text() == "# mine\n"


def test_without_a_terminal_or_yes_the_recipe_is_printed(home: Tsuku) -> None:
    home.start()
    cp = home.ctl(
        "create",
        "stern",
        "--from",
        "github:stern/stern",
        "--deterministic-only",
        "--skip-validation",
    )
    assert cp.returncode == 0, cp.stderr
    recipe = tomllib.loads(cp.stdout)
    assert recipe["metadata"]["llm_validation"] == "skipped"
    assert "WARNING: the recipe was NOT validated in a container: --skip-validation" in cp.stderr
    assert "printed, not saved" in cp.stderr
    assert not (home.home / "recipes").exists()


def test_version_builds_for_that_release(home: Tsuku, fw: FakeGitHub) -> None:
    home.start()
    stable = [r.tag for r in fw.repos["stern/stern"].releases if not (r.draft or r.prerelease)]
    older = stable[1]
    base = ("create", "stern", "--from", "github:stern/stern", "--deterministic-only")
    cp = home.ctl(*base, "--skip-validation", "--json", "--version", older.removeprefix("v"))
    assert cp.returncode == 0, cp.stderr
    res = json.loads(cp.stdout)
    assert (res["tag"], res["version"]) == (older, older.removeprefix("v"))
    cp = home.ctl(*base, "--yes", "--version", "0.0.1")
    assert cp.returncode == ExitCode.VERSION_NOT_FOUND
    assert "has no release for version 0.0.1" in cp.stderr and "hint: " in cp.stderr
    assert not (home.home / "recipes").exists()


def test_json_and_output(home: Tsuku, tmp_path: Any) -> None:
    home.start()
    target = tmp_path / "out" / "stern.toml"
    cp = home.ctl(
        "create",
        "stern",
        "--from",
        "github:stern/stern",
        "--deterministic-only",
        "--json",
        "--output",
        str(target),
    )
    assert cp.returncode == 0, cp.stderr
    res = json.loads(cp.stdout)
    assert res["written"] == str(target) and target.read_text() == res["recipe"]
    assert res["validation"]["status"] == "passed" and cp.stderr == ""
    assert [d["platform"] for d in res["preview"]["downloads"]] == [
        "linux/amd64",
        "linux/arm64",
        "darwin/amd64",
        "darwin/arm64",
    ]
    cp = home.ctl(
        "create", "stern", "--from", "github:stern/stern", "--deterministic-only", "-o", str(target)
    )
    assert cp.returncode == ExitCode.GENERAL and "already exists" in cp.stderr


def on_a_terminal(home: Tsuku, typed: bytes, *flags: str, timeout: float = 60) -> tuple[int, str]:
    """``create stern`` on a pty, answering its preview with ``typed``: (exit, stdout)."""
    home.start()
    master, slave = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-m", "tsukuctl", "create", "stern", "--from", "github:stern/stern",
         "--deterministic-only", *flags],
        env=home.env,
        stdin=slave,
        stdout=subprocess.PIPE,
        stderr=slave,
    )  # fmt: skip
    os.close(slave)
    os.write(master, typed)
    stdout, _ = proc.communicate(timeout=timeout)
    os.close(master)
    return proc.returncode, stdout.decode()


def test_interactive_preview_view_then_install(home: Tsuku) -> None:
    code, text = on_a_terminal(home, b"x\nv\ni\n", timeout=120)  # invalid, view, install
    assert code == 0, text
    assert "Generated recipe for stern (github:stern/stern at v1.32.0):" in text
    assert "linux/arm64   stern_1.32.0_linux_arm64.tar.gz" in text
    assert "Verification: stern --version" in text
    assert "Generated by: deterministic; cost $0 (deterministic matcher, no LLM)" in text
    assert "Repairs: 0 of 2 LLM repairs used" in text
    assert "Validation: passed on linux/" in text
    assert text.count("[v]iew full recipe, [s]ave, [i]nstall, [c]ancel? ") == 3
    assert "Please answer v, s, i or c." in text
    assert 'asset_pattern = "stern_{version}_{os}_{arch}.tar.gz"' in text  # [v]
    assert f"Recipe written: {home.home / 'recipes' / 'stern.toml'}" in text
    assert "installed stern 1.32.0 (stern)" in text
    assert (home.home / "bin" / "stern").is_symlink()


def test_interactive_save_writes_the_recipe_and_installs_nothing(home: Tsuku) -> None:
    """The README's "preview, then save" (issue 29, point 10)."""
    code, text = on_a_terminal(home, b"s\n", "--skip-validation")
    assert code == 0, text
    recipe = home.home / "recipes" / "stern.toml"
    assert text.endswith(f"Recipe written: {recipe}\nTo install it: tsukuctl install stern\n")
    assert 'asset_pattern = "stern_{version}_{os}_{arch}.tar.gz"' in recipe.read_text()
    assert not (home.home / "bin" / "stern").exists()
    assert events(home, "install.*") == []


def test_interactive_cancel_writes_nothing(home: Tsuku) -> None:
    code, text = on_a_terminal(home, b"c\n", "--skip-validation")
    assert code == 0
    assert "Validation: NOT validated" in text
    assert text.endswith("cancelled: nothing was written\n")  # and spent nothing
    assert not (home.home / "recipes").exists()


@pytest.mark.slow  # a daemon loading the LLM SDKs and a multi-turn scripted create run
def test_ctrl_c_at_the_preview_says_what_the_run_spent_and_exits_130(
    home: Tsuku, anthropic: FakeAnthropic
) -> None:
    """The run is over and paid for when the preview asks; Ctrl-C there is the same one
    line as a Ctrl-C part-way (with what the run spent), on a real terminal."""
    from tests.integration.install.test_install_terminal import PtyRun
    from tsukuctl.render import money

    script_stern(anthropic)
    home.start()
    run = PtyRun(home, "create", "stern", "--from", "github:stern/stern", "--llm")
    try:
        run.read_until(r"\[c\]ancel\? ", timeout=120)
        run.type(b"\x03")  # what the terminal sends for Ctrl-C: SIGINT to the client
        status = run.wait(timeout=20)
    finally:
        run.kill()
    assert status == ExitCode.CANCELLED == 130, run.text
    (done,) = events(home, "generation.completed")
    spent = money(done["payload"]["run_cost_usd"])
    assert spent == "$0.02"
    after = run.text.rsplit("[c]ancel? ", 1)[1]  # the terminal echoes ^C itself
    assert after == f"^Ccancelled: nothing was written; the run spent {spent}\r\n", repr(after)
    assert "Traceback" not in run.text and "KeyboardInterrupt" not in run.text
    assert not (home.home / "recipes" / "stern.toml").exists()


def test_errors_carry_hints(home: Tsuku, fw: FakeGitHub) -> None:
    home.env.pop("ANTHROPIC_API_KEY")
    home.start()
    cp = home.ctl("create", "nope", "--from", "github:acme/nope", "--yes")
    assert cp.returncode == ExitCode.NETWORK
    assert "not found on GitHub" in cp.stderr and "hint: Check the repository name" in cp.stderr
    cp = home.ctl("create", "stern", "--from", "gitlab:stern/stern", "--yes")
    assert cp.returncode == ExitCode.USAGE
    assert (
        "hint: Use --from github:owner/repo, npm:<package>, pypi:<project>, crates:<crate>, "
        "rubygems:<gem>, go:<module> or homebrew:<formula>." in cp.stderr
    )
    cp = home.ctl("create", "stern", "--from", "github:stern/stern", "--llm", "--yes")
    assert cp.returncode == ExitCode.PROVIDER_UNAVAILABLE
    assert (
        "no LLM provider is configured" in cp.stderr and "hint: Set ANTHROPIC_API_KEY" in cp.stderr
    )
    # One short clause per provider, not every provider's whole how-to (issue 29, 6).
    (said,) = [line for line in cp.stderr.splitlines() if "no LLM provider" in line]
    assert len(said) < 200 and "claude: no API key;" in said, said
    assert "`tsukuctl llm status`" in cp.stderr
    failed = events(home, "generation.failed")
    assert [e["payload"]["error_code"] for e in failed] == [
        "github_repo_not_found",
        "provider_unavailable",
    ]


@pytest.mark.slow  # a daemon loading the LLM SDKs and a multi-turn scripted create run
def test_budget_and_deprecated_model(home: Tsuku, anthropic: FakeAnthropic) -> None:
    home.env["TSUKU_LLM_DAILY_BUDGET"] = "0.01"
    home.env["TSUKU_CLAUDE_MODEL"] = "claude-sonnet-4-5-20250929"
    home.start()
    cp = home.ctl("create", "stern", "--from", "github:stern/stern", "--llm", "--yes")
    assert cp.returncode == ExitCode.BUDGET and "hint:" in cp.stderr
    assert anthropic.requests == []
    home.stop_all()
    home.procs.clear()
    home.env.pop("TSUKU_LLM_DAILY_BUDGET")
    home.start()
    script_stern(anthropic, model="claude-sonnet-4-5-20250929")
    cp = home.ctl("create", "stern", "--from", "github:stern/stern", "--llm", "--yes")
    assert cp.returncode == 0, cp.stderr
    assert "warning: claude-sonnet-4-5-20250929 is deprecated" in cp.stderr


# Among the slowest tests (issue 26): a create with validation in a real container and two
# LLM SDKs imported by the daemon.
@pytest.mark.slow  # a daemon loading the LLM SDKs and a multi-turn scripted create run
def test_failover_to_gemini_mid_run(home: Tsuku, anthropic: FakeAnthropic) -> None:
    """Claude fails after the first turn; the same conversation continues on Gemini 3
    (its function call without an id, signed as Gemini 3 signs), and the recipe says who
    answered. Claude's call is in Gemini's current turn, so the strict fake takes it only
    with Google's documented stand-in signature."""
    from tests.fakes import gemini_server as gem
    from tests.fakes.gemini_server import FakeGemini

    with FakeGemini() as gemini:
        home.env.update(
            GOOGLE_API_KEY="AIzaCREATECANARY0123456789abcdef",
            TSUKU_GEMINI_BASE_URL=gemini.url,
            TSUKU_LLM_PROVIDER="claude,gemini",
        )
        anthropic.reply(
            [
                anth.tool_use(
                    "toolu_1", "inspect_archive", {"asset_name": "stern_1.32.0_linux_amd64.tar.gz"}
                )
            ],
            "tool_use",
        )
        anthropic.error(529, "overloaded_error", "Overloaded")
        gemini.reply([gem.function_call("extract_pattern", STERN)], usage_=gem.usage(4000, 120))
        home.start()
        cp = home.ctl("create", "stern", "--from", "github:stern/stern", "--llm", "--yes")
        assert cp.returncode == 0, cp.stderr
        recipe = tomllib.loads((home.home / "recipes" / "stern.toml").read_text())
        assert recipe["metadata"]["generated_by"] == "gemini:gemini-3.8-flash"
        contents = gemini.requests[0].json()["contents"]
        assert [c["role"] for c in contents] == ["user", "model", "user"]
        claude_call = contents[1]["parts"][0]
        assert claude_call["functionCall"]["name"] == "inspect_archive"
        assert claude_call["thoughtSignature"] == "skip_thought_signature_validator"
        response = contents[2]["parts"][0]["functionResponse"]
        assert response["name"] == "inspect_archive"
        evs = events(home, "provider.failover", "llm.turn")
        assert [e["type"] for e in evs] == ["llm.turn", "provider.failover", "llm.turn"]


def create_waiting_for_claude(
    home: Tsuku, anthropic: FakeAnthropic, fw: FakeGitHub
) -> subprocess.Popen[str]:
    """``tsukuctl create --llm`` whose first model call is on its way and never answered
    (the fake holds it for 30 s): a run that has something to cancel and to pay for."""
    import time

    from tests.fakes.http import Reply

    fw.reset_quota()  # the module's earlier runs spent this hour's anonymous quota
    anthropic.push(Reply(json=anth.message([anth.text("slow")]), delay=30))
    home.start()
    proc = subprocess.Popen(
        [sys.executable, "-m", "tsukuctl", "create", "stern", "--from", "github:stern/stern",
         "--llm", "--yes"],
        env=home.env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )  # fmt: skip
    assert proc.stderr is not None
    said = []
    for line in proc.stderr:
        said.append(line)
        if line.startswith("asking claude"):
            break
    else:
        raise AssertionError(f"create ended before asking Claude: {''.join(said)}")
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and not anthropic.requests:
        time.sleep(0.05)  # the request is on its way to the provider
    return proc


# Among the slowest tests (issue 26): a create killed mid-run and the daemon's settling of
# it, with validation in a real container.
@pytest.mark.slow  # a daemon loading the LLM SDKs and a multi-turn scripted create run
def test_client_gone_cancels_the_run_and_settles(
    home: Tsuku, anthropic: FakeAnthropic, fw: FakeGitHub
) -> None:
    import time

    proc = create_waiting_for_claude(home, anthropic, fw)
    proc.kill()
    proc.communicate()
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and not events(home, "generation.failed"):
        time.sleep(0.1)
    (failed,) = events(home, "generation.failed")
    assert failed["payload"]["error_code"] == "cancelled" and failed["payload"]["stage"] == "llm"
    # The request was sent and never answered: charged at its worst case, estimated,
    # and the run's terminal event carries that total.
    (cut,) = events(home, "llm.cut_off")
    assert cut["payload"]["estimated"] is True and cut["payload"]["cost_usd"] > 0
    (settled,) = events(home, "budget.settled")
    assert settled["payload"]["actual_usd"] == pytest.approx(cut["payload"]["cost_usd"])
    assert failed["payload"]["run_cost_usd"] == pytest.approx(cut["payload"]["cost_usd"])
    assert not list((home.home / "validate").glob("run-*"))


@pytest.mark.slow  # a daemon loading the LLM SDKs and a multi-turn scripted create run
def test_ctrl_c_says_what_the_run_spent_and_exits_130(
    home: Tsuku, anthropic: FakeAnthropic, fw: FakeGitHub
) -> None:
    import signal

    from tsukuctl.render import money

    proc = create_waiting_for_claude(home, anthropic, fw)
    try:
        proc.send_signal(signal.SIGINT)  # Ctrl-C
        out, rest = proc.communicate(timeout=20)
    finally:
        proc.kill()
    assert proc.returncode == ExitCode.CANCELLED == 130, rest
    (cut,) = events(home, "llm.cut_off")
    # One line, with what the daemon charged the run: the unanswered call's worst case.
    assert rest == f"cancelled: the run spent {money(cut['payload']['cost_usd'])}\n", rest
    assert out == ""
    assert not (home.home / "recipes" / "stern.toml").exists()


def test_without_the_image_an_llm_recipe_is_refused_before_any_money(
    home: Tsuku, anthropic: FakeAnthropic, fw: FakeGitHub
) -> None:
    fw.reset_quota()  # the module's earlier runs spent this hour's anonymous quota
    home.env["TSUKU_SANDBOX_IMAGE"] = "tsuku/validate-absent:never-built"
    home.start()
    cp = home.ctl("create", "stern", "--from", "github:stern/stern", "--llm", "--yes")
    assert cp.returncode == ExitCode.SANDBOX != 0, cp.stderr
    assert "validation cannot run, so the recipe was not accepted" in cp.stderr
    assert "hint: Build the validation image with `tsukuctl sandbox prepare`" in cp.stderr
    assert "--skip-validation" in cp.stderr
    assert anthropic.requests == []  # nothing asked, nothing paid
    assert not (home.home / "recipes").exists()  # nothing saved
    (failed,) = events(home, "generation.failed")
    assert failed["payload"]["error_code"] == "validation_unavailable"


def test_docker_dying_mid_validation_is_validation_unavailable_not_a_crash(
    home: Tsuku, fw: FakeGitHub, docker_endpoint: str
) -> None:
    """dockerd goes away after the readiness checks, as the container is created: the
    run ends as validation_unavailable (exit 27) with a recorded ``validation.skipped``
    naming the attempt, nothing saved; not an internal error (the skipped verdict once
    did not fit its event)."""
    fw.reset_quota()
    with CuttableDocker(docker_endpoint) as docker:
        home.env["DOCKER_HOST"] = docker.endpoint
        home.start()
        cp = home.ctl(
            "create", "stern", "--from", "github:stern/stern", "--deterministic-only", "--yes"
        )
        assert docker.cut.is_set(), "the forwarder never saw a container being created"
    assert cp.returncode == ExitCode.SANDBOX, cp.stderr
    assert "internal error" not in cp.stderr
    assert "validation cannot run, so the recipe was not accepted" in cp.stderr
    assert not (home.home / "recipes" / "stern.toml").exists()
    (started,) = events(home, "validation.started")
    (skipped,) = events(home, "validation.skipped")
    p = skipped["payload"]
    assert p["stage"] == "runtime" and p["attempt"] == started["payload"]["attempt"]
    assert p["reason"] and p["reason"] == p["message"]
    (failed,) = events(home, "generation.failed")
    assert failed["payload"]["error_code"] == "validation_unavailable"
