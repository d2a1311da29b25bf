# The two commands of the README: `make run` and `make test`. Both set up .venv when it is missing.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
export QT_API := pyside6

.PHONY: run test lint bench setup clean package

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	# CPU build pinned for dev/CI machines (a plain `torch` would pull a multi-GB CUDA build).
	$(BIN)/python -m pip install -q torch==2.13.0
	$(BIN)/python -m pip install -q -e '.[dev]'
	touch $(STAMP)

setup: $(STAMP)

run: $(STAMP)
	$(BIN)/labconsole

lint: $(STAMP)
	$(BIN)/ruff check console widgets engines tests packaging
	$(BIN)/lint-imports

test: lint
	QT_QPA_PLATFORM=offscreen $(BIN)/python -m pytest tests --ignore=tests/benchmarks
	QT_QPA_PLATFORM=offscreen $(BIN)/python -m pytest tests/benchmarks -s

bench: $(STAMP)
	QT_QPA_PLATFORM=offscreen $(BIN)/python -m pytest tests/benchmarks -s

clean:
	rm -rf $(VENV) build dist
