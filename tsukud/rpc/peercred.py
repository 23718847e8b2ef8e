"""Who is on the other end of a Unix socket.

The socket file's 0600 mode is the first fence; the peer's uid is the second, for a
socket handed over by a service manager or a directory someone loosened by mistake.
"""

from __future__ import annotations

import socket
import struct
import sys


def peer_uid(sock: socket.socket) -> int | None:
    """The connecting process's uid, or None where the platform cannot tell."""
    if sys.platform.startswith("linux"):
        raw = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
        _pid, uid, _gid = struct.unpack("3i", raw)
        return int(uid)
    if sys.platform == "darwin" or "bsd" in sys.platform:
        # LOCAL_PEERCRED (SOL_LOCAL=0, option 1) returns struct xucred:
        # u_int cr_version; uid_t cr_uid; short cr_ngroups; gid_t cr_groups[16]
        raw = sock.getsockopt(0, 1, 4 + 4 + 2 + 2 + 16 * 4)
        _version, uid = struct.unpack_from("=II", raw)
        return int(uid)
    return None
