"""Pages connect themselves (console.ui.page_links) and are built when first shown: a link is made when the page it
needs is built later, a request builds the page it asks for, and the window builds no page before it is needed."""

from PySide6 import QtCore

from console.ui.page_links import Link, PageLinks


class Page(QtCore.QObject):
    sig_done = QtCore.Signal(str)

    def __init__(self):
        super().__init__()
        self.heard: list[str] = []


class Host:
    """A window in miniature: pages built on demand, the one in front remembered."""

    def __init__(self, links):
        self.pages: dict[str, Page] = {}
        self.front = None
        self.links = PageLinks(self, links)

    def page(self, name):
        if name not in self.pages:
            self.pages[name] = Page()
            self.links.built(name, self.pages[name])
        return self.pages[name]

    def show_page(self, name):
        self.front = name


def hear(page, text):
    page.heard.append(text)


def test_a_notification_is_connected_when_the_page_it_needs_is_built_later():
    host = Host([Link("sweeps", "sig_done", "history", hear)])
    sweeps = host.page("sweeps")
    sweeps.sig_done.emit("before")  # no History page yet: nobody to tell, nothing built for it
    assert "history" not in host.pages
    history = host.page("history")
    sweeps.sig_done.emit("after")
    assert history.heard == ["after"] and host.front is None


def test_a_notification_is_connected_whichever_page_is_built_first():
    host = Host([Link("sweeps", "sig_done", "history", hear)])
    history = host.page("history")
    host.page("sweeps").sig_done.emit("one")
    assert history.heard == ["one"]


def test_a_request_builds_the_page_it_asks_for_and_brings_it_to_the_front():
    host = Host([Link("history", "sig_done", "compare", hear, opens=True)])
    host.page("history").sig_done.emit("run-a")
    assert host.pages["compare"].heard == ["run-a"] and host.front == "compare"


def test_the_windows_own_wiring_waits_for_its_page():
    host = Host([])
    seen = []
    host.links.when_built("history", seen.append)
    assert seen == []
    history = host.page("history")
    host.links.when_built("history", seen.append)  # already built: at once
    assert seen == [history, history]


def test_the_window_builds_a_page_when_first_shown_and_links_it_then(qtbot, tmp_path, monkeypatch):
    from console.ui.app import build_main_window

    window = build_main_window(tmp_path / "history.db", discover_targets=False, telemetry_hz=None)
    qtbot.addWidget(window)
    assert set(window.pages) == {"run"}  # the Run page, in front; the others wait to be shown
    sweeps_position = [info.name for info in window.page_infos].index("sweeps")
    assert window.tabs.widget(sweeps_position).text() == "Loading…"
    window.tabs.setCurrentIndex(sweeps_position)  # the user picks the tab
    sweeps = window.pages["sweeps"]
    assert window.tabs.currentWidget() is sweeps and "history" not in window.pages
    history = window.page("history")  # built after the Sweeps page: the link is made now
    read_again = []
    monkeypatch.setattr(history, "reload", lambda: read_again.append("history"))
    sweeps.sig_sweep_finished.emit({"sweep_id": "s1"})
    assert read_again == ["history"]
