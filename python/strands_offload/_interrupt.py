"""Ctrl-C ends the command line within a second, even inside a long native call.

Python runs its SIGINT handler between bytecodes of the main thread, so a native
call that releases the GIL and runs for seconds (an exact-token preview of a large
file, say) delays ``KeyboardInterrupt`` until it returns. The C-level handler still
writes the signal number to the descriptor given to :func:`signal.set_wakeup_fd` at
once; a watchdog thread reading it gives the main thread a grace period to raise
``KeyboardInterrupt`` and report the interrupt itself, and past that reports it and
ends the process with status 130.
"""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Callable

#: How long the main thread has to handle Ctrl-C before the watchdog ends the process.
GRACE_SECONDS = 0.5

#: The exit status of a process ended by Ctrl-C (128 + SIGINT), as shells report it.
INTERRUPTED_STATUS = 130


class Watchdog:
    """The installed watchdog; :meth:`handled` tells it the main thread has taken over."""

    def __init__(self, message: str, exit_process: Callable[[int], object] = os._exit) -> None:
        self._message = message.encode("utf-8", "replace")
        self._exit = exit_process
        self._handled = threading.Event()
        self._read, self._write = os.pipe()
        os.set_blocking(self._write, False)  # the C handler must never block on it
        self._previous = signal.set_wakeup_fd(self._write, warn_on_full_buffer=False)
        self._thread = threading.Thread(target=self._watch, name="strands-offload-interrupt", daemon=True)
        self._thread.start()

    def handled(self) -> None:
        """The main thread caught the interrupt (or is done): the watchdog stands down."""
        self._handled.set()

    def close(self) -> None:
        """Stand down, give the wakeup descriptor back and end the thread."""
        self._handled.set()
        signal.set_wakeup_fd(self._previous)
        os.close(self._write)  # the thread reads end-of-file and returns
        self._thread.join()
        os.close(self._read)

    def _watch(self) -> None:
        while True:
            try:
                data = os.read(self._read, 64)
            except OSError:
                return
            if not data or self._handled.is_set():
                return
            if signal.SIGINT in data and not self._handled.wait(GRACE_SECONDS):
                try:
                    os.write(2, self._message)
                except OSError:
                    pass  # no stderr: the status still tells
                self._exit(INTERRUPTED_STATUS)
                return


def install(message: str) -> Watchdog | None:
    """Watch for Ctrl-C from the main thread; ``None`` where that cannot be done.

    Args:
        message: The line written to standard error when the watchdog ends the process.
    """
    if threading.current_thread() is not threading.main_thread():
        return None
    try:
        return Watchdog(message)
    except (OSError, ValueError):  # no pipes, or an embedding that owns the wakeup fd
        return None
