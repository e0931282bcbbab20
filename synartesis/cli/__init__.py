"""The `synartesis` command line.

`main()` is the single error boundary: it turns :class:`SynartesisError` into
``synartesis: MESSAGE`` on stderr and the error's exit code (0 / 1 / 2, DESIGN §9).
`synartesis proxy …` is handed to the stdlib-only proxy before typer or rich are imported:
every MCP client pays the CLI's import time on every launch otherwise.
"""

from __future__ import annotations

import sys

__all__ = ["main"]


def _saga(**kw: object) -> str:
    """Saga mode's rollback, given to the proxy from here (above both), so the proxy imports
    nothing of the undo engine; loaded only when a call fails in saga mode."""
    from synartesis.services.saga import rollback
    return rollback(**kw)  # type: ignore[arg-type]


def _bridge():
    """The stdio ↔ remote bridge module, given to the proxy from here (above both) so the proxy
    imports nothing of the remote package; called only for ``proxy --url``."""
    from synartesis.remote import bridge
    return bridge


def main(argv: list[str] | None = None) -> None:
    """Entry point of the console script and of ``python -m synartesis``."""
    args = list(sys.argv[1:] if argv is None else argv)
    if args and args[0] == "proxy":
        from synartesis.proxy.main import main as proxy_main

        sys.exit(proxy_main(args[1:], saga_hook=_saga, bridge=_bridge))
    if args and args[0] == "remote-relay":  # what undo, check, pin and init start for a remote server
        from synartesis.remote.relay import main as relay_main

        sys.exit(relay_main(args[1:]))
    from synartesis.cli.app import run

    sys.exit(run(args))
