# Two commands on a fresh machine: `make splits` (set up, then curate the bundled sample) and
# `make test`. SOURCE=<url|zip|folder> curates another source (e.g. the real archive).
SHELL := /bin/bash
# uv's own warning that an activated venv is not the project's .venv is noise here: every
# command below runs in the project's .venv on purpose.
unexport VIRTUAL_ENV
# Where `make uv` installs uv when none is found: a private venv (never the system Python,
# which Debian and Ubuntu forbid pip to write to, PEP 668).
UV_HOME ?= $(or $(XDG_CACHE_HOME),$(HOME)/.cache)/pericurate/uv
# uv, found once: through a pyenv shim each call would cost ~0.1 s more.
ifeq ($(origin UV),undefined)
UV := $(shell (pyenv which uv || command -v uv || command -v $(UV_HOME)/bin/uv) 2>/dev/null \
	|| echo $(UV_HOME)/bin/uv)
endif
BUILD ?= build
SAMPLE_ZIP := $(BUILD)/sample/periapical-sample.zip
SOURCE ?=
# Extra options of `pericurate build` for SOURCE builds, e.g. --no-fail-on-rejected.
BUILD_FLAGS ?=
# Bytecode is written even where PYTHONDONTWRITEBYTECODE is set: a command with nothing to do
# costs ~0.15 s, of which compiling click, typer and rich afresh would double.
PERICURATE = env -u PYTHONDONTWRITEBYTECODE $(UV) run --frozen --no-sync pericurate

.PHONY: uv setup setup-dev environments splits test browser bench clean

# uv on PATH (or installed here before) is used as it is; otherwise it is installed from PyPI
# into UV_HOME, a venv of its own made by `python3 -m venv`.
uv:
	@$(UV) --version >/dev/null 2>&1 || { \
		echo "uv not found: installing it into $(UV_HOME) (a private venv, nothing system-wide)."; \
		python3 -m venv "$(UV_HOME)" || { echo "python3 -m venv failed: on Debian or Ubuntu \
install python3-venv (sudo apt-get install python3-venv), or install uv yourself \
(https://docs.astral.sh/uv/)." >&2; exit 1; }; \
		"$(UV_HOME)/bin/python" -m pip install --quiet --disable-pip-version-check uv \
			&& $(UV) --version; }

# `make splits` needs the toolkit alone (no dev tools, no extras); `make test` needs them all.
# --inexact leaves what a `make test` installed in place, so switching costs nothing.
# Synced once per change of the lock or a pyproject: the stamp lives in the environment, so a
# removed .venv is set up again.
SYNCED := .venv/.pericurate-synced
setup: uv $(SYNCED)

$(SYNCED): uv.lock pyproject.toml $(wildcard environments/*/pyproject.toml)
	$(UV) sync --frozen --inexact --no-dev
	touch $@

setup-dev: uv
	$(UV) sync --frozen --all-extras

# The two task environments with their commands (vf-eval, periapical-lesions-results,
# dental-assistant-eval), added to the toolkit `make splits` installs: no dev tools, no extras
# of the toolkit. --inexact keeps what is there; a later `make splits` keeps these in turn.
environments: setup
	$(UV) sync --frozen --inexact --no-dev --package periapical-lesions --extra agent
	$(UV) sync --frozen --inexact --no-dev --package dental-assistant-agent

$(SAMPLE_ZIP): | setup
	$(PERICURATE) sample $(SAMPLE_ZIP)

# The source lock (sha256 and size of the archive) lives in the build folder. The sample
# plants bad files on purpose: their rejection is expected, not a failure. `pericurate
# splits` runs download, build, card, agreement and next in one process (a rerun with nothing
# changed is mostly start-up), and ends with what to look at and the commands that come next.
ifeq ($(SOURCE),)
splits: setup $(SAMPLE_ZIP)
	$(PERICURATE) splits $(SAMPLE_ZIP) --build $(BUILD) --no-fail-on-rejected
else
splits: setup
	$(PERICURATE) splits "$(SOURCE)" --build $(BUILD) $(BUILD_FLAGS)
endif

# What CI runs (.ci/run is this target and nothing else). The review page's browser test needs
# a headless Chromium: `browser` installs Debian's where it can (root or CI), and otherwise says
# in one line that the test will be skipped.
test: setup-dev browser
	@echo "make test: ruff, mypy, the layering, then the whole suite (about 10 minutes on 2 cores)."
	$(UV) run --frozen ruff check .
	$(UV) run --frozen ruff format --check .
	$(UV) run --frozen mypy
	$(UV) run --frozen lint-imports --no-cache
	env -u PYTHONDONTWRITEBYTECODE $(UV) run --frozen pytest -n 2

browser:
	@if command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1; then \
		:; \
	elif [[ "$${CI:-}" == "true" || $$(id -u) -eq 0 ]]; then \
		sudo=""; [[ $$(id -u) -eq 0 ]] || sudo="sudo"; \
		echo "installing chromium for the review page's browser test (apt-get)"; \
		$$sudo apt-get update -qq >/dev/null && $$sudo env DEBIAN_FRONTEND=noninteractive \
			apt-get install -y -qq --no-install-recommends chromium >/dev/null; \
	else \
		echo "chromium is missing, so the review page's browser test will be SKIPPED \
(sudo apt-get install chromium)." >&2; \
	fi

# Speed and memory figures (not part of `make test`): builds a 4,000-film synthetic corpus
# first (slow), then writes bench/results.json and bench/RESULTS.md.
bench: setup-dev
	$(UV) sync --frozen --project bench/peers/env
	$(UV) run --frozen --no-sync python -m bench.run

clean:
	rm -rf $(BUILD)
