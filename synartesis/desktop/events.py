"""Live updates: an in-process publish/subscribe hub feeding the page's server-sent-events stream."""

from __future__ import annotations

import asyncio
import json
from typing import Any, AsyncIterator

__all__ = ["Hub"]


class Hub:
    """Each subscriber gets its own bounded queue; a subscriber that stops reading is dropped
    (its page reconnects and reloads the state) rather than making the window buffer forever."""

    def __init__(self, limit: int = 2000) -> None:
        self._subs: set[asyncio.Queue] = set()
        self._limit = limit

    def publish(self, kind: str, data: Any) -> None:
        """Send ``{"type": kind, "data": data}`` to every subscriber (non-blocking)."""
        frame = json.dumps({"type": kind, "data": data}, ensure_ascii=False, default=str)
        for q in list(self._subs):
            try:
                q.put_nowait(frame)
            except asyncio.QueueFull:
                self._subs.discard(q)  # its stream ends once it drains what it has

    async def stream(self, heartbeat: float = 15.0) -> AsyncIterator[str]:
        """SSE text for one subscriber: ``data: …\\n\\n`` frames and ``: ping`` comments."""
        q: asyncio.Queue = asyncio.Queue(self._limit)
        self._subs.add(q)
        try:
            yield "retry: 1000\n\n"
            while q in self._subs:
                try:
                    frame = await asyncio.wait_for(q.get(), heartbeat)
                except asyncio.TimeoutError:
                    yield ": ping\n\n"
                    continue
                if frame is None:
                    return
                yield f"data: {frame}\n\n"
        finally:
            self._subs.discard(q)

    def close(self) -> None:
        """End every stream (server shutdown)."""
        subs, self._subs = self._subs, set()
        for q in subs:
            try:
                q.put_nowait(None)
            except asyncio.QueueFull:
                pass
