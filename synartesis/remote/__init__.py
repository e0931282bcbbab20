"""Remote MCP servers: the Streamable HTTP / SSE upstream, OAuth sign-in, token store, headers by reference.

Nothing here is imported on the stdio proxy's path: the proxy imports this package only when
its upstream is a URL (``proxy --url``), and the CLI only for remote entries.
"""
