"""The OpenPGP check, with GnuPG and keys generated here: a good signature names its
key, a changed file or a key the recipe does not pin is refused, and without gpg the
error names the Debian packages to install."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.fakes.openpgp import SigningKey
from tsukud.errors import CATALOGUE, ExitCode
from tsukud.install.openpgp import (
    OpenPGPUnavailable,
    SignatureInvalid,
    SignatureKeyMismatch,
    primary_fingerprints,
    signed_by,
    verify_detached,
)


@pytest.fixture(scope="module")
def keys() -> Iterator[tuple[SigningKey, SigningKey]]:
    with SigningKey() as signer, SigningKey("Other <other@example.test>") as other:
        yield signer, other


def test_a_good_signature_returns_the_pinned_key(
    keys: tuple[SigningKey, SigningKey], tmp_path: Path
) -> None:
    signer, _ = keys
    data = tmp_path / "awscli.zip"
    data.write_bytes(b"the payload")
    spaced = " ".join(signer.fingerprint[i : i + 4] for i in range(0, 40, 4)).lower()
    got = verify_detached(
        data, signer.sign(b"the payload"), signer.public_key(), spaced, name="awscli.zip"
    )
    assert got == signer.fingerprint


def test_a_changed_file_is_refused(keys: tuple[SigningKey, SigningKey], tmp_path: Path) -> None:
    signer, _ = keys
    data = tmp_path / "f"
    data.write_bytes(b"the payload, changed")
    with pytest.raises(SignatureInvalid, match="does not verify") as caught:
        verify_detached(
            data, signer.sign(b"the payload"), signer.public_key(), signer.fingerprint, name="f"
        )
    assert not isinstance(caught.value, SignatureKeyMismatch)
    assert "BAD signature" in caught.value.message


def test_a_signature_by_another_key_in_the_same_file_is_refused(
    keys: tuple[SigningKey, SigningKey], tmp_path: Path
) -> None:
    """The key file may carry several keys; only the pinned one may vouch."""
    signer, other = keys
    data = tmp_path / "f"
    data.write_bytes(b"x")
    both = signer.public_key() + other.public_key()
    with pytest.raises(SignatureInvalid, match="does not verify"):
        verify_detached(data, other.sign(b"x"), both, signer.fingerprint, name="f")


def test_a_key_file_without_the_pinned_key_is_refused(
    keys: tuple[SigningKey, SigningKey], tmp_path: Path
) -> None:
    signer, other = keys
    data = tmp_path / "f"
    data.write_bytes(b"x")
    with pytest.raises(SignatureKeyMismatch) as caught:
        verify_detached(data, other.sign(b"x"), other.public_key(), signer.fingerprint, name="f")
    assert other.fingerprint in caught.value.message
    assert signer.fingerprint in caught.value.message
    with pytest.raises(SignatureKeyMismatch, match="no key at all"):
        verify_detached(data, other.sign(b"x"), b"not a key", signer.fingerprint, name="f")


def test_without_gnupg_the_error_names_the_packages(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    data = tmp_path / "f"
    data.write_bytes(b"x")
    with pytest.raises(OpenPGPUnavailable) as caught:
        verify_detached(data, b"", b"", "A" * 40, name="f")
    assert "apt-get install gpg gpgv" in (caught.value.hint or "")
    assert CATALOGUE[caught.value.code].exit_code == ExitCode.DEPENDENCY_FAILED


def test_status_and_colon_parsing() -> None:
    colons = (
        "pub:u:255:22:AAAA:1::::::scSC:\nfpr:::::::::" + "A" * 40 + ":\n"
        "sub:u:255:18:BBBB:1::::::e:\nfpr:::::::::" + "B" * 40 + ":\n"
    )
    assert primary_fingerprints(colons) == ["A" * 40]
    good = (
        "[GNUPG:] NEWSIG\n[GNUPG:] GOODSIG X n\n[GNUPG:] VALIDSIG "
        + "S" * 40
        + (" 2026-01-01 1 0 4 0 22 10 00 " + "P" * 40 + "\n")
    )
    assert signed_by(good) == "P" * 40
    assert signed_by(good + "[GNUPG:] BADSIG X n\n") is None
    assert signed_by("[GNUPG:] NEWSIG\n") is None
