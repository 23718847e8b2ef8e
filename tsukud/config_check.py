"""``python -m tsukud.config_check``: the daemon's own reading of its configuration,
without starting a daemon.

``tsukuctl doctor`` must work exactly when the daemon cannot start (a typo in
config.toml), and the client may not import the configuration module (it is not
stdlib-only, and the client's start-up must stay small), so it runs this in a child
process. The answer is one JSON object on stdout: ``{ok, path, problems}`` (each
problem's ``message``, ``hint`` and exit code, as the daemon would report it) and which
secrets are set and where from (never their values).
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
    except TsukuError as exc:  # a file others can read is refused whole
        return {"ok": False, "path": path, "problems": [_problem(exc)]}
    secrets = {
        s.key.name: {"set": bool(s.value), "source": s.source}
        for s in resolved.settings()
        if s.key.secret
    }
    return {
        "ok": not resolved.problems,
        "path": path,
        "exists": os.path.exists(path),
        "problems": [_problem(p.error) for p in resolved.problems],
        "secrets": secrets,
    }


def _problem(exc: TsukuError) -> dict[str, object]:
    return {"message": exc.message, "hint": exc.hint, "exit_code": exc.exit_code}


def main() -> int:
    result = check(dict(os.environ))
    sys.stdout.write(json.dumps(result) + "\n")
    return 0 if result["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
