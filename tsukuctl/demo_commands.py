"""``tsukuctl demo``: the whole pipeline, offline, against bundled fixtures.

A temporary TSUKU_HOME and its own daemon; a fake GitHub on loopback serving two tools'
releases (small real archives); a recorded LLM session replayed with no network and no
API key, labelled with what answered when it was recorded (a scripted model or a named
real one); container validation when a runtime answers (and a loud note when not); then
install, run the installed tools, and read the ledger. Every step is a real ``tsukuctl``
process, shown as the command a user would type.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

from tsukuctl.command import out
from tsukud.provider_specs import LLM_PROVIDERS
from tsukud.terminal import terminal_safe

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path


def _banner(text: str) -> None:
    from tsukuctl.progress import Style

    bold = Style.of(sys.stdout).paint(terminal_safe(text), "bold")
    sys.stdout.write(f"\n{bold}\n")


def _run_live(
    argv: list[str], env: dict[str, str], timeout: float
) -> subprocess.CompletedProcess[str]:
    """Run one step, showing its output as it comes: its progress (stderr, indented
    under ``  | ``) between the command line and its result, not after the result."""
    import selectors

    proc = subprocess.Popen(
        argv,
        env={**env, "PYTHONUNBUFFERED": "1"},  # the result lines too, as they are written
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdout is not None and proc.stderr is not None
    kept: dict[int, bytearray] = {1: bytearray(), 2: bytearray()}
    partial: dict[int, bytearray] = {1: bytearray(), 2: bytearray()}

    def show(stream: int, line: bytes | bytearray) -> None:
        text = line.decode("utf-8", "replace").rstrip("\n")
        sys.stdout.write(f"{text}\n" if stream == 1 else f"  | {text}\n")

    deadline = time.monotonic() + timeout
    with selectors.DefaultSelector() as sel:
        # Raw reads (not readline): a buffered reader would hide lines from select.
        sel.register(proc.stdout.fileno(), selectors.EVENT_READ, 1)
        sel.register(proc.stderr.fileno(), selectors.EVENT_READ, 2)
        while sel.get_map():
            left = deadline - time.monotonic()
            if left <= 0:
                proc.kill()
                break
            for key, _ in sel.select(left):
                chunk = os.read(key.fd, 65536)
                stream = key.data
                if not chunk:
                    sel.unregister(key.fd)
                    if partial[stream]:
                        show(stream, partial[stream])
                    continue
                kept[stream] += chunk
                partial[stream] += chunk
                *lines, rest = partial[stream].split(b"\n")
                partial[stream] = bytearray(rest)
                for line in lines:
                    show(stream, line)
            sys.stdout.flush()
    proc.stdout.close()
    proc.stderr.close()
    code = proc.wait()
    stdout, stderr = (kept[n].decode("utf-8", "replace") for n in (1, 2))
    return subprocess.CompletedProcess(argv, code, stdout, stderr)


class Demo:
    def __init__(self, home: Path, env: dict[str, str]) -> None:
        self.home = home
        self.env = env
        self.step = 0
        self.failed: list[str] = []

    def ctl(
        self, *args: str, label: str = "", check: bool = True
    ) -> subprocess.CompletedProcess[str]:
        self.step += 1
        _banner(f"[{self.step}] $ tsukuctl {' '.join(args)}" + (f"    # {label}" if label else ""))
        sys.stdout.flush()
        cp = _run_live([sys.executable, "-m", "tsukuctl", *args], self.env, timeout=300)
        if check and cp.returncode != 0:
            self.failed.append(f"tsukuctl {' '.join(args)} (exit {cp.returncode})")
            out(f"  !! exit {cp.returncode}")
        sys.stdout.flush()
        return cp

    def run_tool(self, name: str, *args: str) -> None:
        self.step += 1
        path = self.home / "bin" / name
        _banner(
            f"[{self.step}] $ {name} {' '.join(args)}    # the installed tool, from {path.parent}"
        )
        cp = subprocess.run([str(path), *args], text=True, capture_output=True, timeout=30)
        sys.stdout.write(cp.stdout + cp.stderr)
        if cp.returncode != 0:
            self.failed.append(f"{name} {' '.join(args)} (exit {cp.returncode})")


def cmd_demo(args: argparse.Namespace) -> int:
    from pathlib import Path

    from tsukud.testing.demo_world import LLM_RECORDINGS, demo_github, recording_source

    started = time.monotonic()
    home = Path(tempfile.mkdtemp(prefix="tsuku-demo-", dir="/tmp"))
    gh = demo_github().start()
    # Nothing of the user's own setup leaks in: no keys, no other daemon's socket. An LLM
    # provider's variables go by their vendor's prefix (ANTHROPIC_*: its key and URL).
    vendors = {e.split("_")[0] + "_" for p in LLM_PROVIDERS for e in (*p.key_env, *p.url.env)}
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("TSUKU_", "XDG_RUNTIME_DIR", *sorted(vendors)))
        and k not in ("GITHUB_TOKEN", "GH_TOKEN", "TAVILY_API_KEY", "BRAVE_API_KEY")
    }
    env.update(gh.env())
    source = recording_source()
    replay = home / "llm-recordings"
    shutil.copytree(LLM_RECORDINGS, replay)
    env.update(
        TSUKU_HOME=str(home),
        TSUKU_SOCKET=str(home / "run" / "tsukud.sock"),
        TSUKU_LLM_PROVIDER=source.provider,
        TSUKU_LLM_REPLAY_DIR=str(replay),
    )
    demo = Demo(home, env)
    out("tsuku demo: the whole pipeline, offline")
    out(f"  home        {home}" + ("" if args.keep else " (removed at the end; --keep keeps it)"))
    out(f"  GitHub      a fake on {gh.api_url} serving stern/stern and FiloSottile/age")
    out("              (synthesised releases with small real archives)")
    out(f"  LLM         {source.label()}")
    try:
        demo.ctl("status")
        sb = demo.ctl("sandbox", "status", "--json", check=False)
        sandbox = json.loads(sb.stdout) if sb.stdout.strip().startswith("{") else {}
        extra: list[str] = []
        if not sandbox.get("available"):
            out("\n  !! NO CONTAINER RUNTIME: recipes are created WITHOUT container validation")
            out(f"  !! ({sandbox.get('error', 'no answer')}); the recipes will say so.")
            extra = ["--skip-validation"]
        elif not sandbox.get("image_present"):
            demo.ctl("sandbox", "prepare", label="import the offline validation image")
        demo.ctl(
            "create",
            "stern",
            "--from",
            "github:stern/stern",
            "--deterministic-only",
            "--yes",
            *extra,
            label="deterministic matcher: no LLM, $0",
        )
        demo.ctl(
            "create",
            "age",
            "--from",
            "github:FiloSottile/age",
            "--llm",
            "--yes",
            *extra,
            label="the replayed LLM session writes this one",
        )
        demo.ctl("install", "stern")
        demo.ctl("install", "age")
        demo.ctl("list")
        demo.run_tool("stern", "--version")
        demo.run_tool("age", "--version")
        demo.ctl("events", "summary", "--by", "type")
        demo.ctl("events", "summary", "--by", "provider", label="what the LLM cost")
        demo.ctl("events", "verify", label="the hash-chained ledger is intact")
    finally:
        subprocess.run(
            [sys.executable, "-m", "tsukuctl", "daemon", "stop"],
            env=env,
            capture_output=True,
            timeout=60,
        )
        gh.close()
        # The fake refuses what GitHub would; a refusal means the demo ran on luck.
        demo.failed += [f"fake GitHub refused: {v}" for v in gh.take_violations()]
        if not args.keep:
            shutil.rmtree(home, ignore_errors=True)
    took = time.monotonic() - started
    if demo.failed:
        out(f"\ndemo FAILED in {took:.1f} s at: " + "; ".join(demo.failed))
        return 1
    out(
        f"\ndemo finished in {took:.1f} s: two recipes created"
        f"{' and validated in a container' if not extra else ' (NOT validated: no runtime)'},"
        " two tools installed and run, every step on the ledger."
    )
    return 0


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser("demo", help="the whole pipeline offline, against bundled fixtures")
    p.add_argument("--keep", action="store_true", help="keep the demo's TSUKU_HOME")
    p.set_defaults(fn=cmd_demo)
