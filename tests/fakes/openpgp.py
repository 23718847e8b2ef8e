"""Real OpenPGP keys and detached signatures for tests, made by GnuPG in a temporary
home (an ed25519 key, no passphrase), so the installer's check meets what a vendor
such as AWS publishes: an armored public key and a detached signature per file."""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path
from types import TracebackType


class SigningKey:
    """A throw-away signing key; use as a context manager (the home is deleted, and
    the gpg-agent the key generation started is stopped)."""

    def __init__(self, uid: str = "Test Signer <signer@example.test>") -> None:
        self._home = Path(tempfile.mkdtemp(prefix="tsuku-test-gpg-"))
        self._home.chmod(0o700)
        self._gpg("--passphrase", "", "--quick-gen-key", uid, "ed25519", "sign", "never")
        listed = self._gpg("--with-colons", "--fingerprint", "--list-keys").decode()
        self.fingerprint = next(
            line.split(":")[9] for line in listed.splitlines() if line.startswith("fpr:")
        )

    def _gpg(self, *args: str) -> bytes:
        argv = ["gpg", "--homedir", str(self._home), "--batch", "--quiet", *args]
        return subprocess.run(argv, check=True, capture_output=True).stdout

    def public_key(self) -> bytes:
        """The armored public key, as a vendor publishes it."""
        return self._gpg("--armor", "--export", self.fingerprint)

    def sign(self, data: bytes) -> bytes:
        """A detached, armored signature of ``data``."""
        path = self._home / "payload"
        path.write_bytes(data)
        try:
            return self._gpg("--armor", "--detach-sign", "--output", "-", str(path))
        finally:
            path.unlink()

    def close(self) -> None:
        subprocess.run(
            ["gpgconf", "--homedir", str(self._home), "--kill", "gpg-agent"],
            check=False,
            capture_output=True,
        )
        shutil.rmtree(self._home, ignore_errors=True)

    def __enter__(self) -> SigningKey:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
