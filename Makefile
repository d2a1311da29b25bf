# The two commands of the README: `make run` and `make test`. Both set up .venv when it is missing.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
export QT_API := pyside6

.PHONY: run test lint bench setup clean package package-check smoke

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

# ---- Packaging (packaging/README.md). Not part of `make test`: the bundle takes minutes to build.
# The bundle's build-info file is written last and is the completion marker: a build that dies leaves only
# dist/.labconsole.partial, and make rebuilds. PyInstaller's cache in build/pyinstaller makes a rebuild quicker.
VERSION := $(shell sed -n 's/^__version__ = "\(.*\)"/\1/p' console/__init__.py)
DEB_ARCH := $(shell dpkg --print-architecture 2>/dev/null || uname -m)
BUNDLE_DONE := dist/labconsole/_internal/labconsole-build.json
TARBALL := dist/lab-console-$(VERSION)-linux-$(shell uname -m).tar.gz
DEB := dist/lab-console_$(VERSION)_$(DEB_ARCH).deb
APP_SOURCES := $(shell find console engines widgets assets -type f -not -path '*/__pycache__/*' 2>/dev/null)
PACKAGING_SOURCES := packaging/labconsole.spec packaging/entry.py packaging/bundle_config.py packaging/build.py

package: $(BUNDLE_DONE)
	@# the two archives compress the same bundle, each on one core: side by side
	$(MAKE) --no-print-directory -j2 $(TARBALL) $(DEB)

package-check: $(STAMP)
	$(BIN)/python packaging/build.py check

$(BUNDLE_DONE): $(STAMP) pyproject.toml $(APP_SOURCES) $(PACKAGING_SOURCES)
	$(BIN)/python packaging/build.py bundle

$(TARBALL): $(BUNDLE_DONE)
	$(BIN)/python packaging/build.py tarball

$(DEB): $(BUNDLE_DONE)
	$(BIN)/python packaging/build.py deb

# The frozen smoke test: the .tar.gz unpacked outside the checkout, then the .deb installed and removed (as root;
# skipped otherwise, unless SMOKE_FLAGS=--require-deb as in CI).
smoke: package
	$(BIN)/python packaging/smoke_test.py --tarball $(TARBALL) --deb $(DEB) $(SMOKE_FLAGS)
