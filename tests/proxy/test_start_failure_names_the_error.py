"""A server that dies at start-up is described by the line that names its error, not only the
last lines of its stack trace (a new user's round 19, #5: a Node server whose module was gone
showed `code: 'MODULE_NOT_FOUND'`, `}` and the Node version, and not "Cannot find module")."""

from __future__ import annotations

import sys

import pytest

from synartesis.errors import UpstreamError
from synartesis.proxy.client import introspect

NODE_LIKE = r"""
import sys
sys.stderr.write("node:internal/modules/cjs/loader:1228\n  throw err;\n  ^\n\n"
                 "Error: Cannot find module '/srv/dist/index.js'\n"
                 + "".join(f"    at Module._load (node:internal/modules/cjs/loader:{n})\n" for n in range(8))
                 + "{\n  code: 'MODULE_NOT_FOUND',\n  requireStack: []\n}\n\nNode.js v20.20.2\n")
sys.exit(1)
"""


def test_a_server_that_dies_at_start_is_described_by_its_error_line():
    with pytest.raises(UpstreamError) as raised:
        introspect(sys.executable, ["-c", NODE_LIKE], timeout=20, label="files")
    text = str(raised.value)
    assert "Error: Cannot find module '/srv/dist/index.js'" in text, text
    assert "Node.js v20.20.2" in text  # the last lines are kept too
