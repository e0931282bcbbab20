"""`synartesis serve`: the policy's servers over Streamable HTTP, for clients that cannot start a
process. Each MCP session gets its own upstream and goes through the same engine and journal as
the stdio proxy."""
