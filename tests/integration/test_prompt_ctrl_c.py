"""Ctrl-C at any of the client's prompts ends the wait, even when the SIGINT lands just
before the prompt's read blocks (tsukuctl/answer.py).

Python's handler only notes a signal; the ``KeyboardInterrupt`` is raised at the
interpreter's next check. A SIGINT noted after the last check before ``read(2)`` leaves
the client blocked at the prompt, ``^C`` on the screen, until a line is typed (issue 26:
``test_ctrl_c_at_the_preview...`` hung so once in CI). That moment is made certain here:
the client runs on a pseudo-terminal with SIGINT blocked in its main thread, and a second
thread, which takes the signal, sends it only once the main thread sleeps in the kernel
waiting for the answer. The main thread is then exactly where a lost Ctrl-C leaves it.
"""

from __future__ import annotations

import os
import platform
import pty
import select
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import base_env

# The syscalls a prompt's wait sleeps in (read on stdin, or select/poll); a thread that
# waits for the GIL sleeps in futex, which is not the moment this test is about.
WAITING = {
    "x86_64": {"0", "7", "23", "270", "271"},  # read, poll, select, pselect6, ppoll
    "aarch64": {"63", "72", "73"},  # read, pselect6, ppoll
}

CHILD = r"""
import os, signal, sys, threading, time

WAITING = set(sys.argv[2].split(","))
main_tid = threading.get_native_id()
asking = threading.Event()


def blocked_in_kernel() -> bool:
    task = f"/proc/self/task/{main_tid}"
    with open(f"{task}/stat") as f:
        state = f.read().rsplit(")", 1)[1].split()[0]
    with open(f"{task}/syscall") as f:
        call = f.read().split()[0]
    return state == "S" and call in WAITING


def interrupt_the_waiting_prompt() -> None:
    asking.wait()
    while not blocked_in_kernel():
        time.sleep(0.001)
    os.kill(os.getpid(), signal.SIGINT)


threading.Thread(target=interrupt_the_waiting_prompt, daemon=True).start()
# From here SIGINT reaches the process in the thread above only: the main thread's read
# is never cut short by it, as when the signal arrives just before the read is entered.
signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})

site = sys.argv[1]
asking.set()
try:
    if site == "review":
        from tsukuctl.recipe_preview import review

        res = {"tool": "stern", "tag": "v1", "version": "1", "generated_by": "claude",
               "provider": None, "recipe": "[metadata]\n"}
        print("outcome:", review(res, "github:stern/stern"))
    elif site == "confirm":
        from tsukuctl.command import ask_on_terminal

        print("outcome:", ask_on_terminal({"message": "It costs $2.", "question": "Go on?"}))
    elif site == "choose":
        from tsukuctl.choose import choose_on_terminal

        print("outcome:", choose_on_terminal({"message": "Two.", "choose": [{}, {}]}))
    else:
        from tsukuctl.cli import main

        print("outcome:", main(["config", "edit"]))
except KeyboardInterrupt:
    print("outcome: KeyboardInterrupt")
sys.stdout.flush()
"""

# A config edit with a typo, so that `config edit` asks "Edit again?".
EDITOR = "#!/bin/sh\nprintf '[llm]\\ndaily_budjet = 1.5\\n' >> \"$1\"\n"


def on_a_terminal(site: str, env: dict[str, str]) -> str:
    """The child's output once it says its outcome (or the test fails after 60 s)."""
    master, slave = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-c", CHILD, site, ",".join(WAITING[platform.machine()])],
        stdin=slave,
        stdout=slave,
        stderr=slave,
        env=env,
        start_new_session=True,
    )
    os.close(slave)
    text = b""
    deadline = time.monotonic() + 60
    try:
        while b"outcome: " not in text or not text.endswith(b"\n"):
            left = deadline - time.monotonic()
            assert left > 0, f"the prompt still waits after a Ctrl-C:\n{text!r}"
            ready, _, _ = select.select([master], [], [], left)
            if ready:
                try:
                    chunk = os.read(master, 65536)
                except OSError:  # EIO: the child is gone
                    chunk = b""
                assert chunk, f"exited without an outcome:\n{text!r}"
                text += chunk
        assert proc.wait(timeout=30) == 0, text
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        os.close(master)
    return text.decode("utf-8", "replace")


@pytest.mark.parametrize(
    ("site", "outcome"),
    [
        ("review", "KeyboardInterrupt"),  # create and install: cancelled, exit 130
        ("confirm", "False"),  # a daemon's y/N question: no
        ("choose", "0"),  # a numbered choice: none
        ("config", "130"),  # config edit's "Edit again?": cancelled
    ],
)
def test_a_ctrl_c_noted_just_before_the_read_still_ends_the_prompt(
    site: str, outcome: str, tmp_path: Path
) -> None:
    home = tmp_path / "th"
    home.mkdir(mode=0o700)
    editor = tmp_path / "editor.sh"
    editor.write_text(EDITOR)
    editor.chmod(0o755)
    env = {**base_env(home), "HOME": str(tmp_path), "VISUAL": str(editor), "TERM": "dumb"}
    text = on_a_terminal(site, env)
    assert f"outcome: {outcome}\r\n" in text, text
    assert "Traceback" not in text
