"""``fetch_file`` and ``inspect_archive`` through the tool handler, against the fake
GitHub's contents API and release downloads (real GitHub client, real httpx2)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.fakes.github import FakeGitHub
from tests.fakes.releases import FakeAsset, FakeRelease, FakeRepo, archive, tar_gz
from tests.integration.create.helpers import Sink
from tsukud.create.context import gather
from tsukud.create.paths import TOO_LARGE_MESSAGE, FetchError, FetchOk
from tsukud.create.tools import RepoTools
from tsukud.github.client import GitHub
from tsukud.net.http import Http
from tsukud.recipe import ArchiveFormat

REPO = "acme/docs"
BIG = b"x" * (50 * 1024 + 1)
ELF = b"\x7fELF\x02\x01\x01" + b"\0" * 200


def docs_repo() -> FakeRepo:
    tool = b'#!/bin/sh\necho "tool v1.2.0"\n'
    members = {
        "tool-1.2.0/tool": (tool, 0o755),
        "tool-1.2.0/LICENSE": (b"MIT\n", 0o644),
        "tool-1.2.0/completions/tool.bash": (b"complete -F _tool tool\n", 0o644),
    }
    assets = [
        FakeAsset("tool_1.2.0_linux_amd64.tar.gz", tar_gz(members)),
        FakeAsset("tool_1.2.0_darwin_arm64.zip", archive(ArchiveFormat.ZIP, members)),
        FakeAsset("tool-linux-arm64", ELF),
        FakeAsset("checksums.txt", b"abc  tool_1.2.0_linux_amd64.tar.gz\n"),
    ]
    return FakeRepo(
        REPO,
        [
            FakeRelease("v1.2.0", assets),
            FakeRelease("v1.1.0", [FakeAsset("tool_1.1.0_linux_amd64.tar.gz", tar_gz(members))]),
        ],
        description="docs",
        files={
            "README.md": b"# tool\nInstall with the release archive.\n",
            "docs/INSTALL.md": b"Download tool_<version>_<os>_<arch>.tar.gz\n",
            "docs/empty.md": b"",
            "big.txt": BIG,
            "logo.bin": b"\xff\xfe\x00\x01binary",
        },
    )


@pytest.fixture
async def tools(gh: FakeGitHub, github: GitHub, http: Http, tmp_path: Path) -> RepoTools:
    if REPO not in gh.repos:
        gh.add_repo(docs_repo())
    ctx = await gather(github, REPO)
    sink = Sink()
    t = RepoTools(
        github=github,
        http=http,
        repo=ctx.repo,
        release=ctx.release,
        api_release=ctx.api_release,
        github_url=gh.web_url,
        emit=sink.emit,
        workdir=tmp_path,
    )
    t.sink = sink  # type: ignore[attr-defined]
    return t


def contents_requests(gh: FakeGitHub) -> int:
    return len(gh.requests_to(f"/repos/{REPO}/contents/", role="api"))


async def rejected(tools: RepoTools, gh: FakeGitHub, path: Any) -> FetchError:
    before = contents_requests(gh)
    result = await tools.fetch_file(path)
    assert isinstance(result, FetchError), result
    assert contents_requests(gh) == before, "a rejected path must never reach GitHub"
    event = tools.sink.of("tool.called")[-1]  # type: ignore[attr-defined]
    assert event["ok"] is False and event["error_type"] == result.error_type
    assert "path" not in event  # what failed the rules is not logged
    return result


# ---------------------------------------------------------------------------- fetch_file


async def test_valid_file(tools: RepoTools, gh: FakeGitHub) -> None:
    result = await tools.fetch_file("docs/INSTALL.md")
    assert isinstance(result, FetchOk)
    assert result.content == "Download tool_<version>_<os>_<arch>.tar.gz\n"
    (req,) = gh.requests_to(f"/repos/{REPO}/contents/docs/INSTALL.md")
    assert "ref=v1.2.0" in req.path  # at the release tag


async def test_bytes_reported_on_success(tools: RepoTools) -> None:
    result = await tools.fetch_file("  README.md  ")  # trimmed first
    assert isinstance(result, FetchOk)
    assert result.bytes == len(b"# tool\nInstall with the release archive.\n") == 41
    event = tools.sink.of("tool.called")[-1]  # type: ignore[attr-defined]
    assert event["name"] == "fetch_file" and event["ok"] is True
    assert event["path"] == "README.md" and event["bytes"] == 41
    assert isinstance(event["duration_ms"], int) and "error_type" not in event
    assert json.loads(json.dumps(event)) == event


async def test_not_found(tools: RepoTools) -> None:
    result = await tools.fetch_file("docs/missing.md")
    assert result == FetchError(
        error_type="file_not_found", message="File not found: docs/missing.md"
    )


async def test_dotdot_traversal(tools: RepoTools, gh: FakeGitHub) -> None:
    result = await rejected(tools, gh, "docs/../../etc/passwd")
    assert result.error_type == "path_validation" and "'..'" in result.message


async def test_absolute_etc_passwd(tools: RepoTools, gh: FakeGitHub) -> None:
    result = await rejected(tools, gh, "/etc/passwd")
    assert result.error_type == "path_validation" and "leading '/'" in result.message


async def test_percent_encoding(tools: RepoTools, gh: FakeGitHub) -> None:
    result = await rejected(tools, gh, "%2e%2e/%2e%2e/etc/passwd")
    assert result.error_type == "path_validation" and "'%'" in result.message


async def test_full_url(tools: RepoTools, gh: FakeGitHub) -> None:
    result = await rejected(tools, gh, "https://evil.example/payload.md")
    assert result.error_type == "path_validation" and "not a URL" in result.message


async def test_trailing_slash(tools: RepoTools, gh: FakeGitHub) -> None:
    result = await rejected(tools, gh, "docs/")
    assert result.error_type == "path_validation" and "trailing '/'" in result.message


async def test_double_slash(tools: RepoTools, gh: FakeGitHub) -> None:
    result = await rejected(tools, gh, "docs//INSTALL.md")
    assert result.error_type == "path_validation" and "'//'" in result.message


async def test_over_50_kb(tools: RepoTools) -> None:
    result = await tools.fetch_file("big.txt")
    assert result == FetchError(error_type="file_too_large", message=TOO_LARGE_MESSAGE)
    assert TOO_LARGE_MESSAGE == (
        "File exceeds 50KB limit. Try a more specific path or request a summary."
    )


async def test_over_200_characters(tools: RepoTools, gh: FakeGitHub) -> None:
    result = await rejected(tools, gh, "a" * 201)
    assert result.error_type == "path_validation" and "200 characters" in result.message


@pytest.mark.parametrize("path", ["README\x00.md", "docs/\x1b[31mINSTALL.md", "README.md\x7f"])
async def test_control_chars_and_nul(tools: RepoTools, gh: FakeGitHub, path: str) -> None:
    result = await rejected(tools, gh, path)
    assert result.error_type == "path_validation" and "control" in result.message


async def test_directory_response(tools: RepoTools) -> None:
    result = await tools.fetch_file("docs")
    assert result == FetchError(error_type="api_error", message="Path is not a file: docs")


async def test_missing_size(tools: RepoTools, gh: FakeGitHub) -> None:
    gh.override(
        r"/contents/nosize\.md",
        json_body={"type": "file", "encoding": "base64", "content": "aGk=", "path": "nosize.md"},
        role="api",
    )
    result = await tools.fetch_file("nosize.md")
    assert isinstance(result, FetchError) and result.error_type == "api_error"
    assert "no size" in result.message


async def test_empty_file(tools: RepoTools) -> None:
    result = await tools.fetch_file("docs/empty.md")
    assert result == FetchOk(content="", bytes=0)


async def test_binary_file_is_refused(tools: RepoTools) -> None:
    result = await tools.fetch_file("logo.bin")
    assert isinstance(result, FetchError) and "not a text file" in result.message


async def test_api_failure_is_structured(tools: RepoTools, gh: FakeGitHub) -> None:
    gh.override(r"/contents/flaky\.md", status=500, json_body={"message": "boom"}, role="api")
    result = await tools.fetch_file("flaky.md")
    assert isinstance(result, FetchError) and result.error_type == "api_error"
    assert result.message.startswith("Failed to read file:")


async def test_non_string_path(tools: RepoTools, gh: FakeGitHub) -> None:
    result = await rejected(tools, gh, ["README.md"])
    assert result.error_type == "path_validation"


# ----------------------------------------------------------------------- inspect_archive


async def test_inspect_tar_lists_executables_and_top_dir(tools: RepoTools, gh: FakeGitHub) -> None:
    result = await tools.inspect_archive("tool_1.2.0_linux_amd64.tar.gz")
    assert result["ok"] is True and result["format"] == "tar.gz"
    assert result["top_level_dir"] == "tool-1.2.0"
    assert result["executables"] == ["tool-1.2.0/tool"]
    first = result["entries"][0]
    assert first == {
        "path": "tool-1.2.0/tool",
        "type": "file",
        "size": 29,
        "mode": "0755",
        "executable": True,
    }
    event = tools.sink.of("tool.called")[-1]  # type: ignore[attr-defined]
    assert event["asset"] == "tool_1.2.0_linux_amd64.tar.gz" and event["ok"] is True
    size = gh.release_asset(REPO, "v1.2.0", "tool_1.2.0_linux_amd64.tar.gz").size
    assert event["bytes"] == size


async def test_inspect_zip(tools: RepoTools) -> None:
    result = await tools.inspect_archive("tool_1.2.0_darwin_arm64.zip")
    assert result["ok"] and result["format"] == "zip"
    assert result["executables"] == ["tool-1.2.0/tool"]


async def test_inspect_bare_binary_reports_its_magic(tools: RepoTools) -> None:
    result = await tools.inspect_archive("tool-linux-arm64")
    assert result["ok"] and result["format"] == "raw"
    (entry,) = result["entries"]
    assert entry["magic"] == "elf" and entry["executable"] is True


@pytest.mark.parametrize(
    "name",
    [
        "https://evil.example/tool.tar.gz",
        "tool_1.1.0_linux_amd64.tar.gz",  # another release's asset
        "../tool_1.2.0_linux_amd64.tar.gz",
        "tool_1.2.0_linux_amd64.tar.gz ; rm -rf /",
    ],
)
async def test_inspect_only_takes_an_asset_of_this_release(
    tools: RepoTools, gh: FakeGitHub, name: str
) -> None:
    before = len(gh.requests_to("/releases/download/", role="web"))
    result = await tools.inspect_archive(name)
    assert result["ok"] is False and result["error_type"] == "unknown_asset"
    assert "tool_1.2.0_linux_amd64.tar.gz" in result["message"]  # the real names, to pick from
    assert len(gh.requests_to("/releases/download/", role="web")) == before


async def test_inspect_checks_the_github_digest(tools: RepoTools, gh: FakeGitHub) -> None:
    name = "tool_1.2.0_darwin_arm64.zip"
    gh.cdn_replacements[name] = archive(ArchiveFormat.ZIP, {"evil": (b"x", 0o755)})
    try:
        result = await tools.inspect_archive(name)
    finally:
        gh.cdn_replacements.pop(name)
    assert result["ok"] is False and result["error_type"] == "checksum_mismatch"


async def test_inspect_a_download_404_is_a_result(tools: RepoTools, gh: FakeGitHub) -> None:
    gh.override(r"/releases/download/.*tool-linux-arm64", status=404, role="web")
    result = await tools.inspect_archive("tool-linux-arm64")
    assert result["ok"] is False and result["error_type"] == "download_error"


async def test_unknown_tool(tools: RepoTools) -> None:
    result = await tools.call("run_shell", {"cmd": "id"})
    assert result["ok"] is False and result["error_type"] == "unknown_tool"
