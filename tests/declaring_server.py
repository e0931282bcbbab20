"""A small notes server (mcp SDK, stdio) that declares how its writes are compensated, in
ChronoMCP's ``_meta["dev.chronomcp/compensate"]`` shape, plus the MCP tool annotations.

Used by the drafting tests (issue 10 item 9): every tool is one case of what ``init`` /
``install`` must make of a declaration. State is a JSON file (``--state FILE``) so an undo,
which starts the server again, sees the notes the agent made.

The ``_meta`` shape (assumed; the exact ChronoMCP spec was not on disk)::

    {"dev.chronomcp/compensate": {
        "reversibility": "readonly" | "compensable" | "irreversible",
        "compensation": {"toolName": "...", "parameterMapping": {"arg": "$.output.structuredContent.id"}}}}

``parameterMapping`` maps each argument of the compensating tool to a path into the original
call: ``$.input.…`` (its arguments) or ``$.output.structuredContent.…`` (its structured result).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys

with contextlib.redirect_stdout(sys.stderr):
    import anyio
    from mcp.server import MCPServer
    from mcp_types import CallToolResult, TextContent, ToolAnnotations

KEY = "dev.chronomcp/compensate"


def declare(reversibility: str, tool: str | None = None, mapping: dict | None = None) -> dict:
    """A tool's ``_meta`` declaring its reversibility (and compensation)."""
    body: dict = {"reversibility": reversibility}
    if tool is not None:
        body["compensation"] = {"toolName": tool, "parameterMapping": mapping or {}}
    return {KEY: body}


def build(state_path: str) -> MCPServer:
    server = MCPServer(name="declaring-notes", version="1.0", log_level="WARNING")

    def load() -> dict:
        if os.path.exists(state_path):
            with open(state_path, encoding="utf-8") as f:
                return json.load(f)
        return {"next": 1, "notes": {}}

    def save(state: dict) -> None:
        tmp = state_path + ".tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump(state, f, sort_keys=True, indent=1)
        os.replace(tmp, state_path)

    def ok(payload: dict) -> CallToolResult:
        return CallToolResult(content=[TextContent(type="text", text=json.dumps(payload, sort_keys=True))],
                              structured_content=payload)

    def fail(text: str) -> CallToolResult:
        return CallToolResult(content=[TextContent(type="text", text=text)], is_error=True)

    additive = ToolAnnotations(read_only_hint=False, destructive_hint=False)
    destructive = ToolAnnotations(read_only_hint=False, destructive_hint=True, idempotent_hint=True)

    @server.tool(annotations=additive, meta=declare("compensable", "delete_note",
                                                    {"id": "$.output.structuredContent.id"}))
    async def create_note(title: str) -> CallToolResult:
        """Create a note; returns {id, title}."""
        state = load()
        nid = f"n{state['next']}"
        state["next"] += 1
        state["notes"][nid] = title
        save(state)
        return ok({"id": nid, "title": title})

    @server.tool(annotations=additive, meta=declare("compensable", "rename_note", {
        "id": "$.input.id", "title": "$.output.structuredContent['previous']"}))
    async def rename_note(id: str, title: str) -> CallToolResult:  # noqa: A002
        """Rename a note; returns {id, previous}."""
        state = load()
        if id not in state["notes"]:
            return fail(f"no note {id}")
        previous, state["notes"][id] = state["notes"][id], title
        save(state)
        return ok({"id": id, "previous": previous})

    @server.tool(annotations=destructive)
    async def delete_note(id: str) -> CallToolResult:  # noqa: A002
        """Delete a note."""
        state = load()
        state["notes"].pop(id, None)
        save(state)
        return ok({"deleted": id})

    @server.tool(annotations=ToolAnnotations(read_only_hint=True), meta=declare("readonly"))
    async def get_note(id: str) -> CallToolResult:  # noqa: A002
        """Read one note."""
        state = load()
        return ok({"id": id, "title": state["notes"].get(id)})

    # -- declarations that must not be trusted ---------------------------------------------
    @server.tool(annotations=additive, meta=declare("compensable", "restore_note",
                                                    {"id": "$.output.content[0].text"}))
    async def archive_note(id: str) -> CallToolResult:  # noqa: A002
        """Archive a note (a raw text block is no static path into a payload)."""
        return ok({"archived": id})

    @server.tool(annotations=additive, meta=declare("compensable", "untag_notes", {"ids": "$.input.ids[*]"}))
    async def tag_notes(ids: list[str]) -> CallToolResult:
        """Tag notes (a wildcard is no static path)."""
        return ok({"tagged": ids})

    @server.tool(annotations=additive, meta=declare("compensable", "unexport", {"id": "$.input.id"}))
    async def export_note(id: str) -> CallToolResult:  # noqa: A002
        """Export a note (its compensation names a tool the server does not have)."""
        return ok({"exported": id})

    @server.tool(annotations=ToolAnnotations(read_only_hint=True), meta=declare("compensable", "delete_note",
                                                                                  {"id": "$.input.id"}))
    async def touch_note(id: str) -> CallToolResult:  # noqa: A002
        """Says it is read-only and compensable at once."""
        return ok({"touched": id})

    @server.tool(annotations=ToolAnnotations(read_only_hint=False, destructive_hint=True),
                 meta=declare("irreversible"))
    async def purge_notes() -> CallToolResult:
        """Delete every note for good."""
        state = load()
        state["notes"] = {}
        save(state)
        return ok({"purged": True})

    @server.tool()
    async def restore_note(id: str) -> CallToolResult:  # noqa: A002
        """Restore an archived note."""
        return ok({"restored": id})

    @server.tool()
    async def untag_notes(ids: list[str]) -> CallToolResult:
        """Remove tags."""
        return ok({"untagged": ids})

    return server


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--state", required=True)
    opts = ap.parse_args()
    server = build(opts.state)
    anyio.run(server.run_stdio_async)


if __name__ == "__main__":
    main()
