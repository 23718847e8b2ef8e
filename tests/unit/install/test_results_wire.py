"""The installer's typed results go on the wire as the objects they replaced: every
field present (``null`` included), the same keys (schema/rpc.md, ``tools.remove`` and
``tools.verify``), through the one frame encoder the RPC server uses."""

from __future__ import annotations

import json

from tsukud.install.results import Removed, Verified
from tsukud.rpc.protocol import HEADER, encode_frame


def _wire(obj: object) -> dict[str, object]:
    frame = encode_frame({"id": 1, "result": obj})
    body = json.loads(frame[HEADER.size :])
    result: dict[str, object] = body["result"]
    return result


def test_removed_is_the_object_tools_remove_always_sent() -> None:
    removed = Removed(
        tool="kind",
        version=None,
        removed_links=["/h/bin/kind"],
        install_dir="/h/tools/kind-0.1",
        session="remove-1",
        unneeded_dependencies=[],
    )
    assert _wire(removed) == {
        "tool": "kind",
        "version": None,
        "removed_links": ["/h/bin/kind"],
        "install_dir": "/h/tools/kind-0.1",
        "session": "remove-1",
        "unneeded_dependencies": [],
    }


def test_verified_is_the_object_tools_verify_always_sent() -> None:
    verified = Verified(
        tool="kind", version="0.1", ok=True, binaries=["kind"], output=None, session="verify-1"
    )
    assert _wire(verified) == {
        "tool": "kind",
        "version": "0.1",
        "ok": True,
        "binaries": ["kind"],
        "output": None,
        "session": "verify-1",
    }
