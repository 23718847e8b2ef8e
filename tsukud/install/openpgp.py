"""OpenPGP detached signatures, checked by GnuPG (``gpg`` + ``gpgv``), never by hand.

A recipe pins the signing key by fingerprint (``signature_key_fingerprint``) and names
where the key and the signature are (``signature_key_url``, ``signature_url``). The
check, in a throw-away GnuPG home that is deleted afterwards (the user's keyrings are
never read nor written):

1. ``gpg --import`` the key file, then list what it held (``--with-colons``): the
   recipe's fingerprint must be the *primary* key of one of them, or the key file is
   not the one the recipe pins (:class:`SignatureKeyMismatch`);
2. ``gpg --export`` that one key into a keyring of its own, so no other key the file
   carried can vouch for the download;
3. ``gpgv --keyring <that keyring> --status-fd 1 <sig> <file>`` and read its status
   lines: a ``VALIDSIG`` whose primary-key fingerprint is the pinned one (and no
   ``BADSIG``/``ERRSIG``/``EXPKEYSIG``/``REVKEYSIG``) is a good signature; anything else
   is :class:`SignatureInvalid`.

Why GnuPG rather than a Python library: Debian ships ``gpg`` and ``gpgv`` on almost
every machine (``gpgv`` verifies apt's own repositories), they are maintained against
the OpenPGP attacks a hand-rolled reader would miss, and ``gpgv``'s only notion of
trust is "the keyring you gave me", which is exactly the pinned-fingerprint model
(``sqv`` would do too, but is rarely installed; Python's ``pgpy`` is unmaintained).
Plain functions run in a worker thread by the caller; the tools are looked up on
``PATH`` (or given), so a missing one is :class:`OpenPGPUnavailable`, naming the
Debian packages.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from pathlib import Path

from tsukud.errors import TsukuError
from tsukud.recipe.model import normalize_fingerprint

GPG_TIMEOUT = 60.0
_BAD_STATUS = ("BADSIG", "ERRSIG", "EXPKEYSIG", "REVKEYSIG", "EXPSIG", "NO_PUBKEY")
PACKAGES = "gpg and gpgv (Debian: `sudo apt-get install gpg gpgv`)"


class OpenPGPUnavailable(TsukuError):
    """``gpg`` or ``gpgv`` is not installed, so a signed download cannot be checked."""

    code = "openpgp_unavailable"


class SignatureInvalid(TsukuError):
    """The detached signature does not verify the downloaded file with the pinned key."""

    code = "signature_invalid"


class SignatureKeyMismatch(SignatureInvalid):
    """The key file does not hold the key the recipe pins by fingerprint."""

    code = "signature_key_mismatch"


def _tool(name: str, given: str | None) -> str:
    found = given or shutil.which(name)
    if found is None:
        raise OpenPGPUnavailable(
            f"{name} is not installed: the recipe's download is signed and tsuku checks "
            "OpenPGP signatures with GnuPG",
            hint=f"Install {PACKAGES}; nothing was installed.",
            tool=name,
        )
    return found


def _run(argv: Sequence[str], what: str) -> subprocess.CompletedProcess[bytes]:
    try:
        return subprocess.run(
            list(argv),
            capture_output=True,
            timeout=GPG_TIMEOUT,
            check=False,
            stdin=subprocess.DEVNULL,
        )
    except subprocess.TimeoutExpired:
        raise SignatureInvalid(f"{what}: GnuPG did not answer within {GPG_TIMEOUT:.0f}s") from None


def primary_fingerprints(colons: str) -> list[str]:
    """The primary keys' fingerprints in ``gpg --with-colons`` output: the ``fpr`` record
    right after each ``pub`` record (a subkey's ``fpr`` follows ``sub``)."""
    out: list[str] = []
    previous = ""
    for line in colons.splitlines():
        fields = line.split(":")
        if fields[0] == "fpr" and previous == "pub" and len(fields) > 9:
            out.append(fields[9].upper())
        if fields[0] in ("pub", "sub", "sec", "ssb"):
            previous = fields[0]
        elif fields[0] == "fpr":
            previous = "fpr"
    return out


def signed_by(status: str) -> str | None:
    """The primary-key fingerprint of a good signature in ``gpgv --status-fd`` output, or
    None when the status lines do not show one good signature and nothing bad."""
    good: str | None = None
    for line in status.splitlines():
        if not line.startswith("[GNUPG:] "):
            continue
        fields = line.split()[1:]
        if not fields:
            continue
        if fields[0] in _BAD_STATUS:
            return None
        if fields[0] == "VALIDSIG" and len(fields) >= 2:
            # VALIDSIG <fpr> <date> <ts> <expire> <ver> <rsv> <pk-algo> <hash> <class> <primary-fpr>
            good = (fields[10] if len(fields) >= 11 else fields[1]).upper()
    return good


def verify_detached(
    data: Path,
    signature: bytes,
    key: bytes,
    fingerprint: str,
    *,
    name: str,
    gpg: str | None = None,
    gpgv: str | None = None,
) -> str:
    """Check that ``signature`` (armored or binary) signs ``data`` with the key whose
    primary fingerprint is ``fingerprint``, taken from the key file ``key``. Returns the
    fingerprint on success; ``name`` is the file's name for messages."""
    want = normalize_fingerprint(fingerprint)
    gpg_bin, gpgv_bin = _tool("gpg", gpg), _tool("gpgv", gpgv)
    with tempfile.TemporaryDirectory(prefix="tsuku-gpg-") as tmp:
        home = Path(tmp)
        home.chmod(0o700)
        (home / "key").write_bytes(key)
        (home / "sig").write_bytes(signature)
        base = [gpg_bin, "--homedir", str(home), "--batch", "--no-tty", "--quiet"]
        imported = _run([*base, "--import", str(home / "key")], name)
        listed = _run([*base, "--with-colons", "--fingerprint", "--list-keys"], name)
        found = primary_fingerprints(listed.stdout.decode("utf-8", "replace"))
        if want not in found:
            held = ", ".join(found) or "no key at all"
            detail = "" if found else f" ({_last_line(imported.stderr)})"
            raise SignatureKeyMismatch(
                f"{name}: the signing key file holds {held}{detail}, not the key the recipe "
                f"pins ({want})",
                hint="The key at signature_key_url is not the one the recipe trusts; nothing "
                "was installed. Check the recipe's signature_key_fingerprint.",
                file=name,
                expected=want,
                found=found,
            )
        exported = _run([*base, "--export", want], name)
        if not exported.stdout:
            raise SignatureKeyMismatch(f"{name}: GnuPG could not export key {want}", file=name)
        keyring = home / "trusted.gpg"
        keyring.write_bytes(exported.stdout)
        checked = _run(
            [
                gpgv_bin,
                "--homedir",
                str(home),
                "--keyring",
                str(keyring),
                "--status-fd",
                "1",
                str(home / "sig"),
                str(data),
            ],
            name,
        )
        signer = signed_by(checked.stdout.decode("utf-8", "replace"))
        if checked.returncode != 0 or signer != want:
            raise SignatureInvalid(
                f"{name}: the OpenPGP signature does not verify with key {want} "
                f"({_last_line(checked.stderr) or 'gpgv found no good signature'})",
                hint="The download is not what the key's owner signed; nothing was installed.",
                file=name,
                key=want,
            )
        return want


def _last_line(stderr: bytes) -> str:
    lines = [ln.strip() for ln in stderr.decode("utf-8", "replace").splitlines() if ln.strip()]
    return lines[-1] if lines else ""
