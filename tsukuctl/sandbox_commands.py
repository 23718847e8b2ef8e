"""``tsukuctl sandbox status|prepare|check``: the container runtime used for validation."""

from __future__ import annotations

import argparse
import sys

from tsukuctl import render
from tsukuctl.command import out, rpc
from tsukud.errors import ExitCode


def _progress(frame: object) -> None:
    # debootstrap's lines reach the terminal: strip what could move the cursor.
    text = frame.get("message", "") if isinstance(frame, dict) else ""
    message = "".join(c for c in str(text) if c.isprintable())
    if message:
        sys.stderr.write(f"{message}\n")


def cmd_sandbox(args: argparse.Namespace) -> int:
    if args.action == "status":
        st = rpc(args, "sandbox.status")
        if args.json:
            out(render.jsonl(st))
        elif not st["available"]:
            out(f"no container runtime: {st['error']}")
            sys.stderr.write(f"hint: {st['hint']}\n")
        else:
            present = "present" if st["image_present"] else "missing (tsukuctl sandbox prepare)"
            out(f"runtime  {st['version']} at {st['endpoint']}\nimage    {st['image']}: {present}")
            if st.get("chosen_by"):
                out(f"chosen   by {st['chosen_by']}")
            for other in st.get("passed_over") or []:
                out(f"also     {other} answers (set DOCKER_HOST={other} to use it)")
        return 0 if st["available"] else ExitCode.SANDBOX
    if args.action == "prepare":
        res = rpc(
            args,
            "sandbox.prepare",
            {"force": args.force, "busybox": args.busybox, "build": args.build},
            on_progress=None if args.json else _progress,
        )
        if args.json:
            out(render.jsonl(res))
        else:
            done = "imported" if res["imported"] else "already present"
            out(f"{res['image']}: {done}")
        return 0
    res = rpc(args, "sandbox.check")
    if args.json:
        out(render.jsonl(res))
    else:
        out(
            f"container ran as uid {res['uid']}, network interfaces {res['network_interfaces']},"
            f" rootfs {'read-only' if res['rootfs_read_only'] else 'WRITABLE'},"
            f" in {res['duration_s']:.2f} s: {'ok' if res['ok'] else 'FAILED'}"
        )
    return 0 if res["ok"] else ExitCode.SANDBOX


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser("sandbox", help="the container runtime used to validate recipes")
    p.add_argument("action", choices=("status", "prepare", "check"))
    p.add_argument("--force", action="store_true", help="prepare: rebuild the image")
    p.add_argument(
        "--busybox",
        action="store_true",
        help="prepare: the static-only fallback image from the host's busybox-static "
        "(glibc-linked binaries cannot run in it)",
    )
    p.add_argument(
        "--build",
        action="store_true",
        help="prepare: the build image (Debian minbase with gcc, make, cmake and patchelf), "
        "where builds from source run",
    )
    p.add_argument("--json", action="store_true")
    p.set_defaults(fn=cmd_sandbox)
