# Two commands on a fresh machine: `make splits` (set up, then curate the bundled sample) and
# `make test`. SOURCE=<url|zip|folder> curates another source (e.g. the real archive).
SHELL := /bin/bash
UV ?= $(shell command -v uv 2>/dev/null || echo $(HOME)/.local/bin/uv)
BUILD ?= build
SAMPLE_ZIP := $(BUILD)/sample/periapical-sample.zip
SOURCE ?=
PERICURATE = $(UV) run --frozen pericurate

.PHONY: setup splits test lint bench clean

$(UV):
	python3 -m pip install --user --quiet uv || python3 -m pip install --quiet uv

setup: | $(UV)
	$(UV) sync --frozen --all-extras

$(SAMPLE_ZIP): | setup
	$(PERICURATE) sample $(SAMPLE_ZIP)

ifeq ($(SOURCE),)
splits: setup $(SAMPLE_ZIP)
	$(PERICURATE) download $(SAMPLE_ZIP) --build $(BUILD) --lock $(BUILD)/sample/source.lock.json
	# The sample plants bad files on purpose: their rejection is expected, not a failure.
	$(PERICURATE) build --build $(BUILD) --no-fail-on-rejected
else
splits: setup
	$(PERICURATE) download "$(SOURCE)" --build $(BUILD)
	$(PERICURATE) build --build $(BUILD)
endif

test: setup
	$(UV) run --frozen ruff check .
	$(UV) run --frozen ruff format --check .
	$(UV) run --frozen pytest -n 2

clean:
	rm -rf $(BUILD)
