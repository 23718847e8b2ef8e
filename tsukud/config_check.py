"""``python -m tsukud.config_check``: the daemon's own reading of its configuration,
without starting a daemon.

``tsukuctl doctor`` must work exactly when the daemon cannot start (a typo in
config.toml), and the client may not import the configuration module (it is not
stdlib-only, and the client's start-up must stay small), so it runs this in a child
process. The answer is one JSON object on stdout: ``{ok, path}`` and, for a good
configuration, which secrets are set and where from (never their values); for a bad
one the error's ``message``, ``hint`` and exit code.
"""

from __future__ import annotations

import json
import os
import sys

from tsukud import config, paths
from tsukud.errors import TsukuError


def check(env: dict[str, str]) -> dict[str, object]:
    path = paths.config_path(env)
    try:
        resolved = config.resolve(env=env)
    except TsukuError as exc:
        return {
            "ok": False,
            "path": path,
            "message": exc.message,
            "hint": exc.hint,
            "exit_code": exc.exit_code,
        }
    secrets = {
        s.key.name: {"set": bool(s.value), "source": s.source}
        for s in resolved.settings()
        if s.key.secret
    }
    return {"ok": True, "path": path, "exists": os.path.exists(path), "secrets": secrets}


def main() -> int:
    result = check(dict(os.environ))
    sys.stdout.write(json.dumps(result) + "\n")
    return 0 if result["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
