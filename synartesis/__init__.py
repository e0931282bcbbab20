"""Synartesis: an undo layer for AI agents (an MCP proxy, a journal, undo and gates)."""

__version__ = "0.1.0"
