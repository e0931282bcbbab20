"""The console: `synartesis` with no command (issue 6).

``synartesis.tui.render`` formats rows and the piped frame (rich only); ``synartesis.tui.app``
holds the textual application and is imported only when a terminal console is started, so other
commands never pay textual's import time.
"""

__all__: list[str] = []
