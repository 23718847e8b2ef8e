"""Record the LLM session that `tsukuctl demo` replays.

Runs `tsukuctl create age --from github:FiloSottile/age --llm` against the demo's fake
GitHub and a scripted Claude fake (the real anthropic SDK on the wire), with
TSUKU_LLM_RECORD_DIR pointing at tsukud/testing/data/demo-llm/. Run it after changing the
create prompts or tools: .venv/bin/python scripts/record_demo_llm.py
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.fakes import anthropic_server as anth  # noqa: E402
from tests.fakes.anthropic_server import FakeAnthropic  # noqa: E402
from tsukud.testing.demo_world import LLM_RECORDINGS, demo_github  # noqa: E402

ANSWER = {
    "asset_type": "archive",
    "asset_pattern": "age-v{version}-{os}-{arch}.tar.gz",
    "os_mapping": {"linux": "linux", "darwin": "darwin"},
    "arch_mapping": {"amd64": "amd64", "arm64": "arm64"},
    "archive_format": "tar.gz",
    "strip_dirs": 1,
    "binaries": ["age", "age-keygen"],
    "verify_command": "age --version",
    "verify_pattern": "v{version}",
}


def main() -> int:
    home = Path(tempfile.mkdtemp(prefix="tk-rec-", dir="/tmp"))
    out = Path(tempfile.mkdtemp(prefix="tk-rec-out-", dir="/tmp"))
    with demo_github() as gh, FakeAnthropic() as claude:
        claude.reply(
            [
                anth.text("Let me look inside the Linux archive first."),
                anth.tool_use(
                    "toolu_demo_1",
                    "inspect_archive",
                    {"asset_name": "age-v1.2.1-linux-amd64.tar.gz"},
                ),
            ],
            "tool_use",
            usage_=anth.usage(4200, 90),
        )
        claude.reply(
            [anth.tool_use("toolu_demo_2", "extract_pattern", ANSWER)],
            "tool_use",
            usage_=anth.usage(4700, 210),
        )
        env = {k: v for k, v in os.environ.items() if not k.startswith(("TSUKU_", "XDG_RUNTIME"))}
        env.update(gh.env())
        env.update(
            TSUKU_HOME=str(home),
            TSUKU_SOCKET=str(home / "run" / "tsukud.sock"),
            ANTHROPIC_API_KEY="sk-ant-recording-only-0000000000",
            ANTHROPIC_BASE_URL=claude.url,
            TSUKU_LLM_PROVIDER="claude",
            TSUKU_LLM_RECORD_DIR=str(out),
        )
        ctl = [sys.executable, "-m", "tsukuctl"]
        try:
            cp = subprocess.run(
                [
                    *ctl,
                    "create",
                    "age",
                    "--from",
                    "github:FiloSottile/age",
                    "--llm",
                    "--skip-validation",
                    "--output",
                    str(home / "age.toml"),
                ],
                env=env,
                text=True,
                capture_output=True,
                timeout=120,
            )
            sys.stderr.write(cp.stderr)
            if cp.returncode != 0:
                return cp.returncode
        finally:
            subprocess.run([*ctl, "daemon", "stop"], env=env, capture_output=True, timeout=60)
    shutil.rmtree(LLM_RECORDINGS, ignore_errors=True)
    shutil.copytree(out, LLM_RECORDINGS)
    print(f"recorded {len(list(LLM_RECORDINGS.glob('*.json')))} request(s) into {LLM_RECORDINGS}")
    shutil.rmtree(home, ignore_errors=True)
    shutil.rmtree(out, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
