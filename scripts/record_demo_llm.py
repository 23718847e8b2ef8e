"""Record the LLM session that `tsukuctl demo` replays.

Runs `tsukuctl create age --from github:FiloSottile/age --llm` against the demo's fake
GitHub with TSUKU_LLM_RECORD_DIR pointing at tsukud/testing/data/demo-llm/, and writes
demo-llm.source.json beside it saying what answered, which the demo prints:

* with ANTHROPIC_API_KEY (or else GOOGLE_API_KEY / GEMINI_API_KEY) set, the real
  provider answers (this costs a few cents) and the source names the model that did;
* without a key, a scripted Claude fake answers (the real anthropic SDK on the wire,
  hand-written answers and token counts), and the source says "scripted".

Run it after changing the create prompts or tools: .venv/bin/python scripts/record_demo_llm.py
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from contextlib import AbstractContextManager, nullcontext
from datetime import UTC, datetime
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.fakes import anthropic_server as anth  # noqa: E402
from tests.fakes.anthropic_server import FakeAnthropic  # noqa: E402
from tsukud.testing.demo_world import (  # noqa: E402
    LLM_RECORDINGS,
    RecordingSource,
    demo_github,
    write_recording_source,
)

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


def real_provider() -> tuple[str, dict[str, str]] | None:
    """The provider to record for real, and the environment that selects it; None when
    no key is set (then the scripted fake answers)."""
    if os.environ.get("ANTHROPIC_API_KEY"):
        return "claude", {"ANTHROPIC_API_KEY": os.environ["ANTHROPIC_API_KEY"]}
    for name in ("GOOGLE_API_KEY", "GEMINI_API_KEY"):
        if os.environ.get(name):
            return "gemini", {name: os.environ[name]}
    return None


def scripted_claude() -> FakeAnthropic:
    """Hand-written answers: look inside the Linux archive, then answer."""
    claude = FakeAnthropic()
    claude.reply(
        [
            anth.text("Let me look inside the Linux archive first."),
            anth.tool_use(
                "toolu_demo_1", "inspect_archive", {"asset_name": "age-v1.2.1-linux-amd64.tar.gz"}
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
    return claude


def recorded_model(directory: Path) -> str:
    """The model that answered, as the provider's responses name it."""
    recordings = [json.loads(f.read_text()) for f in directory.glob("*.json")]
    models = {r.get("model") or rec["model"] for rec in recordings for r in rec["responses"]}
    if len(models) != 1:
        raise SystemExit(f"expected one model in the recordings, found {sorted(models)}")
    return models.pop()


def main() -> int:
    home = Path(tempfile.mkdtemp(prefix="tk-rec-", dir="/tmp"))
    out = Path(tempfile.mkdtemp(prefix="tk-rec-out-", dir="/tmp"))
    real = real_provider()
    fake: AbstractContextManager[FakeAnthropic | None] = (
        nullcontext(None) if real else scripted_claude()
    )
    with demo_github() as gh, fake as claude:
        keep = ("TSUKU_", "XDG_RUNTIME", "ANTHROPIC_", "GOOGLE_API", "GEMINI_")
        env = {k: v for k, v in os.environ.items() if not k.startswith(keep)}
        env.update(gh.env())
        env.update(
            TSUKU_HOME=str(home),
            TSUKU_SOCKET=str(home / "run" / "tsukud.sock"),
            TSUKU_LLM_RECORD_DIR=str(out),
        )
        if real is not None:
            provider = real[0]
            env.update(real[1], TSUKU_LLM_PROVIDER=provider)
            print(f"recording a real {provider} session (this is billed)", file=sys.stderr)
        else:
            assert claude is not None
            provider = "claude"
            env.update(
                ANTHROPIC_API_KEY="sk-ant-recording-only-0000000000",
                ANTHROPIC_BASE_URL=claude.url,
                TSUKU_LLM_PROVIDER=provider,
            )
            print("no API key set: recording the scripted Claude fake", file=sys.stderr)
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
    source = RecordingSource(
        kind="real" if real else "scripted",
        provider=provider,
        model=recorded_model(out),
        recorded_at=datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
    )
    shutil.rmtree(LLM_RECORDINGS, ignore_errors=True)
    shutil.copytree(out, LLM_RECORDINGS)
    write_recording_source(source)
    print(f"recorded {len(list(LLM_RECORDINGS.glob('*.json')))} request(s) into {LLM_RECORDINGS}")
    print(f"the demo will say: {source.label()}")
    shutil.rmtree(home, ignore_errors=True)
    shutil.rmtree(out, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
