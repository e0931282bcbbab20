"""What install, status and uninstall print of a client config is shown, not obeyed (adversarial
review #7): rich markup in a server name or a path is text (a stray `[/x]` used to be a
MarkupError traceback, `[conceal]` hid what followed) and terminal escapes are spelled out."""
from installkit import fake_proxy, place

import helpers

CONFIG = '{"mcpServers": {"evil[/x] [conceal]hidden\\u001b[2K": {"command": "npx", "args": ["pkg"]}}}'


def test_a_server_name_holding_markup_and_escapes_is_printed_as_it_is(fake_home, tmp_path):
    place(fake_home, "cursor", CONFIG)
    for cmd in (["install", "--dry-run", "--no-start", "--proxy-path", fake_proxy(tmp_path)], ["status"]):
        p = helpers.cli(*cmd, cwd=tmp_path)
        out = p.stdout + p.stderr
        assert "Traceback" not in out and "\x1b" not in out, (cmd, out)
        assert "evil[/x] [conceal]hidden\\x1b[2K" in out, (cmd, out)
