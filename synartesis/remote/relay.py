"""``synartesis remote-relay --url URL [header flags]``: a plain stdio ↔ remote relay, with no
policy and no journal.

It is how the command line reaches a remote server (undo, ``show --live``, ``check``, ``pin``,
``init``, install's introspection start it like any stdio server): the proxy records it as a
remote server's launch line, with the same flags (references only) the bridge was given, and
the same :mod:`synartesis.remote.http` upstream carries the frames. A client config never runs
it: calls through it are not journalled.

Exit codes: 0 when stdin ends; 2 for bad flags or an unset variable; 1 when the server is gone.
"""

from __future__ import annotations

import os
import sys
import threading

__all__ = ["main"]


def main(argv: list[str]) -> int:
    """Relay until stdin ends or the server goes away; return the exit code."""
    from synartesis.errors import UsageError
    from synartesis.proxy.main import parse_args
    from synartesis.remote.bridge import open_remote, remote_spec

    try:
        opts, rest = parse_args(argv)
        if rest or set(opts) - {"server", "url", "url-env", "header", "header-env", "bearer-env",
                                "headers-helper", "transport", "log-level"}:
            raise ValueError("remote-relay takes --server NAME, --url/--url-env and the header flags only")
        from synartesis.log import set_level
        # quiet unless asked: whoever started the relay (undo, check, install) quotes its stderr
        # beside the JSON-RPC error that already says what went wrong
        set_level(opts.get("log-level", "silent"))
        spec = remote_spec({k: v.split("\n") for k, v in opts.items() if k != "log-level"})
        if spec is None:
            raise ValueError("--url URL (or --url-env VAR) is required")
        upstream = open_remote(opts.get("server", "remote"), spec, os.environ)
    except (ValueError, UsageError) as exc:
        sys.stderr.write(f"synartesis: {exc}\n")
        return 2
    from synartesis.proxy.downstream import StdioDownstream
    from synartesis.proxy.transport import RequestFailed

    downstream = StdioDownstream()
    done = threading.Event()
    gone = threading.Event()

    def on_close() -> None:
        gone.set()
        done.set()

    upstream.start(lambda raw, msg: downstream.send(raw), on_close)

    def forward(line: bytes) -> None:
        try:
            upstream.send(bytes(line))
        except RequestFailed:
            done.set()

    downstream.start(forward, done.set)
    done.wait()
    upstream.close()
    downstream.close()
    return 1 if gone.is_set() and not done.is_set() else 0
