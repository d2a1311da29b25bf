"""Pages connect themselves: each page's entry in console.ui.pages declares the other pages it listens to or asks
for (`Link`), and `PageLinks` makes each connection as soon as the pages it joins exist — whichever is built first
(Spyder's plug-ins declare what they require and are told when it is available). The window only says when it has
built a page, so it names no page-to-page wiring; pages built on first show need no more than that.

Two kinds of link:
- a notification (`opens=False`: "the Sweeps page finished a sweep → the History page reads again"), connected
  while both pages exist; a page built later reads what is new when it is built, so it misses nothing;
- a request (`opens=True`: "the History page's Compare → the Compare page"), connected when the asking page is built;
  the page asked is built if it was not yet and brought to the front, then acts.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Protocol


@dataclass(frozen=True)
class Link:
    """`source`'s `signal` makes `target` act: `act(target_page, *signal_arguments)`."""

    source: str  # the page whose signal is heard
    signal: str  # the signal's attribute path from that page: "sig_stored", "noise_banner.sig_details_requested"
    target: str  # the page that acts
    act: Callable[..., Any]
    opens: bool = False  # a request: the target is built when asked and brought to the front first


class Host(Protocol):
    """What the links need from the window."""

    pages: dict[str, Any]  # the pages built so far, by name

    def page(self, name: str) -> Any: ...  # the page, built now if it was not yet

    def show_page(self, name: str) -> None: ...


class PageLinks:
    """The links of the window's pages, made as the pages are built; `when_built` does the same for the window's
    own wiring (its actions and collaborators, not other pages)."""

    def __init__(self, host: Host, links: Iterable[Link]):
        self._host = host
        self._links = list(links)
        self._waiting: dict[str, list[Callable[[Any], None]]] = {}

    def when_built(self, name: str, callback: Callable[[Any], None]) -> None:
        """`callback(page)` now if the page `name` is built, else once it is."""
        page = self._host.pages.get(name)
        if page is not None:
            callback(page)
        else:
            self._waiting.setdefault(name, []).append(callback)

    def built(self, name: str, page: Any) -> None:
        """The window built the page `name`: make every link it completes, then the window's own waiting wiring."""
        for link in self._links:
            if link.source == name and link.opens:
                signal = _signal(page, link.signal)
                if signal is not None:
                    signal.connect(lambda *args, link=link: self._request(link, args))
            elif not link.opens and name in (link.source, link.target):
                source, target = self._host.pages.get(link.source), self._host.pages.get(link.target)
                signal = _signal(source, link.signal) if target is not None else None
                if signal is not None:
                    signal.connect(lambda *args, link=link, target=target: link.act(target, *args))
        for callback in self._waiting.pop(name, []):
            callback(page)

    def _request(self, link: Link, args: tuple[Any, ...]) -> None:
        target = self._host.page(link.target)
        if target is None:  # a plug-in list without that page
            return
        self._host.show_page(link.target)
        link.act(target, *args)


def _signal(page: Any, path: str) -> Any:
    """The signal at `path` from the page; None when the page is not built or has none (a plug-in replaced it)."""
    owner = page
    for part in path.split("."):
        owner = getattr(owner, part, None)
    return owner
