"""Undo reports written to a pipe: markup stripped as rich strips it, without rich's Text."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st
from rich.errors import MarkupError
from rich.markup import escape, render

from synartesis.cli.undo_cmds import plain_markup

_PIECES = ["[bold]", "[/]", "[dim]", "[bold red]", "[/bold]", "\\[", "\\", "\\\\[x]", "[unverified]", "\\[unverified]",
           ":smile:", ":thumbs_up:", "x:y:", ":", "[", "]", "a", " b ", "é", "\n", '{"path":"/p","content":"x"}']


@given(st.lists(st.sampled_from(_PIECES) | st.text(max_size=5), max_size=10))
def test_plain_markup_is_what_rich_renders_as_plain_text(pieces):
    markup = "".join(pieces)
    try:
        want = render(markup).plain
    except MarkupError:  # not markup rich accepts (the report never writes such a line)
        return
    assert plain_markup(markup) == want


@given(st.text(max_size=30))
def test_escaped_text_comes_back_as_it_was(text):
    assert plain_markup(f"  [green]{'revert':<16}[/] {escape(text)}") == render(f"  [green]{'revert':<16}[/] {escape(text)}").plain
