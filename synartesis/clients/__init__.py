"""Adapters to AI clients' MCP configuration files (read, plan, render; never write).

Descriptors (one per client) are data in the root ``clients/`` folder, shipped as the package
``synartesis.clients.defs``; :mod:`synartesis.clients.descriptor` loads them,
:mod:`synartesis.clients.locations` resolves their paths against an injectable
:class:`synartesis.paths.Env`, and :mod:`synartesis.clients.adapters` parses files and renders new
bytes with the style-preserving editors :mod:`~synartesis.clients.jsonedit` and
:mod:`~synartesis.clients.tomledit`. Writing is :mod:`synartesis.fsops`'s job alone.
"""
