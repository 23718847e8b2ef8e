"""A line typed at a prompt, which a Ctrl-C always interrupts. Standard library only.

``sys.stdin.readline()`` loses a Ctrl-C that lands in a narrow window: Python's C-level
handler only notes a signal, and the ``KeyboardInterrupt`` is raised at the interpreter's
next check. A SIGINT that arrives after the last check before the blocking ``read(2)``
(the prompt is flushed, the person's terminal sees it and they press Ctrl-C at once, the
client is descheduled for a moment) is noted, the read then blocks, and the client sits
at the prompt with the interrupt pending until a line is typed. The line discipline has
discarded the pending input, and the terminal shows ``^C``.

On a terminal, on the main thread, the prompt therefore waits in ``select`` on standard
input *and* a wake-up pipe that the handler writes to (``signal.set_wakeup_fd``): a
signal that arrived before the wait makes it return at once, and the interrupt is
raised before anything blocks. Anywhere else (a pipe, a test's in-memory stream, another
thread) it is ``sys.stdin.readline()``.
"""

from __future__ import annotations

import os
import sys


def read_line() -> str:
    """``sys.stdin.readline()``: the line with its newline, ``""`` at end of input;
    ``KeyboardInterrupt`` on Ctrl-C whenever it comes; ``OSError`` as the read raises it."""
    import threading

    try:
        fd = sys.stdin.fileno()
    except (AttributeError, OSError, ValueError):  # in-memory or closed stdin
        return sys.stdin.readline()
    if not os.isatty(fd) or threading.current_thread() is not threading.main_thread():
        return sys.stdin.readline()
    return _read_line_waking(fd)


def _read_line_waking(fd: int) -> str:
    import select
    import signal

    wake_r, wake_w = os.pipe()
    try:
        os.set_blocking(wake_r, False)
        os.set_blocking(wake_w, False)
        old = signal.set_wakeup_fd(wake_w, warn_on_full_buffer=False)
        try:
            while True:
                ready, _, _ = select.select([fd, wake_r], [], [])
                if wake_r in ready:
                    # A signal came; its Python handler (KeyboardInterrupt for SIGINT)
                    # runs at the interpreter's next check, i.e. in this loop.
                    _drain(wake_r)
                    continue
                # A canonical terminal is readable once a whole line (or an end of
                # input) is there, so this does not block.
                return sys.stdin.readline()
        finally:
            signal.set_wakeup_fd(old)
    finally:
        os.close(wake_r)
        os.close(wake_w)


def _drain(fd: int) -> None:
    try:
        while os.read(fd, 512):
            pass
    except BlockingIOError:
        pass
