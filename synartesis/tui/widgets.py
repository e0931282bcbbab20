"""A windowed list with a cursor and "N more above/below" lines, so a long list fits any
height (reference-spec §7.3: a frame never exceeds the terminal) and the selection is always
on screen."""

from __future__ import annotations

from dataclasses import dataclass, field

from rich.text import Text
from textual import events
from textual.message import Message
from textual.widget import Widget

__all__ = ["Item", "Pager", "window"]


@dataclass
class Item:
    """One entry: a stable ``key`` (kept selected across refreshes) and its display lines."""

    key: str
    lines: list[Text] = field(default_factory=list)
    data: object = None


def window(n: int, per: int, height: int, cursor: int, offset: int) -> tuple[int, int, bool]:
    """Which items fit: ``(first, count, overflow)``.

    ``n`` items of ``per`` lines each in ``height`` lines, keeping ``cursor`` visible and moving
    the previous ``offset`` as little as possible. With overflow two lines are kept for the
    "more above" / "more below" indicators.
    """
    if n == 0:
        return 0, 0, False
    per = max(1, per)
    if n * per <= height:
        return 0, n, False
    cap = max(1, (height - 2) // per)
    cursor = min(max(cursor, 0), n - 1)
    if cursor < offset:
        offset = cursor
    elif cursor >= offset + cap:
        offset = cursor - cap + 1
    offset = min(max(offset, 0), max(0, n - cap))
    return offset, min(cap, n - offset), True


class Pager(Widget):
    """A list of :class:`Item`; the app moves the cursor (``move``/``home``/``end``/``page``)."""

    DEFAULT_CSS = "Pager { height: 1fr; }"

    class Selected(Message):
        """Posted when a row is clicked."""

        def __init__(self, pager: "Pager", index: int) -> None:
            super().__init__()
            self.pager = pager
            self.index = index

    def __init__(self, empty: str = "nothing here", **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self.items: list[Item] = []
        self.cursor = 0
        self.top = 0
        self.empty = empty
        self._per = 1

    # -- content -----------------------------------------------------------------------
    def set_items(self, items: list[Item], empty: str | None = None, keep: bool = True,
                  select: str | None = None) -> None:
        """Replace the items; with ``keep`` the same key stays selected (new rows above it
        do not move the selection to another entry); ``select`` picks a key instead."""
        old = select if select is not None else (self.selected.key if keep and self.selected else None)
        self.items = items
        self._per = max((len(i.lines) for i in items), default=1)
        if empty is not None:
            self.empty = empty
        if old is not None:
            for idx, item in enumerate(items):
                if item.key == old:
                    self.cursor = idx
                    break
        if not keep:
            self.cursor, self.top = 0, 0
        self.cursor = min(max(self.cursor, 0), max(0, len(items) - 1))
        self.refresh()

    @property
    def selected(self) -> Item | None:
        """The entry under the cursor (None for an empty list)."""
        return self.items[self.cursor] if 0 <= self.cursor < len(self.items) else None

    # -- movement ----------------------------------------------------------------------
    def move(self, delta: int) -> None:
        """Move the cursor ``delta`` entries (clamped to the list)."""
        if self.items:
            self.cursor = min(max(self.cursor + delta, 0), len(self.items) - 1)
            self.refresh()

    def home(self) -> None:
        """Select the first entry."""
        self.move(-len(self.items))

    def end(self) -> None:
        """Select the last entry."""
        self.move(len(self.items))

    def page(self, direction: int) -> None:
        """Move one screenful down (``1``) or up (``-1``)."""
        _, count, _ = self.shown()
        self.move(direction * max(1, count))

    def shown(self) -> tuple[int, int, bool]:
        """(first item, item count, overflow) for the current height; updates the offset."""
        first, count, overflow = window(len(self.items), self._per, self.size.height or 1, self.cursor, self.top)
        self.top = first
        return first, count, overflow

    def visible_keys(self) -> list[str]:
        """Keys of the entries on screen now."""
        first, count, _ = self.shown()
        return [i.key for i in self.items[first:first + count]]

    # -- drawing -----------------------------------------------------------------------
    def render(self) -> Text:
        width = max(1, self.size.width)
        height = max(1, self.size.height)
        if not self.items:
            return Text(self.empty, style="dim")
        first, count, overflow = self.shown()
        lines: list[Text] = []
        if overflow:
            lines.append(Text(f"  ↑ {first} more above" if first else "", style="dim"))
        for idx in range(first, first + count):
            item = self.items[idx]
            chosen = idx == self.cursor
            for n in range(self._per):
                body = item.lines[n].copy() if n < len(item.lines) else Text("")
                mark = ("❯ " if n == 0 else "  ") if chosen else "  "
                line = Text(mark) + body
                line.truncate(width, overflow="ellipsis", pad=chosen)
                if chosen:
                    line.stylize("reverse" if n == 0 else "bold")
                lines.append(line)
        if overflow:
            below = len(self.items) - first - count
            while len(lines) < height - 1:
                lines.append(Text(""))
            lines.append(Text(f"  ↓ {below} more below" if below else "", style="dim"))
        return Text("\n").join(lines[:height])

    def on_click(self, event: events.Click) -> None:
        first, count, overflow = self.shown()
        row = event.y - (1 if overflow else 0)
        if row < 0:
            return
        idx = first + row // self._per
        if first <= idx < first + count:
            self.cursor = idx
            self.refresh()
            self.post_message(self.Selected(self, idx))
