"""The one redactor: what counts as a secret, one marker, one threshold, every sink."""

from __future__ import annotations

import json
import sqlite3
import typing
from pathlib import Path

import msgspec
import pytest
import trio
from hypothesis import given
from hypothesis import strategies as st

from tsukud.clock import FixedClock
from tsukud.events.store import EventStore
from tsukud.secrets import MIN_SECRET_LENGTH, REDACTED, Redactor, is_secret_name, redact


@pytest.mark.parametrize(
    ("text", "leaked"),
    [
        # Credential-like keys, whatever the value's characters (digits included).
        ("password=12345678", "12345678"),
        ("token: 9999999999", "9999999999"),
        ("export GITHUB_TOKEN=0000", "0000"),
        ("db_pwd = hunter2", "hunter2"),
        ("DB_PASS=s3cr3t OTHER=1", "s3cr3t"),
        ("smtp.pass: s3cr3t", "s3cr3t"),
        # After ':' a bare value runs to the end of the line (YAML, headers).
        ("passphrase: correct horse battery", "horse battery"),
        ("password: two words\nnext line", "two words"),
        ('{"api_key": "has spaces in it"}', "has spaces in it"),
        ("client_secret: 'quoted value'", "quoted value"),
        ("x-api-key: abc", "abc"),
        ("GET /cb?access_token=zz9&state=1", "zz9"),
        ("aws_secret_access_key=wJalrXUtnFEMI", "wJalrXUtnFEMI"),
        ("< Set-Cookie: sid=31d4d96e407aad42; Path=/", "31d4d96e407aad42"),
        # Headers, URLs and key blocks.
        ("Authorization: Bearer abc.def.ghi", "abc.def.ghi"),
        ("proxy-authorization: Basic dXNlcjpwYXNz", "dXNlcjpwYXNz"),
        ("curl https://user:hunter22@example.com/x", "hunter22"),
        ("-----BEGIN RSA PRIVATE KEY-----\nMIIEow\n-----END RSA PRIVATE KEY-----", "MIIEow"),
        # Token shapes nobody registered.
        ("echoed ghp_" + "A1b2" * 9, "ghp_"),
        ("key sk-ant-api03-" + "x1Y2" * 10, "sk-ant-"),
        ("key AIzaSyA1234567890abcdefghijklmnopqrstuv", "AIza"),
    ],
)
def test_secrets_are_redacted(text: str, leaked: str) -> None:
    out = redact(text)
    assert leaked not in out and REDACTED in out, out


@pytest.mark.parametrize(
    "text",
    [
        "max_tokens: 4096",
        "input_tokens=12, token_count=3",
        "secrets: 3",
        "PWD=/tmp OLDPWD=/root",
        "pass: 3, fail: 0",
        "compass: north bypass: yes",
        "DB_PASS=s3cr3t OTHER=1".replace("s3cr3t", REDACTED),
        "mytoken=abc",
        "error: token expired",
        "ripgrep 14.1.0 (rev 1a2b3c)",
    ],
)
def test_ordinary_text_is_kept(text: str) -> None:
    assert redact(text) == text


@pytest.mark.parametrize(
    ("text", "leaked"),
    [
        # A ``_KEY``/``-key`` suffix names a key, whatever comes before it.
        ("STRIPE_KEY=abc123def", "abc123def"),
        ("SIGNING_KEY: k3y-material", "k3y-material"),
        ("signing-key = zz9plural", "zz9plural"),
        ('{"deploy_key": "dk-1"}', "dk-1"),
        # ``auth`` as a word or after a separator, and npm's ``_authToken``.
        ("NPM_AUTH=bnBtOnNlY3JldA", "bnBtOnNlY3JldA"),
        ("auth: user:pw1", "user:pw1"),
        ("//registry.npmjs.org/:_authToken=npm_abcd", "npm_abcd"),
        # Credential flags on a command line, the value a separate word.
        ("mysql --password hunter2xyz -h db", "hunter2xyz"),
        ("gh --token abcdefgh123", "abcdefgh123"),
        ("tool --passwd p4ss --verbose", "p4ss"),
        ("vault --secret 's p a c e d'", "s p a c e d"),
        ("cli --api-key AK1234", "AK1234"),
        ("cli --apikey AK1234", "AK1234"),
        ("ci --github-token 0000", "0000"),
        ("npm --auth zzyzx", "zzyzx"),
    ],
)
def test_more_credential_names_and_flags_are_redacted(text: str, leaked: str) -> None:
    out = redact(text)
    assert leaked not in out and REDACTED in out, out
    assert redact(out) == out


@pytest.mark.parametrize(
    "text",
    [
        # Words that merely contain ``key`` or ``auth``.
        "keyboard=us monkey=3 turkey: roast donkey=1",
        "author=jane authority: root authors: 3 oauth=enabled",
        # A bare ``key`` is how tsuku names a setting; ``.key`` is a file.
        "unknown key: llm.foo",
        "key=llm.provider",
        "server.key: no such file",
        # Flags that are not followed by a credential.
        "--max-tokens 4096",
        "docker login --password-stdin",
        "--token-file /run/token --verbose",
        "--token --verbose",
        "--password",
        "passwords are hashed; authentication failed",
    ],
)
def test_ordinary_words_and_flags_are_kept(text: str) -> None:
    assert redact(text) == text


def test_secret_names() -> None:
    secret = ["GITHUB_TOKEN", "token", "x-api-key", "client_secret", "Authorization", "db_pwd"]
    secret += ["DB_PASS", "smtp.pass", "STRIPE_KEY", "signing-key", "auth", "NPM_AUTH"]
    secret += ["_authToken", "tavily_key"]
    plain = ["max_tokens", "token_count", "secrets", "PWD", "mytoken", "session", "key"]
    plain += ["pass", "compass", "bypass", "monkey", "keyboard", "author", "authority"]
    plain += ["oauth", "server.key", "keys"]
    assert all(is_secret_name(n) for n in secret)
    assert not any(is_secret_name(n) for n in plain)


def test_one_threshold_for_registered_values() -> None:
    short = "k" * (MIN_SECRET_LENGTH - 1)
    long = "q" * MIN_SECRET_LENGTH
    r = Redactor([short, long, None, ""])
    assert r.values == (long,)
    assert r.text(f"a {short} b {long} c") == f"a {short} b {REDACTED} c"
    # The longer of two overlapping values is replaced whole.
    assert redact("x abcdefghij y", ["abcdefgh", "abcdefghij"]) == f"x {REDACTED} y"


def test_short_registered_values_down_to_the_threshold_are_redacted() -> None:
    """A registered value is known to be a secret, so a short one goes too; only values
    under the one threshold stay, or "1" would be replaced everywhere."""
    assert MIN_SECRET_LENGTH == 4
    env = {"DB_PASSWORD": "pw12", "PIN": "7391", "FLAG": "1", "MODE": "on"}
    out = redact("pw12 then 7391 then 1 then on, version 1.0", env.values())
    assert "pw12" not in out and "7391" not in out
    assert out == f"{REDACTED} then {REDACTED} then 1 then on, version 1.0"
    r = Redactor()
    with r.scoped(["abcd", "xyz"]):
        assert r.values == ("abcd",)
        assert r.suspect("abcd") and r.text("an abcd xyz") == f"an {REDACTED} xyz"


def test_scoped_values_are_redacted_only_inside_the_block() -> None:
    r = Redactor(["configured-key-1"])
    env = {"PATH": "/opt/tsuku/bin:/usr/bin", "HOME": "/tmp", "DEPLOY_SECRET_VALUE": "s3cr3t!!zz"}
    output = "configured-key-1 then s3cr3t!!zz then /opt/tsuku/bin:/usr/bin"
    with r.scoped(env.values()):
        assert r.text(output) == f"{REDACTED} then {REDACTED} then {REDACTED}"
    assert r.text(output) == f"{REDACTED} then s3cr3t!!zz then /opt/tsuku/bin:/usr/bin"
    # The same environment handed to the pure function (what validation uses).
    assert "s3cr3t!!zz" not in redact(output, env.values())


def test_structures_lose_named_fields_and_values_inside_strings() -> None:
    r = Redactor(["ghp_0123456789abcdef"])
    out = r.value(
        {
            "token": 9999999999,
            "password": "x",
            "secret": True,  # a flag saying a setting is secret, not a secret
            "max_tokens": 4096,
            "nested": [{"note": "Authorization: Bearer abcdefgh"}, ("ghp_0123456789abcdef",)],
        }
    )
    assert out == {
        "token": REDACTED,
        "password": REDACTED,
        "secret": True,
        "max_tokens": 4096,
        "nested": [{"note": f"Authorization: {REDACTED}"}, [REDACTED]],
    }


_PIECES = st.sampled_from(
    ["password=", "token: ", "Bearer ", "ghp_" + "a" * 20, '"api_key": "', "'", '"', " ", "\n"]
)


@given(st.lists(st.one_of(_PIECES, st.text(max_size=12)), max_size=12))
def test_redaction_is_idempotent(parts: list[str]) -> None:
    once = redact("".join(parts))
    assert redact(once) == once


@given(st.text(max_size=40), st.from_regex(r"[!-~]{1,20}", fullmatch=True))
def test_any_value_of_a_password_key_is_redacted(before: str, value: str) -> None:
    value = value.strip("\"',;&)]}")
    if not value or value.startswith(REDACTED):
        return
    out = redact(f"{before}\npassword={value}\n")
    assert f"password={value}\n" not in out


async def test_event_store_redacts_the_payload_and_keeps_valid_json(tmp_path: Path) -> None:
    path = tmp_path / "tsuku.db"
    store = EventStore(path, clock=FixedClock(1_800_000_000.0), redactor=Redactor())
    store.open()
    payload = {
        "msg": 'curl -H "Authorization: Bearer abcdefgh" said password="p a s s"',
        "token": 12345678,
        "count": 3,
    }
    async with trio.open_nursery() as nursery:
        await nursery.start(store.run)
        event = store.append_nowait("client.note", payload)  # client types are free-form
        await store.wait_durable(event.id)
        store.close()
    store.close_connection()
    assert event.payload["token"] == REDACTED and event.payload["count"] == 3
    conn = sqlite3.connect(path)
    (stored,) = conn.execute("SELECT payload FROM events").fetchone()
    conn.close()
    body = json.loads(stored)
    assert body == event.payload
    assert "abcdefgh" not in stored and "p a s s" not in stored and "12345678" not in stored


def test_no_catalogued_event_field_has_a_credential_name() -> None:
    """The store redacts credential-named fields whole; a catalogued field with such a
    name would turn into a string its readers could no longer decode."""
    from tsukud.events import catalogue

    seen: set[type] = set()
    found: list[str] = []

    def walk(tp: object) -> None:
        for arg in typing.get_args(tp):
            walk(arg)
        if isinstance(tp, type) and issubclass(tp, msgspec.Struct) and tp not in seen:
            seen.add(tp)
            for f in msgspec.structs.fields(tp):
                if is_secret_name(f.encode_name):
                    found.append(f"{tp.__name__}.{f.encode_name}")
                walk(f.type)

    for cls in catalogue.EVENTS.values():
        walk(cls)
    assert len(seen) > 30 and found == []


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # Issue 29/31: the second pair's name was eaten with a stray bracket left.
        ("token: 987654321 password=hunter2", f"token: {REDACTED} password={REDACTED}"),
        ("password: x1 GITHUB_TOKEN: y2", f"password: {REDACTED} GITHUB_TOKEN: {REDACTED}"),
        ("token: abc ghp_" + "a" * 36, f"token: {REDACTED} {REDACTED}"),
        # A path's word is not a key's name: the refusal says what it refused, and why.
        (
            "refusing file:///etc/passwd: (not an http(s) URL)",
            "refusing file:///etc/passwd: (not an http(s) URL)",
        ),
        ("cannot read C:\\secrets\\token: denied", "cannot read C:\\secrets\\token: denied"),
    ],
)
def test_a_message_keeps_what_is_not_a_secret_around_what_is(text: str, expected: str) -> None:
    assert redact(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        # A value that holds other words (but no credential pair) is still one value.
        "password: correct horse=battery staple",
        "api_key: a b: c",
        "passphrase: open sesame, please",
    ],
)
def test_a_colon_value_is_not_cut_short_by_ordinary_words(text: str) -> None:
    value = text.split(": ", 1)[1].split(",")[0]
    assert value not in redact(text) and value.split()[-1] not in redact(text)


# ---- one search of a batch (the ledger's append path) ------------------------------------

_PIECES = st.sampled_from(
    ["token", "TOKEN", "Api_Key", "sk-", "SK-", "://", "ghp_", "eyJ", "to\u212aen", "k", "to",
     "ken", "1", "42", "0.5", '"', ":", ",", "{", "}", " ", "note", "value", "\u00e9", "s3ss10n"]
)  # fmt: skip


@given(st.lists(st.lists(_PIECES, max_size=6).map("".join), min_size=1, max_size=8))
def test_a_batch_is_flagged_exactly_at_the_texts_one_by_one_would_flag(texts: list[str]) -> None:
    """``suspects`` finds its indexes with one search of the batch first (case folded
    as bytes, digits dropped, repeats searched once): it must name exactly the texts
    ``suspect`` flags one by one, whatever their case, digits or non-ASCII letters."""
    r = Redactor(["correct-horse"])
    assert r.suspects(texts) == [i for i, t in enumerate(texts) if r.suspect(t)]


@pytest.mark.parametrize(
    "odd_one",
    [
        '{"note":"a TOKEN here"}',  # upper case: folded, not missed
        '{"note":"to\u212aen"}',  # the Kelvin sign lowers to an ASCII k
        '{"n":7,"note":"Bearer 12"}',  # among texts that differ only in their digits
        '{"note":"correct-horse"}',  # a registered value
    ],
)
def test_one_suspect_text_among_many_ordinary_ones_is_found(odd_one: str) -> None:
    texts = [f'{{"n":{i},"note":"benchmark event"}}' for i in range(500)]
    texts[321] = odd_one
    assert Redactor(["correct-horse"]).suspects(texts) == [321]
