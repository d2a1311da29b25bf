"""Everything Qt on the console side: pages, main window, app start, self-test."""
