"""The stdio downstream: the MCP client on our stdin and stdout (standard library only).

- Our stdout carries protocol frames only: fd 1 is duplicated for the wire and then pointed at
  stderr, so a stray ``print`` (ours or a library's) lands on stderr, never in the protocol.
- One reader thread cuts stdin into frames (no length limit) and hands each to the engine in
  order; writes to the client are serialized by one lock and block while the client is not
  reading.
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Callable
TYPE_CHECKING = False  # typing is not imported on the proxy's start-up path (README, design notes)
if TYPE_CHECKING:
    from typing import Any

from synartesis.proxy.framing import read_frames, write_frame

__all__ = ["StdioDownstream"]


class StdioDownstream:
    """Our own stdin/stdout as the client connection (see the module docstring)."""

    def __init__(self, stdin_fd: int = 0) -> None:
        self.stdin_fd = stdin_fd
        self.wire_fd = os.dup(1)
        os.dup2(2, 1)
        try:
            sys.stdout = open(1, "w", closefd=False)  # noqa: SIM115 - stray prints land on stderr
        except OSError:
            pass
        self._lock = threading.Lock()
        self._broken = False

    def send(self, line: Any) -> None:
        """Write one frame to the client. A client that went away is not an error: the frames
        are dropped (the proxy is shutting down then)."""
        if self._broken:
            return
        with self._lock:
            try:
                write_frame(self.wire_fd, line)
            except OSError:
                self._broken = True

    def start(self, on_line: Callable[[Any], None], on_eof: Callable[[], None]) -> threading.Thread:
        """Read stdin on a thread of its own: ``on_line(frame)`` for each frame, in order, then
        ``on_eof()`` once."""
        thread = threading.Thread(target=self._read, args=(on_line, on_eof), name="synartesis-client",
                                  daemon=True)
        thread.start()
        return thread

    def _read(self, on_line: Callable[[Any], None], on_eof: Callable[[], None]) -> None:
        try:
            read_frames(self.stdin_fd, on_line)
        finally:
            on_eof()

    def close(self) -> None:
        """Close the wire (the client sees EOF)."""
        with self._lock:
            self._broken = True
            try:
                os.close(self.wire_fd)
            except OSError:
                pass
