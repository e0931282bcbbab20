"""``synartesis desktop``: a loopback web app where a person talks to a model and every tool call
goes out through the synartesis proxy of the server it names (DESIGN §10, "The window").

Rooms: :mod:`.guard` (loopback, token, Host/Origin), :mod:`.app` (the HTTP routes and live
events), :mod:`.window` (conversations and the agent loop), :mod:`.links` (one mcp SDK
``ClientSession`` per server, each through ``synartesis proxy``), :mod:`.journalview` (cards and
the ledger, read back from the journal), :mod:`.models` (the model adapters), :mod:`.keys`
(API keys in the OS keychain or in memory), ``static/`` (the page: plain HTML, CSS, JS).
Nothing here classifies, gates or undoes on its own: the proxy and the CLI's services do.
"""
