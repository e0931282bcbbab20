"""The bundled demo: a toy CRM MCP server (`crm_server`) that `synartesis demo` drives through the proxy."""
