"""``run_command`` on the host: the real awscli recipe's shape (a signed download, an
extract, a shell command that flattens the bundle, directory-mode binaries) installs
only after the person has seen the exact command (work directory filled in) and said
yes. No means nothing installed; no terminal to ask means ``confirmation_required``
even with ``--yes``; a recipe an LLM wrote without validation never runs its command."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from tests.conftest import Tsuku
from tests.fakes.openpgp import SigningKey
from tests.integration.install.conftest import events, installed, tree
from tests.integration.install.test_recipe_errors import local_recipe
from tests.integration.install.test_signed_download import awscli_recipe
from tests.integration.install.test_signed_download import serve as serve_signed
from tests.integration.install.test_url_actions import host, run, script
from tests.waiting import wait_until
from tsukuctl.client import RemoteError
from tsukud.testing.download_host import FakeDownloadHost

__all__ = ["host"]  # the download host fixture, shared with test_url_actions

# tsuku's own flattening (``mv aws/dist/* .``) would move aws/dist/aws *into* the aws
# directory it then deletes; the same idea, written so that it works:
FLATTEN = "mv aws/dist dist && rm -rf aws\nmv dist/* . && rmdir dist\n"


@pytest.fixture(scope="module")
def aws_key() -> Iterator[SigningKey]:
    with SigningKey("AWS CLI Team <aws-cli@example.test>") as key:
        yield key


INSTALL_STEP = '[[steps]]\naction = "install_binaries"\nbinaries = ["aws/dist/aws"]\n'
RUN_STEP = f"""[[steps]]
action = "run_command"
command = '''
{FLATTEN}'''
description = "Flatten PyInstaller bundle to tool root"

[[steps]]
action = "install_binaries"
binaries = ["aws", "aws_completer"]
install_mode = "directory"
"""


def awscli(host: FakeDownloadHost, key: SigningKey, *, generated: bool = False) -> str:
    """tsuku's awscli recipe's shape: the signed download, then a run_command."""
    text = awscli_recipe(host, key.fingerprint)
    assert INSTALL_STEP in text
    text = text.replace(INSTALL_STEP, RUN_STEP)
    if generated:
        text = text.replace(
            'name = "awscli"\n',
            'name = "awscli"\ngenerated_by = "claude-sonnet-4-5"\nllm_validation = "skipped"\n',
        )
    return text


def serve(host: FakeDownloadHost, key: SigningKey) -> None:
    members = {
        "aws/dist/aws": script("aws-cli/2.17.0 Python/3.11.9"),
        "aws/dist/aws_completer": script("completer"),
        "aws/dist/lib/libpython.so": b"\x7fELF",
        "aws/install": script("the installer, not run"),
    }
    serve_signed(host, key, key, members)


def install(t: Tsuku, answer: bool, asked: list[dict[str, Any]], **params: Any) -> Any:
    def on_confirm(question: dict[str, Any]) -> bool:
        asked.append(question)
        return answer

    with t.client() as c:
        return c.call(
            "install", {"tool": "awscli", "can_ask": True, **params}, on_confirm=on_confirm
        )


def test_the_command_runs_after_the_person_saw_it_and_said_yes(
    inst: Tsuku, host: FakeDownloadHost, aws_key: SigningKey
) -> None:
    serve(host, aws_key)
    local_recipe(inst, "awscli", awscli(host, aws_key))
    # The plan shows the command before anything runs (the work directory is made later).
    plan = json.loads(inst.ctl("plan", "awscli", "--json").stdout)
    assert [s["action"] for s in plan["steps"]] == [
        "download_file",
        "extract",
        "run_command",
        "install_binaries",
    ]
    assert plan["steps"][2]["params"] == {
        "command": FLATTEN,
        "description": "Flatten PyInstaller bundle to tool root",
    }
    assert plan["unsupported"] == []
    asked: list[dict[str, Any]] = []
    res = install(inst, True, asked)

    # (A machine whose PATH has an aws is also asked about shadowing it: docs/install.md.)
    (question,) = [q for q in asked if q["kind"] != "shadowing"]
    assert question["kind"] == "run_command" and question["question"] == "Run this command?"
    assert FLATTEN.strip() in question["message"]  # the exact command, as it will run
    assert question["option"] == {"tool": "awscli", "step": 2, "command": FLATTEN}
    assert ".staging-awscli-2.17.0-" in question["message"]  # where it runs
    assert sorted(res["binaries"]) == ["aws", "aws_completer"]
    assert "aws-cli/2.17.0" in run(inst.home / "bin" / "aws")
    tool = inst.home / "tools" / "awscli-2.17.0"
    assert (tool / "lib" / "libpython.so").is_file() and (tool / "aws").is_file()
    assert not (tool / "dist").exists() and not (tool / "install").exists()  # flattened
    granted = [
        e["payload"]
        for e in events(inst, "confirmation.")
        if e["type"] == "confirmation.granted" and e["payload"]["kind"] == "run_command"
    ]
    assert granted[-1]["option"]["command"] == FLATTEN

    assert inst.ctl("remove", "awscli").returncode == 0
    assert tree(inst.home) == []


def test_no_means_nothing_installed(
    inst: Tsuku, host: FakeDownloadHost, aws_key: SigningKey
) -> None:
    serve(host, aws_key)
    local_recipe(inst, "awscli", awscli(host, aws_key))
    asked: list[dict[str, Any]] = []
    with pytest.raises(RemoteError) as caught:
        install(inst, False, asked)
    assert caught.value.remote_code == "declined", caught.value.message
    assert len(asked) == 1
    assert installed(inst) == {}
    # The staging directory is renamed to .trash-* and emptied in the background.
    tools = inst.home / "tools"
    wait_until(lambda: not any(tools.iterdir()), "the staging trash emptied", timeout=10)
    failed = [e for e in events(inst) if e["type"] == "install.failed"][-1]["payload"]
    assert failed["stage"] == "run_command"


def test_without_a_terminal_yes_does_not_cover_a_command(
    inst: Tsuku, host: FakeDownloadHost, aws_key: SigningKey
) -> None:
    serve(host, aws_key)
    local_recipe(inst, "awscli", awscli(host, aws_key))
    cp = inst.ctl("install", "awscli", "--yes")
    assert cp.returncode == 12, cp.stderr
    assert FLATTEN.splitlines()[0] in cp.stderr and "--yes does not cover it" in cp.stderr
    assert installed(inst) == {}


def test_an_unvalidated_llm_recipe_never_runs_its_command(
    inst: Tsuku, host: FakeDownloadHost, aws_key: SigningKey
) -> None:
    serve(host, aws_key)
    local_recipe(inst, "awscli", awscli(host, aws_key, generated=True))
    asked: list[dict[str, Any]] = []
    with pytest.raises(RemoteError) as caught:
        install(inst, True, asked, yes=True)
    assert caught.value.remote_code == "run_command_refused" and asked == []
    assert "not validated" in caught.value.message
    assert installed(inst) == {}
    cp = inst.ctl("install", "awscli", "--yes")
    assert cp.returncode == 14, cp.stderr
