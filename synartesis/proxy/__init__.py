"""The MCP proxy: the relay engine, its transports, and the ``tools/call`` pipeline.

Rooms (imports point down this list, never back up): ``main`` (start-up) → ``engine`` /
``multi`` (routing, the ordered lane, the journal thread) → ``pipeline`` (classify → pins →
gate → record → snapshot → forward → inverse → post-state, transport-agnostic) →
``transport`` (the Upstream interface) ← ``stdio`` (a child on pipes) and ``downstream``
(our stdin/stdout); ``client`` is the CLI's own MCP client over ``stdio``.

Standard library only on the proxy's path (PyYAML only when the compiled policy cache
misses): this package is imported on every client launch, so it must not import typer, rich,
pydantic, asyncio or the mcp SDK.
"""
