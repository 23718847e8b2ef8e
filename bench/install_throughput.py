"""install_throughput: installing a 100 MB tar.gz from a loopback server, against
``curl -sL URL | tar -xz`` of the same file in the same run.

A fake GitHub (tsukud/testing/github.py: API, release downloads redirected to an asset host) runs
on 127.0.0.1 and serves one release whose asset is a 100 MB tar.gz holding a 200 MB
executable (half random bytes, half text: it compresses about 2:1, like real binaries).
Each round times, interleaved:

* ``tsukuctl install bigtool --force`` (a real daemon: API lookup, download streamed to
  staging with sha256, check against the release's ``digest``, safe extraction, assembly,
  atomic rename, the verify command, bin links, a durable ``install.completed``), and
* ``curl -sL <same URL> | tar -xz -C <fresh dir>`` (no hashing, no checks).

Throughput is archive bytes / wall seconds, median over the rounds after one warm-up.
Goal: at least 0.8x the curl|tar speed.
"""

from __future__ import annotations

import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import (
    BIN,
    REPO,
    fmt,
    goal,
    header,
    median,
    note,
    parse_args,
    temp_home,
    wait_ping,
)

NAME = "install_throughput"
GOAL_RATIO = 0.8
MB = 1024 * 1024

RECIPE = """[metadata]
name = "bigtool"
description = "benchmark payload"

[[steps]]
action = "github_archive"
repo = "bench/bigtool"
asset_pattern = "bigtool-{version}-{os}-{arch}.tar.gz"
strip_dirs = 1
binaries = ["bin/bigtool"]

[verify]
command = "bigtool --version"
pattern = "bigtool v{version}"
"""


def build_archive(path: Path, target_mb: int) -> int:
    """A tar.gz of about ``target_mb`` MB holding ``bigtool-1.0.0/bin/bigtool``: a shell
    script (it exits before the payload) padded with half random, half text blocks."""
    import gzip
    import tarfile

    rng = random.Random(1234)
    text = (b"tsuku benchmark payload: the quick brown fox jumps over the lazy dog. " * 512)[
        : 32 * 1024
    ]
    head = b'#!/bin/sh\necho "bigtool v1.0.0"\nexit 0\n'
    blocks = target_mb * 2 * MB // (64 * 1024)  # compresses about 2:1

    class Payload:
        def __init__(self) -> None:
            self.left = blocks
            self.buf = head

        def read(self, n: int = -1) -> bytes:
            while len(self.buf) < n and self.left:
                self.buf += rng.randbytes(32 * 1024) + text
                self.left -= 1
            out, self.buf = self.buf[:n], self.buf[n:]
            return out

    info = tarfile.TarInfo("bigtool-1.0.0/bin/bigtool")
    info.size = len(head) + blocks * 64 * 1024
    info.mode = 0o755
    info.mtime = 1_700_000_000
    # Level 1: building 200 MB at the default level would take longer than the benchmark.
    with (
        gzip.open(path, "wb", compresslevel=1) as gz,
        tarfile.open(fileobj=gz, mode="w|", format=tarfile.PAX_FORMAT) as tf,
    ):
        tf.addfile(info, Payload())  # type: ignore[arg-type]
    return path.stat().st_size


def main() -> int:
    args = parse_args(__doc__ or "")
    size_mb = 20 if args.quick else 100
    rounds = 2 if args.quick else 5
    header(NAME, args.quick)
    sys.path.insert(0, str(REPO))
    from tests.fakes.github import FakeGitHub
    from tests.fakes.releases import FakeAsset, FakeRelease, FakeRepo

    work = Path(tempfile.mkdtemp(prefix="tkb-tp-", dir="/tmp"))
    try:
        archive = work / "bigtool-1.0.0-linux-amd64.tar.gz"
        size = build_archive(archive, size_mb)
        with FakeGitHub() as fake, temp_home("tkb-ins-") as h:
            asset = FakeAsset(archive.name, archive)
            fake.add_repo(FakeRepo("bench/bigtool", [FakeRelease("v1.0.0", [asset])]))
            url = f"{fake.web_url}/bench/bigtool/releases/download/v1.0.0/{archive.name}"
            h.env.update(fake.env())
            (h.path / "recipes").mkdir()
            (h.path / "recipes" / "bigtool.toml").write_text(RECIPE)
            h.spawn()
            wait_ping(h.socket, h.proc)
            ctl = [str(BIN / "tsukuctl"), "install", "bigtool", "--force", "--json"]

            def ours() -> float:
                t0 = time.perf_counter()
                cp = subprocess.run(ctl, env=h.env, capture_output=True, text=True)
                dt = time.perf_counter() - t0
                if cp.returncode != 0:
                    raise RuntimeError(f"install failed: {cp.stderr}\n{h.stderr_tail()}")
                return dt

            def baseline() -> float:
                dest = Path(tempfile.mkdtemp(prefix="curl-", dir=work))
                t0 = time.perf_counter()
                cp = subprocess.run(
                    f"curl -sfL '{url}' | tar -xz -C '{dest}'",
                    shell=True,
                    capture_output=True,
                )
                dt = time.perf_counter() - t0
                if cp.returncode != 0:
                    raise RuntimeError(f"curl|tar failed: {cp.stderr.decode()}")
                shutil.rmtree(dest)
                return dt

            times: dict[str, list[float]] = {"ours": [], "curl": []}
            for i in range(1 + rounds):
                for key, fn in (("ours", ours), ("curl", baseline)):
                    dt = fn()
                    if i > 0:
                        times[key].append(dt)
        m_ours, m_curl = median(times["ours"]), median(times["curl"])
        mbs_ours = size / MB / m_ours
        mbs_curl = size / MB / m_curl
        ratio = mbs_ours / mbs_curl
        note(
            NAME,
            f"median of {rounds} rounds after 1 warm-up; {size / MB:.0f} MB tar.gz (about 2:1) "
            "from a loopback fake GitHub (302 to its asset host); `tsukuctl install --force` "
            "(download, sha256 + digest check, safe extraction, verify, links, durable "
            "event) vs `curl -sL | tar -xz` of the same URL",
        )
        print(f"{NAME}: {mbs_ours:.1f} MB/s ({ratio:.2f}x vs curl|tar)", flush=True)
        print(
            f"{NAME}.detail: install {fmt(m_ours)} s (runs: "
            + ", ".join(fmt(t) for t in times["ours"])
            + f"); curl|tar {fmt(m_curl)} s = {fmt(mbs_curl)} MB/s (runs: "
            + ", ".join(fmt(t) for t in times["curl"])
            + ")",
            flush=True,
        )
        goal(NAME, ratio >= GOAL_RATIO, f"{ratio:.2f}x >= {GOAL_RATIO}x curl|tar")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONDONTWRITEBYTECODE", "1")
    sys.exit(main())
