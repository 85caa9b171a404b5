# The README's two commands: `make run` (the service on the embedded SQLite default) and
# `make test` (the whole suite, SQLite and PostgreSQL). Both do all set-up on a fresh Debian machine.
VENV ?= .venv
PY := $(VENV)/bin/python
PYTHON ?= python3
CHROMIUM ?= /usr/bin/chromium
HOST ?= 127.0.0.1
PORT ?= 8080
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: run test setup chromium haproxy js lint bench clean

run: setup
	$(VENV)/bin/scrapespy serve --host $(HOST) --port $(PORT)

# The suite runs twice: on SQLite, and the database tests again on a throwaway PostgreSQL
# database (skipped when the server is unreachable, except under CI where that fails). Each run
# spreads its test files over TEST_WORKERS processes (pytest-xdist; a file stays on one worker,
# so its module fixtures start once). The tests mostly wait on services, targets and browsers,
# so the two runs go side by side, each in a temporary directory of its own: the PostgreSQL
# run's output is shown when both are done, and either failing fails `make test` (figures:
# docs/decisions/0002-test-workers.md).
TEST_WORKERS ?= 2
PYTEST_RUN := $(VENV)/bin/pytest -n $(TEST_WORKERS) --dist loadfile
test: setup chromium haproxy js
	@temp=$$(mktemp -d); \
	SCRAPESPY_TEST_DB=postgresql $(PYTEST_RUN) --basetemp=$$temp/postgresql $(PYTEST_ARGS) \
	  > $$temp/postgresql.log 2>&1 & postgres=$$!; \
	trap 'kill $$postgres 2>/dev/null; rm -rf $$temp' INT TERM; \
	echo "the SQLite run (the PostgreSQL run's output follows it):"; \
	$(PYTEST_RUN) --basetemp=$$temp/sqlite $(PYTEST_ARGS); sqlite=$$?; \
	wait $$postgres; pg=$$?; \
	echo; echo "the PostgreSQL run:"; cat $$temp/postgresql.log; rm -rf $$temp; \
	[ $$sqlite -eq 0 ] && [ $$pg -eq 0 ]

setup: $(VENV)/.installed

# compat mode puts the checkout itself on sys.path, so twistd finds twisted/plugins here;
# the Python client (clients/python, its own distribution) is tested against the service, with
# its `mcp` extra: the MCP server that `scrapespy mcp` serves
$(VENV)/.installed: pyproject.toml clients/python/pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install -q -U pip
	$(VENV)/bin/pip install -q -e '.[dev]' --config-settings editable_mode=compat
	$(VENV)/bin/pip install -q -e './clients/python[mcp]'
	touch $@

# The js engine runs Debian's Chromium headless shell (the full browser is its fallback, and
# what the dashboard's browser tests drive); nothing downloads a browser at run time. Xvfb gives
# the bot detectors' reference, the full browser with no automation, a display
# (bench/detectors.py).
chromium:
	@[ -x $(CHROMIUM) ] && [ -x $(CHROMIUM)-headless-shell ] && command -v Xvfb >/dev/null || \
	  { $(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq \
	  chromium chromium-headless-shell xvfb >/dev/null; }
	@$(CHROMIUM) --version 2>/dev/null | head -n 1

# The load balancer of deploy/compose.yaml, which tests/test_e2e_load_balancer.py runs in front
# of two instances with the recipe's own haproxy.cfg.
haproxy:
	@command -v haproxy >/dev/null || { $(SUDO) apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq haproxy >/dev/null; }

# The JavaScript clients the Firecrawl tests run (firecrawl-js, firecrawl-mcp, the MCP SDK), at
# the versions of tests/js/package-lock.json; install scripts are not needed and not run.
JS_CLIENTS := tests/js
js: $(JS_CLIENTS)/node_modules/.installed

$(JS_CLIENTS)/node_modules/.installed: $(JS_CLIENTS)/package.json $(JS_CLIENTS)/package-lock.json
	@command -v npm >/dev/null || { $(SUDO) apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq nodejs npm >/dev/null; }
	cd $(JS_CLIENTS) && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error
	touch $@

lint: setup
	$(VENV)/bin/ruff check .
	$(VENV)/bin/mypy service middlewares pipelines spiders
	$(VENV)/bin/mypy --strict clients/python/src/scrapespy

# ScrapyRT, the peer, lives in a venv of its own (installed from PyPI for the benchmark only);
# trafilatura, the yardstick of the main-content extraction's cost, comes with the `bench` extra.
bench: setup chromium bench/.venv-scrapyrt/.installed $(VENV)/.bench-installed
	@command -v wrk >/dev/null && command -v nginx >/dev/null && command -v pdftotext >/dev/null || \
	  { $(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y \
	  -qq wrk nginx-light poppler-utils >/dev/null; }
	$(PY) -m bench
	$(PY) -m bench.js_soak --json bench/results/js_soak.json
	$(PY) -m bench.js_contenders --json bench/results/js_contenders.json
	$(PY) -m bench.firecrawl
	$(PY) -m bench.documents
	$(PY) -m bench.documents_e2e
	$(PY) -m bench.selectors --json bench/results/selectors.json
	$(PY) -m bench.structured
	$(PY) -m bench.search
	$(PY) -m bench.detectors --json bench/results/detectors.json
	$(PY) -m bench.browser_pool --json bench/results/browser_pool.json
	$(PY) -m bench.capacity
	$(PY) -m bench.monitors

$(VENV)/.bench-installed: $(VENV)/.installed
	$(VENV)/bin/pip install -q -e '.[dev,bench]' --config-settings editable_mode=compat
	touch $@

bench/.venv-scrapyrt/.installed: pyproject.toml
	$(PYTHON) -m venv bench/.venv-scrapyrt
	bench/.venv-scrapyrt/bin/pip install -q -U pip
	bench/.venv-scrapyrt/bin/pip install -q scrapyrt==0.18.1 \
	  "scrapy==$$($(PY) -c 'import scrapy; print(scrapy.__version__)')" \
	  selectolax cssselect scrapy-playwright
	touch $@

clean:
	rm -rf $(VENV) var build *.egg-info $(JS_CLIENTS)/node_modules
