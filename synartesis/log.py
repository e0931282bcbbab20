"""JSON-lines logging to stderr (the proxy's stdout carries protocol frames only)."""

from __future__ import annotations

import json
import os
import sys
import time
TYPE_CHECKING = False  # typing is not imported on the proxy's start-up path (README, design notes)
if TYPE_CHECKING:
    from typing import Any

__all__ = ["log", "set_level"]

_LEVELS = {"debug": 10, "info": 20, "warn": 30, "error": 40, "silent": 100}
_threshold = _LEVELS.get(os.environ.get("SYNARTESIS_LOG_LEVEL", "info"), 20)


def set_level(name: str) -> None:
    """Set the minimum level written (debug, info, warn, error, silent).

    Raises:
        ValueError: for an unknown level name.
    """
    global _threshold
    if name not in _LEVELS:
        raise ValueError(f"unknown log level {name!r}; expected one of {', '.join(_LEVELS)}")
    _threshold = _LEVELS[name]


def log(level: str, msg: str, **fields: Any) -> None:
    """Write one JSON line ``{"ts", "level", "name", "msg", ...fields}`` to stderr."""
    if _LEVELS.get(level, 20) < _threshold:
        return
    rec = {"ts": round(time.time(), 3), "level": level, "name": "synartesis", "msg": msg}
    rec.update(fields)
    try:
        sys.stderr.write(json.dumps(rec, ensure_ascii=False, default=str) + "\n")
        sys.stderr.flush()
    except (OSError, ValueError):
        pass
