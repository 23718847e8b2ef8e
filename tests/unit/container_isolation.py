"""The validation container's isolation, as every build's container must keep it: no
network, a read-only root, no privileges, every capability dropped. Shared by the
source build's and cpanm's container tests."""

from __future__ import annotations

from tsukud.sandbox.runtime import RunSpec


def isolated_mounts(spec: RunSpec) -> dict[tuple[str, str], bool]:
    """``spec``'s mounts (source, target) → read-only, once its isolation is held."""
    config = spec.container_config()
    host = config["HostConfig"]
    assert host["NetworkMode"] == "none" and config["NetworkDisabled"] is True
    assert host["ReadonlyRootfs"] is True and host["Privileged"] is False
    assert host["CapDrop"] == ["ALL"] and "no-new-privileges" in host["SecurityOpt"]
    return {(m["Source"], m["Target"]): m["ReadOnly"] for m in host["Mounts"]}
