"""What ``$snapshot`` and ``$result`` see, and how a tool result is read (reference-spec §2.6)."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import sys
from typing import Any

__all__ = ["payload", "is_error", "error_text", "cli_command"]


def payload(result: Any) -> Any:
    """The payload of a CallToolResult.

    ``structuredContent`` when present; else a lone text block parsed as JSON (or the raw
    text when it is not JSON); else the whole result.
    """
    if not isinstance(result, dict):
        return result
    if "structuredContent" in result:
        return result["structuredContent"]
    content = result.get("content")
    if isinstance(content, list) and len(content) == 1 and isinstance(content[0], dict) \
            and content[0].get("type") == "text" and isinstance(content[0].get("text"), str):
        text = content[0]["text"]
        try:
            return json.loads(text)
        except ValueError:
            return text
    return result


def is_error(result: Any) -> bool:
    """True for a tool-level refusal (``isError: true``)."""
    return isinstance(result, dict) and result.get("isError") is True


def error_text(result: Any, limit: int = 500) -> str:
    """The text blocks of a result joined by spaces (or its JSON), cut to ``limit`` chars."""
    if isinstance(result, dict) and isinstance(result.get("content"), list):
        texts = [b.get("text", "") for b in result["content"] if isinstance(b, dict) and b.get("type") == "text"]
        if texts:
            text = " ".join(t for t in texts if isinstance(t, str))
            return text if len(text) <= limit else text[:limit] + "…"
    text = json.dumps(result, ensure_ascii=False)
    return text if len(text) <= limit else text[:limit] + "…"


def cli_command() -> str:
    """How a person should type the CLI so the command works from any directory.

    ``synartesis`` when that name on PATH is this program; else the absolute path of this
    program; else ``<python> -m synartesis``.
    """
    argv0 = sys.argv[0] if sys.argv and sys.argv[0] else ""
    me = os.path.realpath(argv0) if argv0 else ""
    on_path = shutil.which("synartesis")
    if os.path.basename(argv0) == "synartesis" or os.path.basename(argv0) == "synartesis.exe":
        if on_path and os.path.realpath(on_path) == me:
            return "synartesis"
        return shlex.quote(os.path.abspath(argv0))
    if on_path:
        return "synartesis"
    return f"{shlex.quote(sys.executable)} -m synartesis"
