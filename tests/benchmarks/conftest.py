import pytest


def pytest_collection_modifyitems(items):
    """Everything in tests/benchmarks is a benchmark: `make test` runs them after the tests, with -s."""
    for item in items:
        item.add_marker(pytest.mark.benchmark)
