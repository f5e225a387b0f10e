# The README's commands. Each one sets up what it needs on a fresh machine (a venv in .venv).
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
PIP    := $(BIN)/pip --disable-pip-version-check -q

.PHONY: demo test lint docs docs-cli bench clean

$(BIN)/python:
	$(PYTHON) -m venv --upgrade-deps $(VENV)  # a current pip: 23.2 (Python 3.11's) warns on lxml's extra

$(VENV)/.installed: pyproject.toml | $(BIN)/python
	$(PIP) install -e .
	touch $@

$(VENV)/.installed-test: pyproject.toml | $(BIN)/python
	$(PIP) install -e '.[test]'
	touch $@ $(VENV)/.installed

## demo: the main job on the example project, embedded defaults (no API key, no server):
## ingest it, chat with it (retrieval-only), run its test cases
demo: $(VENV)/.installed
	$(BIN)/holodeck ingest agent.yaml.example
	printf 'How many times is a failing task retried?\nWhich port do I open in the browser to reach the dashboard?\n' \
		| $(BIN)/holodeck chat agent.yaml.example
	$(BIN)/holodeck test agent.yaml.example

## test: the whole test suite (starts its own Redis with the Query Engine; installs
## Debian's chromium when missing, for the chat page's browser test: CI runs as root)
test: $(VENV)/.installed-test
	command -v chromium || (apt-get update && apt-get install -y chromium)
	$(BIN)/python -m pytest -q -n auto --dist worksteal

## lint: ruff, mypy and the import layers (pyproject's importlinter contracts)
lint: $(VENV)/.installed-test
	$(BIN)/ruff check holodeck tests benchmarks
	$(BIN)/ruff format --check holodeck tests
	$(BIN)/mypy
	$(BIN)/lint-imports

## docs: serve the documentation (docs/, MkDocs Material) at http://127.0.0.1:8000
docs: $(VENV)/.installed-test
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs serve

## docs-cli: write docs/cli.md's command help again from --help (the tests check it)
docs-cli: $(VENV)/.installed-test
	$(BIN)/cog -r docs/cli.md

## bench: the benchmarks of benchmarks/README.md
bench: $(VENV)/.installed-test
	$(BIN)/python benchmarks/run_all.py

clean:
	rm -rf $(VENV) .holodeck/index .pytest_cache .mypy_cache .ruff_cache
