"""Repairs, in-process with real parts: a wrong arch mapping caught by the replay check,
a verify command that fails in the container (self-repair cannot fix it, the model
can), and a download 404. Each time the feedback the model gets is checked, and the
next answer passes."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.fakes import anthropic_server as anth
from tests.fakes.anthropic_server import FakeAnthropic
from tests.fakes.github import FakeGitHub
from tests.fakes.releases import FakeAsset, FakeRelease, FakeRepo, archive, tar_gz
from tests.integration.create.helpers import (
    CLAUDE_KEY,
    DirectRun,
    Sink,
    create_in_process,
    direct_llm,
    good_answer,
    load_human,
)
from tsukud.github.client import GitHub
from tsukud.llm.claude import ClaudeProvider
from tsukud.net.http import Http
from tsukud.recipe import ArchiveFormat, parse_recipe
from tsukud.validation.errors import ValidationFailed
from tsukud.validation.validator import Validator

pytestmark = pytest.mark.docker

PLATFORMS = [("linux", "amd64"), ("linux", "arm64"), ("darwin", "amd64"), ("darwin", "arm64")]


def picky_script(version: str) -> bytes:
    """Answers only ``picky info``; anything else is an error that leaks secrets."""
    return (
        "#!/bin/sh\n"
        'if [ "$1" = "info" ]; then echo "picky v' + version + '"; exit 0; fi\n'
        f'echo "Error: unknown flag $1 (config /home/alice/.picky, key={CLAUDE_KEY}, '
        'peer 10.20.30.40)" >&2\n'
        "exit 2\n"
    ).encode()


def picky_repo() -> FakeRepo:
    releases = []
    for version in ("1.0.0", "0.9.0", "0.8.0"):
        assets = [
            FakeAsset(
                f"picky_{version}_{o}_{a}.tar.gz",
                tar_gz({"picky": (picky_script(version), 0o755)}),
            )
            for o, a in PLATFORMS
        ]
        releases.append(FakeRelease(f"v{version}", assets))
    return FakeRepo("acme/picky", releases, description="picky about its flags")


def wordy_repo(exit_code: int) -> FakeRepo:
    """Answers only ``wordy about``; anything else is a long error that names the tool
    and exits with ``exit_code``."""
    error = (
        "wordy: error: unknown flag $1. wordy could not parse its arguments and wordy will "
        "not continue: the configuration file /etc/wordy/wordy.conf was not found. See "
        "the wordy manual for the valid flags; wordy exits now."
    )
    releases = []
    for version in ("3.0.0", "2.9.0", "2.8.0"):
        script = (
            '#!/bin/sh\nif [ "$1" = "about" ]; then echo "wordy ' + version + '"; exit 0; fi\n'
            f'echo "{error}" >&2\nexit {exit_code}\n'
        ).encode()
        assets = [
            FakeAsset(f"wordy_{version}_{o}_{a}.tar.gz", tar_gz({"wordy": (script, 0o755)}))
            for o, a in PLATFORMS
        ]
        releases.append(FakeRelease(f"v{version}", assets))
    return FakeRepo("acme/wordy", releases)


def twofmt_repo() -> FakeRepo:
    """Every build as .tar.gz and .zip; the CDN has lost the tar.gz files."""
    releases = []
    for version in ("2.1.0", "2.0.0", "1.9.0"):
        members = {"twofmt": (f'#!/bin/sh\necho "twofmt {version}"\n'.encode(), 0o755)}
        assets = []
        for o, a in PLATFORMS:
            assets.append(FakeAsset(f"twofmt-{version}-{o}-{a}.tar.gz", tar_gz(members)))
            assets.append(
                FakeAsset(f"twofmt-{version}-{o}-{a}.zip", archive(ArchiveFormat.ZIP, members))
            )
        releases.append(FakeRelease(f"v{version}", assets))
    return FakeRepo("acme/twofmt", releases)


def answer(pattern: str, *, binary: str, verify: str, **extra: Any) -> dict[str, Any]:
    return {
        "asset_type": "archive",
        "asset_pattern": pattern,
        "os_mapping": {"linux": "linux", "darwin": "darwin"},
        "arch_mapping": {"amd64": "amd64", "arm64": "arm64"},
        "binaries": [binary],
        "verify_command": verify,
        "verify_pattern": "{version}",
        **extra,
    }


def last_user_text(request_body: dict[str, Any]) -> str:
    content = request_body["messages"][-1]["content"]
    parts = []
    for block in content:
        if block["type"] == "text":
            parts.append(block["text"])
        elif block["type"] == "tool_result":
            inner = block["content"]
            parts.append(inner if isinstance(inner, str) else json.dumps(inner))
    return "\n".join(parts)


async def test_wrong_arch_mapping_is_caught_by_replay_and_fixed(
    gh: FakeGitHub,
    github: GitHub,
    http: Http,
    validator: Validator,
    anthropic: FakeAnthropic,
    claude: ClaudeProvider,
) -> None:
    human = load_human("s/stern.toml")
    wrong = good_answer(human)
    wrong["arch_mapping"] = {"amd64": "x86_64", "arm64": "aarch64"}  # stern says amd64
    anthropic.reply([anth.tool_use("t1", "extract_pattern", wrong)], "tool_use")
    anthropic.reply([anth.tool_use("t2", "extract_pattern", good_answer(human))], "tool_use")
    sink = Sink()
    result = await create_in_process(
        http=http,
        github=github,
        github_url=gh.web_url,
        tool="stern",
        repo="stern/stern",
        sink=sink,
        validator=validator,
        open_llm=direct_llm(claude, []),
        force_llm=True,
    )
    assert result.validation.status == "passed" and result.turns == 2
    feedback = last_user_text(anthropic.requests[1].json())
    assert "rejected" in feedback and "[replay]" in feedback
    assert "stern_1.4.2_linux_x86_64.tar.gz" in feedback  # what it rendered
    assert "closest: 'stern_1.4.2_linux_arm64.tar.gz'" in feedback  # a real asset
    block = anthropic.requests[1].json()["messages"][-1]["content"][0]
    assert block["type"] == "tool_result" and block["is_error"] is True
    calls = sink.of("tool.called")
    assert [(c["name"], c["ok"], c.get("error_type")) for c in calls] == [
        ("extract_pattern", False, "static_check"),
        ("extract_pattern", True, None),
    ]
    assert not sink.of("validation.failed")  # the replay check spared a container run


async def test_verify_failure_goes_back_to_the_model_sanitised(
    gh: FakeGitHub,
    github: GitHub,
    http: Http,
    validator: Validator,
    anthropic: FakeAnthropic,
    claude: ClaudeProvider,
) -> None:
    gh.add_repo(picky_repo())
    first = answer("picky_{version}_{os}_{arch}.tar.gz", binary="picky", verify="picky --version")
    second = dict(first, verify_command="picky info")
    anthropic.reply([anth.tool_use("t1", "extract_pattern", first)], "tool_use")
    anthropic.reply([anth.tool_use("t2", "extract_pattern", second)], "tool_use")
    runs: list[DirectRun] = []
    sink = Sink()
    result = await create_in_process(
        http=http,
        github=github,
        github_url=gh.web_url,
        tool="picky",
        repo="acme/picky",
        sink=sink,
        validator=validator,
        open_llm=direct_llm(claude, runs),
        force_llm=True,
    )
    assert result.validation.status == "passed"
    assert result.repairs == 1 and result.turns == 2
    recipe = parse_recipe(result.recipe)
    assert recipe.verify is not None and recipe.verify.command == "picky info"

    message = last_user_text(anthropic.requests[1].json())
    assert message.startswith('{"ok":true')  # the accepted answer's tool result comes first
    assert "Repair 1 of 2" in message
    assert "Verify command: picky --version" in message and "Its exit code: 2" in message
    assert "Error: unknown flag --version" in message  # the verify command's own output
    assert "Error category:" in message and "Suggested fixes:" in message
    # Sanitised: the key, the home directory and the address never reach the model.
    assert CLAUDE_KEY not in message and "[REDACTED]" in message
    assert "/home/alice" not in message and "$HOME/.picky" in message
    assert "10.20.30.40" not in message and "[IP]" in message
    for request in anthropic.requests:
        assert CLAUDE_KEY not in request.body.decode()
    assert CLAUDE_KEY not in json.dumps(sink.events)
    # The model saw its own previous answer: the history was kept.
    history = anthropic.requests[1].json()["messages"]
    assert [m["role"] for m in history] == ["user", "assistant", "user"]
    assert history[1]["content"][0]["input"]["verify_command"] == "picky --version"

    types = sink.types()
    assert types.count("validation.failed") == 1 and types.count("validation.passed") == 1
    methods = [
        e["method"] for e in sink.of("repair.attempted") if e["kind"] == "verify_self_repair"
    ]
    # Every deterministic fix was tried (one container run each) before the model.
    assert methods == [
        "flag version",
        "flag -V",
        "flag -v",
        "flag -version",
        "help --help",
        "help -h",
    ]
    (llm_repair,) = [e for e in sink.of("repair.attempted") if e["kind"] == "llm"]
    assert llm_repair["stage"] == "verify"
    # The live line the client shows while the model repairs (n of the run's maximum).
    (repairing,) = [p for p in sink.progress if p.get("stage") == "repairing"]
    assert repairing["message"] == f"repairing 1/2 (verify: {llm_repair['category']})"
    assert repairing["attempt"] == 1


@pytest.mark.parametrize("exit_code", [2, 0])
async def test_a_long_error_is_not_accepted_as_help_output(
    gh: FakeGitHub,
    github: GitHub,
    http: Http,
    validator: Validator,
    anthropic: FakeAnthropic,
    claude: ClaudeProvider,
    exit_code: int,
) -> None:
    """An error message that is long and names the tool is not usage text: neither the
    failing command nor ``--help`` printing it becomes an output check; the model
    gets the failure and fixes the command."""
    gh.add_repo(wordy_repo(exit_code))
    first = answer("wordy_{version}_{os}_{arch}.tar.gz", binary="wordy", verify="wordy --version")
    anthropic.reply([anth.tool_use("t1", "extract_pattern", first)], "tool_use")
    second = dict(first, verify_command="wordy about")
    anthropic.reply([anth.tool_use("t2", "extract_pattern", second)], "tool_use")
    sink = Sink()
    result = await create_in_process(
        http=http,
        github=github,
        github_url=gh.web_url,
        tool="wordy",
        repo="acme/wordy",
        sink=sink,
        validator=validator,
        open_llm=direct_llm(claude, []),
        force_llm=True,
    )
    assert result.validation.status == "passed" and result.repairs == 1
    assert result.self_repairs == ()
    recipe = parse_recipe(result.recipe)
    assert recipe.verify is not None
    assert (recipe.verify.command, recipe.verify.mode) == ("wordy about", None)
    methods = [
        e["method"] for e in sink.of("repair.attempted") if e["kind"] == "verify_self_repair"
    ]
    assert "output_detection" not in methods


async def test_download_404_is_feedback_not_an_abort(
    gh: FakeGitHub,
    github: GitHub,
    http: Http,
    validator: Validator,
    anthropic: FakeAnthropic,
    claude: ClaudeProvider,
) -> None:
    gh.add_repo(twofmt_repo())
    gh.override(r"/twofmt-[^/]*\.tar\.gz$", status=404, role="web")
    tgz = answer("twofmt-{version}-{os}-{arch}.tar.gz", binary="twofmt", verify="twofmt --version")
    zipped = answer("twofmt-{version}-{os}-{arch}.zip", binary="twofmt", verify="twofmt --version")
    anthropic.reply([anth.tool_use("t1", "extract_pattern", tgz)], "tool_use")
    anthropic.reply([anth.tool_use("t2", "extract_pattern", zipped)], "tool_use")
    sink = Sink()
    result = await create_in_process(
        http=http,
        github=github,
        github_url=gh.web_url,
        tool="twofmt",
        repo="acme/twofmt",
        sink=sink,
        validator=validator,
        open_llm=direct_llm(claude, []),
        force_llm=True,
    )
    assert result.validation.status == "passed" and result.repairs == 1
    assert parse_recipe(result.recipe).steps[0].asset_pattern.endswith(".zip")  # type: ignore[union-attr]
    message = last_user_text(anthropic.requests[1].json())
    assert "downloading the asset failed" in message and "Error category: download_404" in message
    (failed,) = sink.of("validation.failed")
    assert failed["stage"] == "download" and failed["category"] == "download_404"


@pytest.mark.slow  # every repair turn is validated in a container
async def test_repairs_are_bounded(
    gh: FakeGitHub,
    github: GitHub,
    http: Http,
    validator: Validator,
    anthropic: FakeAnthropic,
    claude: ClaudeProvider,
) -> None:
    """A model that never fixes it gets two repairs, then the run fails with the last
    verify output, and no recipe."""
    gh.add_repo(picky_repo())
    bad = answer("picky_{version}_{os}_{arch}.tar.gz", binary="picky", verify="picky --version")
    for i in range(3):
        anthropic.reply([anth.tool_use(f"t{i}", "extract_pattern", bad)], "tool_use")
    sink = Sink()
    with pytest.raises(ValidationFailed) as info:
        await create_in_process(
            http=http,
            github=github,
            github_url=gh.web_url,
            tool="picky",
            repo="acme/picky",
            sink=sink,
            validator=validator,
            open_llm=direct_llm(claude, []),
            force_llm=True,
        )
    assert "after 2 repairs" in info.value.message
    assert info.value.data["exit_code"] == 2
    assert len(anthropic.requests) == 3
    assert [e["attempt"] for e in sink.of("repair.attempted") if e["kind"] == "llm"] == [1, 2]
    failed = sink.of("generation.failed")[-1]
    assert failed["error_code"] == "validation_failed" and failed["repairs"] == 2
