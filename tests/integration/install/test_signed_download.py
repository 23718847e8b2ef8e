"""An awscli-like recipe whose ``download`` is signed (``signature_url`` +
``signature_key_url`` + ``signature_key_fingerprint``) installs through the daemon from
a plain download host, the signature checked by GnuPG against a key made here; a bad
signature, or a key file whose key is not the pinned one, is refused with nothing
installed."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.conftest import Tsuku
from tests.fakes.openpgp import SigningKey
from tests.integration.install.conftest import NO_SYSTEM_COMMANDS, events, installed, tree
from tests.integration.install.test_recipe_errors import local_recipe
from tests.integration.install.test_url_actions import HOST, host, run, script, zip_of
from tests.waiting import wait_until
from tsukud.testing.download_host import FakeDownloadHost

__all__ = ["host"]  # the download host fixture, shared with test_url_actions

ZIP = f"awscli-exe-{HOST.os}-{HOST.arch}-2.17.0.zip"


@pytest.fixture(scope="module")
def keys() -> Iterator[tuple[SigningKey, SigningKey]]:
    with SigningKey("AWS CLI Team <aws-cli@example.test>") as aws, SigningKey() as other:
        yield aws, other


def awscli_recipe(host: FakeDownloadHost, fingerprint: str) -> str:
    return f"""[metadata]
name = "awscli"
description = "Universal Command Line Interface for Amazon Web Services"

[version]
source = "http_json"
url = "{host.url}/v.json"
version_path = "version"

[[steps]]
action = "download"
url = "{host.url}/awscli-exe-{{os}}-{{arch}}-{{version}}.zip"
signature_url = "{host.url}/awscli-exe-{{os}}-{{arch}}-{{version}}.zip.sig"
signature_key_url = "{host.url}/aws-cli-team.asc"
signature_key_fingerprint = "{fingerprint}"

[[steps]]
action = "extract"
archive = "awscli-exe-{{os}}-{{arch}}-{{version}}.zip"
format = "zip"

[[steps]]
action = "install_binaries"
binaries = ["aws/dist/aws"]

[verify]
command = "aws --version"
pattern = "aws-cli/{{version}}"
"""


def serve(
    host: FakeDownloadHost,
    signer: SigningKey,
    key: SigningKey,
    members: dict[str, bytes] | None = None,
) -> bytes:
    """The version document, the zip (``members``), its signature by ``signer`` and
    ``key``'s public key at the recipe's URLs; returns the zip."""
    archive = zip_of(members or {"aws/dist/aws": script("aws-cli/2.17.0 Python/3.11")})
    host.add_json("/v.json", {"version": "2.17.0"})
    host.add(f"/{ZIP}", archive, sha256_file=False)
    host.add(f"/{ZIP}.sig", signer.sign(archive), sha256_file=False)
    host.add("/aws-cli-team.asc", key.public_key(), sha256_file=False)
    return archive


def test_an_awscli_like_signed_download_installs(
    inst: Tsuku, host: FakeDownloadHost, keys: tuple[SigningKey, SigningKey]
) -> None:
    aws, _ = keys
    serve(host, aws, aws)
    local_recipe(inst, "awscli", awscli_recipe(host, aws.fingerprint))

    cp = inst.ctl("install", "awscli", shell_env=NO_SYSTEM_COMMANDS)
    assert cp.returncode == 0, cp.stderr
    assert "aws-cli/2.17.0" in run(inst.home / "bin" / "aws")
    done = [e for e in events(inst) if e["type"] == "install.completed"][-1]["payload"]
    (asset,) = done["assets"]
    assert asset["checked_against"] == ["openpgp_signature"]
    assert asset["signed_by"] == aws.fingerprint
    assert {f"/{ZIP}", f"/{ZIP}.sig", "/aws-cli-team.asc"} <= set(host.fetched())

    assert inst.ctl("remove", "awscli").returncode == 0
    assert tree(inst.home) == []


@pytest.mark.parametrize("wrong", ["signature", "key"])
def test_a_bad_signature_or_another_key_is_refused(
    inst: Tsuku, host: FakeDownloadHost, keys: tuple[SigningKey, SigningKey], wrong: str
) -> None:
    aws, other = keys
    if wrong == "signature":  # signed by the pinned key, but not this file
        archive = serve(host, aws, aws)
        host.files[f"/{ZIP}.sig"] = aws.sign(archive + b"tampered")
        code, fragment = "signature_invalid", "does not verify"
    else:  # the key URL serves another key (and the file is signed by it)
        serve(host, other, other)
        code, fragment = "signature_key_mismatch", "not the key the recipe pins"
    local_recipe(inst, "awscli", awscli_recipe(host, aws.fingerprint))

    cp = inst.ctl("install", "awscli")
    assert cp.returncode == 6, cp.stderr
    assert fragment in cp.stderr
    failed = [e for e in events(inst) if e["type"] == "install.failed"][-1]["payload"]
    assert (failed["error_code"], failed["stage"]) == (code, "checksum")
    assert installed(inst) == {}
    assert not (inst.home / "bin" / "aws").exists()
    # The staging directory is renamed to .trash-* and emptied in the background.
    tools = inst.home / "tools"
    wait_until(lambda: not any(tools.iterdir()), "the staging trash emptied", timeout=10)
