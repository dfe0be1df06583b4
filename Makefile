# Two commands on a fresh machine: `make splits` (set up, then curate the bundled sample) and
# `make test`. SOURCE=<url|zip|folder> curates another source (e.g. the real archive).
SHELL := /bin/bash
# uv, found once: through a pyenv shim each call would cost ~0.1 s more (five calls per run).
ifeq ($(origin UV),undefined)
UV := $(shell (pyenv which uv || command -v uv) 2>/dev/null || echo python3 -m uv)
endif
BUILD ?= build
SAMPLE_ZIP := $(BUILD)/sample/periapical-sample.zip
SOURCE ?=
# Bytecode is written even where PYTHONDONTWRITEBYTECODE is set: a command with nothing to do
# costs ~0.15 s, of which compiling click, typer and rich afresh would double.
PERICURATE = env -u PYTHONDONTWRITEBYTECODE $(UV) run --frozen --no-sync pericurate

.PHONY: uv setup setup-dev splits test bench clean

# `make splits` needs the toolkit alone (no dev tools, no extras); `make test` needs them all.
# --inexact leaves what a `make test` installed in place, so switching costs nothing.
uv:
	@command -v uv >/dev/null 2>&1 || python3 -m uv --version >/dev/null 2>&1 \
		|| python3 -m pip install --quiet uv

# Synced once per change of the lock or a pyproject: the stamp lives in the environment, so a
# removed .venv is set up again.
SYNCED := .venv/.pericurate-synced
setup: uv $(SYNCED)

$(SYNCED): uv.lock pyproject.toml $(wildcard environments/*/pyproject.toml)
	$(UV) sync --frozen --inexact --no-dev
	touch $@

setup-dev: uv
	$(UV) sync --frozen --all-extras

$(SAMPLE_ZIP): | setup
	$(PERICURATE) sample $(SAMPLE_ZIP)

ifeq ($(SOURCE),)
splits: setup $(SAMPLE_ZIP)
	$(PERICURATE) download $(SAMPLE_ZIP) --build $(BUILD) --lock $(BUILD)/sample/source.lock.json
	# The sample plants bad files on purpose: their rejection is expected, not a failure.
	$(PERICURATE) build --build $(BUILD) --no-fail-on-rejected
	$(PERICURATE) card --build $(BUILD)
	$(PERICURATE) agreement --build $(BUILD)
else
splits: setup
	$(PERICURATE) download "$(SOURCE)" --build $(BUILD)
	$(PERICURATE) build --build $(BUILD)
	$(PERICURATE) card --build $(BUILD)
	$(PERICURATE) agreement --build $(BUILD)
endif

test: setup-dev
	$(UV) run --frozen ruff check .
	$(UV) run --frozen ruff format --check .
	env -u PYTHONDONTWRITEBYTECODE $(UV) run --frozen pytest -n 2

# Speed and memory figures (not part of `make test`): builds a 4,000-film synthetic corpus
# first (slow), then writes bench/results.json and bench/RESULTS.md.
bench: setup-dev
	$(UV) sync --frozen --inexact --all-extras --group bench
	$(UV) run --frozen --no-sync python -m bench.run

clean:
	rm -rf $(BUILD)
