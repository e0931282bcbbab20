"""Client descriptors (data): one TOML file per MCP client."""
