# One venv, created on demand; every target goes through it.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-dev
export CMAKE_ARGS ?= -DGGML_NATIVE=OFF

.PHONY: install test lint pytest demo bench bench-quick docs clean
NODE_STAMP := tests/mcp_servers/node_modules/.installed

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip

$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/pip install -q -e '.[dev,local]'
	touch $(STAMP)

install: $(STAMP) $(NODE_STAMP)

# The reference MCP servers the tests mount (npm). Skipped when npm is absent; those tests then skip.
$(NODE_STAMP): tests/mcp_servers/package-lock.json
	@if command -v npm >/dev/null; then npm ci --prefix tests/mcp_servers --silent --no-audit --no-fund && touch $@; \
	else echo "npm not found: the MCP reference-server tests will skip"; fi

lint: $(STAMP)
	$(BIN)/ruff check src tests examples benchmarks
	$(BIN)/ruff format --check src
	$(BIN)/pyright -p pyproject.toml
	$(BIN)/lint-imports
	$(BIN)/pyright -p tests/typing

pytest: $(STAMP) $(NODE_STAMP)
	rm -f .coverage .coverage.*
	$(BIN)/coverage run -m pytest $(PYTEST_ARGS)
	$(BIN)/coverage combine -q
	$(BIN)/coverage report

# The README's test command: lint, strict types, tests with a branch-coverage gate.
test: lint pytest

demo: $(STAMP)
	$(BIN)/python examples/research_agent.py

$(VENV)/.installed-bench: $(STAMP)
	$(BIN)/pip install -q -e '.[dev,local,bench]'
	touch $@

bench: $(VENV)/.installed-bench
	$(BIN)/python benchmarks/run_all.py

bench-quick: $(VENV)/.installed-bench
	$(BIN)/python benchmarks/run_all.py --quick

# The user guide (docs/, mkdocs.yml): strict, so a broken link or a missing reference fails; offline.
$(VENV)/.installed-docs: pyproject.toml | $(BIN)/python
	$(BIN)/pip install -q -e '.[docs]'
	touch $@

docs: $(VENV)/.installed-docs
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --site-dir site

clean:
	rm -rf $(VENV) .coverage .coverage.* build dist site
