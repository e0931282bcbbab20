"""Shipped policies (data): one YAML file per known MCP server."""
