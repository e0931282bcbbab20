"""The MCP proxy: relay, upstream child process, and the `tools/call` pipeline.

Standard library only (plus PyYAML for the policy): this package is imported on every client
launch, so it must not import typer, rich, pydantic or the mcp SDK.
"""
