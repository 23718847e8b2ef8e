"""Repair feedback: redaction, tail-keeping truncation, and error categories."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tsukud.secrets import REDACTED
from tsukud.validation import sanitize as s
from tsukud.validation.sanitize import IP, categorize, redact, sanitize, truncate_tail

# ------------------------------------------------------------------------- IPv4 rule


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # Addresses: URL hosts, ports, after @, CIDR, inet contexts, bare in prose.
        ("GET https://10.0.0.5/x failed", f"GET https://{IP}/x failed"),
        ("dial tcp 192.168.1.20:443: connect: refused", f"dial tcp {IP}:443: connect: refused"),
        ("ssh git@172.16.0.1", f"ssh git@{IP}"),
        ("route 10.1.0.0/16 via eth0", f"route {IP}/16 via eth0"),
        ("inet 192.168.0.12 netmask 255.255.255.0", f"inet {IP} netmask {IP}"),
        ("inet addr:10.0.2.15", f"inet addr:{IP}"),
        ("connecting to 8.8.8.8.", f"connecting to {IP}."),
        ("(127.0.0.1)", f"({IP})"),
        # Versions: glued to words, prerelease suffixes, longer dotted runs, version words.
        ("tool v1.2.3.4", "tool v1.2.3.4"),
        ("tool-1.2.3.4-linux-amd64.tar.gz", "tool-1.2.3.4-linux-amd64.tar.gz"),
        ("release 1.2.3.4-rc1 is out", "release 1.2.3.4-rc1 is out"),
        ("build 1.2.3.4+abc", "build 1.2.3.4+abc"),
        ("chrome 120.0.6099.109", "chrome 120.0.6099.109"),
        ("libfoo 1.2.3.4.5", "libfoo 1.2.3.4.5"),
        ("version 1.2.3.4", "version 1.2.3.4"),
        ("Version: 10.0.0.1", "Version: 10.0.0.1"),
        ('ver="2.0.0.1"', 'ver="2.0.0.1"'),
        # Three-part versions are never addresses.
        ("gitleaks 8.30.0 and v1.2.3", "gitleaks 8.30.0 and v1.2.3"),
        # Octets over 255 are not addresses.
        ("2024.01.300.1", "2024.01.300.1"),
    ],
)
def test_ipv4_rule(text: str, expected: str) -> None:
    assert redact(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("listen on [::1]:8080", f"listen on [{IP}]:8080"),
        ("from 2001:db8::8a2e:370:7334 port 22", f"from {IP} port 22"),
        ("fe80::1%eth0 up", f"{IP} up"),
        ("addr 2001:0db8:85a3:0000:0000:8a2e:0370:7334", f"addr {IP}"),
        ("std::vector and Foo::Bar", "std::vector and Foo::Bar"),
        ("at 12:34:56 UTC", "at 12:34:56 UTC"),
    ],
)
def test_ipv6(text: str, expected: str) -> None:
    assert redact(text) == expected


# ------------------------------------------------------------------- other redaction


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("open /home/alice/.config/x", "open $HOME/.config/x"),
        ("cd /Users/bob/src", "cd $HOME/src"),
        ("ls /root/.ssh", "ls $HOME/.ssh"),
        ("C:\\Users\\carol\\AppData", "%USERPROFILE%\\AppData"),
        ("/usr/lib/x86_64-linux-gnu/libc.so.6", "/usr/lib/x86_64-linux-gnu/libc.so.6"),
        ("/var/rootfs/x", "/var/rootfs/x"),
    ],
)
def test_home_directories(text: str, expected: str) -> None:
    assert redact(text) == expected


@pytest.mark.parametrize(
    "secret",
    [
        "ghp_" + "A1b2" * 9,
        "github_pat_11ABCDEFG0123456789_abcdefghijklmnop",
        "sk-ant-api03-" + "x1Y2" * 10,
        "sk-proj-" + "abcd1234" * 4,
        "AIzaSyA1234567890abcdefghijklmnopqrstuv",
        "xoxb-1234567890-abcdefghij",
        "AKIAIOSFODNN7EXAMPLE",
        "glpat-" + "a1B2" * 5,
        "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N",
    ],
)
def test_token_formats(secret: str) -> None:
    out = redact(f"error: token {secret} rejected")
    assert secret not in out and REDACTED in out


def test_headers_urls_and_key_values() -> None:
    text = (
        "Authorization: Bearer abc.def.ghi\n"
        "authorization=token zzzzzzzz\n"
        "curl https://user:hunter2@example.com/x\n"
        "export GITHUB_TOKEN=abcdef123456\n"
        'api_key: "k-9876543210"\n'
        "password=swordfish\n"
        "max_tokens: 4096\n"
        "Bearer eyJ0eXAiOiJKV1Qi\n"
    )
    out = redact(text)
    for leaked in (
        "abc.def.ghi",
        "zzzzzzzz",
        "hunter2",
        "abcdef123456",
        "k-9876543210",
        "swordfish",
        "eyJ0eXAiOiJKV1Qi",
    ):
        assert leaked not in out, leaked
    assert "https://[REDACTED]@example.com/x" in out
    assert "max_tokens: 4096" in out  # numbers are not secrets


def test_known_secret_values() -> None:
    assert redact("key is q9w8e7r6t5", secrets=["q9w8e7r6t5", "short"]) == f"key is {REDACTED}"


_SEPARATORS = st.sampled_from([" ", "\n", "=", ": ", '"', "'", "(", "\t", ","])
_TOKENS = st.one_of(
    st.from_regex(r"ghp_[A-Za-z0-9]{36}", fullmatch=True),
    st.from_regex(r"github_pat_[A-Za-z0-9_]{40}", fullmatch=True),
    st.from_regex(r"sk-ant-api03-[A-Za-z0-9_-]{40}", fullmatch=True),
    st.from_regex(r"AIza[0-9A-Za-z_-]{35}", fullmatch=True),
    st.from_regex(r"xox[abp]-[0-9]{10}-[A-Za-z0-9]{12}", fullmatch=True),
)


@given(st.text(max_size=300), _SEPARATORS, _TOKENS, _SEPARATORS, st.text(max_size=300))
def test_planted_token_never_gets_through(
    before: str, sep1: str, token: str, sep2: str, after: str
) -> None:
    out = sanitize(before + sep1 + token + sep2 + after, limit=400)
    assert token not in out


@given(st.text(max_size=200), st.from_regex(r"Bearer [A-Za-z0-9._~+/-]{12,40}", fullmatch=True))
def test_planted_bearer_never_gets_through(before: str, header: str) -> None:
    token = header.split(" ", 1)[1]
    assert token not in sanitize(f"{before}\nAuthorization: {header}\n")
    assert token not in sanitize(f"{before} {header} ")


# ------------------------------------------------------------------------ truncation


def test_truncation_keeps_the_tail() -> None:
    text = "\n".join(f"line {i}" for i in range(1000)) + "\nFATAL: the real error"
    out = truncate_tail(text, 500)
    assert len(out) <= 500
    assert out.endswith("FATAL: the real error")
    assert out.startswith("[… ") and "earlier characters truncated" in out
    assert out.splitlines()[1].startswith("line ")  # starts on a line boundary
    assert truncate_tail("short", 500) == "short"


@given(st.text(max_size=3000), st.integers(min_value=80, max_value=2000))
def test_truncation_bound_and_tail(text: str, limit: int) -> None:
    out = truncate_tail(text, limit)
    assert len(out) <= max(limit, len(text) if len(text) <= limit else limit)
    if len(text) > limit:
        tail = out.split("…]\n", 1)[1]
        assert text.endswith(tail)


# ------------------------------------------------------------------------ categories


@pytest.mark.parametrize(
    ("output", "exit_code", "category"),
    [
        ("sh: 1: k9s: not found", 127, s.BINARY_NOT_FOUND),
        ("bash: tool: command not found", 127, s.BINARY_NOT_FOUND),
        ('exec: "tool": executable file not found in $PATH', 1, s.BINARY_NOT_FOUND),
        ("", 127, s.BINARY_NOT_FOUND),
        ("bash: ./tool: cannot execute binary file: Exec format error", 126, s.EXEC_FORMAT),
        ("exec /usr/bin/tool: exec format error", 1, s.EXEC_FORMAT),
        ('./tool: 1: Syntax error: "(" unexpected', 2, s.EXEC_FORMAT),
        (
            "tool: error while loading shared libraries: libssl.so.3: cannot open shared "
            "object file: No such file or directory",
            127,
            s.SHARED_LIBRARY,
        ),
        (
            "tool: /lib/x86_64-linux-gnu/libc.so.6: version `GLIBC_2.34' not found",
            1,
            s.SHARED_LIBRARY,
        ),
        ("Error relocating ./tool: __memcpy_chk: symbol not found", 127, s.SHARED_LIBRARY),
        ("bash: ./tool: Permission denied", 126, s.PERMISSION),
        ("", 126, s.PERMISSION),
        ("pattern mismatch\n  Missing: 1.2.3\n  Got: tool 1.2.2", 0, s.VERSION_MISMATCH),
        ("verify timed out after 300s", None, s.TIMEOUT),
        ("", 124, s.TIMEOUT),
        ("runtime output was empty", 1, s.UNKNOWN),
        (
            "download https://github.com/o/r/releases/download/v1/x: HTTP 404 Not Found",
            1,
            s.DOWNLOAD_404,
        ),
        (
            "no release asset named tool_linux_amd64.tar.gz; the release has: a, b",
            1,
            s.DOWNLOAD_404,
        ),
        ("dial tcp: lookup github.com: could not resolve host", 1, s.DOWNLOAD_FAILED),
        ("gzip: stdin: not in gzip format\ntar: Child returned status 1", 2, s.EXTRACTION),
        ("something odd", 3, s.UNKNOWN),
    ],
)
def test_categories(output: str, exit_code: int | None, category: str) -> None:
    diagnosis = categorize(output, exit_code)
    assert diagnosis.category == category
    assert diagnosis.suggestions == s.SUGGESTIONS[category]


def test_shared_library_names_the_libc() -> None:
    assert categorize("version `GLIBC_2.34' not found (required by ./tool)").libc == "glibc"
    assert categorize("Error relocating ./tool: symbol not found").libc == "musl"
    evidence = categorize("ok\nerror while loading shared libraries: libz.so.1\nbye").evidence
    assert evidence == "error while loading shared libraries: libz.so.1"


def test_every_category_has_suggestions() -> None:
    assert all(s.SUGGESTIONS[c] for c in s.SUGGESTIONS)
