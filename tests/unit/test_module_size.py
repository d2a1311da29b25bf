"""No module of the product is over 500 lines (issue 24): a module that grows past it is doing two jobs, and the
next change to it should split it by job first (docs/architecture.md)."""

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("console", "widgets", "engines", "packaging")
MOST_LINES = 500


def test_no_module_is_over_500_lines():
    sizes = {path.relative_to(ROOT).as_posix(): len(path.read_text(encoding="utf-8").splitlines())
             for package in PACKAGES for path in (ROOT / package).rglob("*.py")}
    assert len(sizes) > 300  # the walk found the product
    over = {name: lines for name, lines in sizes.items() if lines > MOST_LINES}
    assert not over, f"over {MOST_LINES} lines (split them by job): {over}"
