"""fetch_file path rules (docs/create.md) and the result builders."""

from __future__ import annotations

import string

import msgspec
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from tsukud.create.paths import (
    API_ERROR,
    FILE_NOT_FOUND,
    PATH_VALIDATION,
    TOO_LARGE_MESSAGE,
    FetchError,
    FetchOk,
    api_error,
    file_not_found,
    from_contents,
    not_a_file,
    success,
    too_large,
    validate_path,
)


def _rejected(path: str) -> str:
    result = validate_path(path)
    assert isinstance(result, FetchError), path
    assert result.error_type == PATH_VALIDATION
    assert msgspec.to_builtins(result) == {
        "ok": False,
        "error_type": "path_validation",
        "message": result.message,
    }
    return result.message


def test_valid_paths_are_trimmed() -> None:
    assert validate_path("  README.md\n") == "README.md"
    assert validate_path("docs/install-guide_v2.md") == "docs/install-guide_v2.md"
    assert validate_path("a" * 200) == "a" * 200


def test_traversal() -> None:
    assert "'..'" in _rejected("../secrets")
    assert "'..'" in _rejected("docs/../../etc/passwd")
    assert "'..'" in _rejected("docs\\install.md")


def test_absolute() -> None:
    assert "leading '/'" in _rejected("/etc/passwd")


def test_percent_encoding() -> None:
    assert "'%'" in _rejected("%2e%2e/etc/passwd")
    assert "'%'" in _rejected("docs%2Finstall.md")


def test_url() -> None:
    assert "not a URL" in _rejected("https://evil.example/x")


def test_trailing_slash() -> None:
    assert "trailing '/'" in _rejected("docs/")


def test_double_slash() -> None:
    assert "empty segments" in _rejected("docs//install.md")


def test_too_long() -> None:
    assert "200 characters" in _rejected("a" * 201)


def test_control_characters_and_nul() -> None:
    assert "control characters" in _rejected("READ\x00ME.md")
    assert "control characters" in _rejected("docs/\x1binstall.md")
    assert "control characters" in _rejected("docs/a\tb.md")


def test_shape() -> None:
    assert "start with a letter or digit" in _rejected(".github/workflows/x.yml")
    assert "start with a letter or digit" in _rejected("docs/ins tall.md")
    assert "start with a letter or digit" in _rejected("docs/ínstall.md")
    assert _rejected("   ") == "Path is empty."


def test_rules_apply_in_order() -> None:
    # Control characters are reported before '%', '%' before '..', '..' before '/'.
    assert "control" in _rejected("/%2e\x00")
    assert "'%'" in _rejected("/../%")
    assert "'..'" in _rejected("/../x")
    assert "leading '/'" in _rejected("/docs/")


# Half the examples use only the characters paths may hold (many are accepted, so the
# property is exercised, and "..", "//", leading and trailing "/" come up often), half
# anything at all.
PATHS = st.one_of(
    st.text(string.ascii_letters[:6] + string.digits[:3] + "/._-", max_size=250),
    st.text(max_size=250),
)


@given(PATHS)
def test_an_accepted_path_is_relative_and_clean(path: str) -> None:
    result = validate_path(path)
    assume(isinstance(result, str))
    assert isinstance(result, str)
    assert ".." not in result and "\\" not in result and "%" not in result
    assert not result.startswith("/") and not result.endswith("/") and "//" not in result


@given(st.text(max_size=20), st.text(max_size=20))
def test_never_accepts_traversal_anywhere(left: str, right: str) -> None:
    assert isinstance(validate_path(f"{left}..{right}"), FetchError)


# ------------------------------------------------------------------------- results


def test_result_shapes() -> None:
    assert msgspec.to_builtins(success("hello é")) == {"ok": True, "content": "hello é", "bytes": 8}
    assert msgspec.to_builtins(file_not_found("INSTALL.md")) == {
        "ok": False,
        "error_type": FILE_NOT_FOUND,
        "message": "File not found: INSTALL.md",
    }
    assert not_a_file("docs").message == "Path is not a file: docs"
    assert not_a_file("docs").error_type == API_ERROR
    assert api_error("502 Bad Gateway").message == "Failed to read file: 502 Bad Gateway"
    assert too_large().message == TOO_LARGE_MESSAGE
    assert TOO_LARGE_MESSAGE == (
        "File exceeds 50KB limit. Try a more specific path or request a summary."
    )


@pytest.mark.parametrize(
    ("meta", "content", "expected"),
    [
        ({"type": "file", "size": 5}, "hello", FetchOk(content="hello", bytes=5)),
        ({"type": "file", "size": 0}, None, FetchOk(content="", bytes=0)),
        ({"type": "file", "size": 51201}, "x", too_large()),
        ({"type": "file", "size": 51200}, "x" * 51200, FetchOk(content="x" * 51200, bytes=51200)),
        ({"type": "dir", "size": 0}, None, not_a_file("p")),
        ({"type": "symlink", "size": 4}, None, not_a_file("p")),
        ({"type": "file"}, "x", None),
        ({"type": "file", "size": "12"}, "x", None),
    ],
)
def test_from_contents(meta: dict[str, object], content: str | None, expected: object) -> None:
    result = from_contents("p", meta, content)
    if expected is None:  # missing or malformed size
        assert isinstance(result, FetchError) and result.error_type == API_ERROR
        assert result.message.startswith("Failed to read file:")
    else:
        assert result == expected
