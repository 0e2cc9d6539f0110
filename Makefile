# Two commands on a fresh machine:
#   make run   — set everything up and open the app on the embedded demo data (http://127.0.0.1:8501)
#   make test  — run the whole test suite (what CI runs)
PYTHON ?= python3.11
VENV ?= .venv
PY := $(VENV)/bin/python
PORT ?= 8501
STAMP := $(VENV)/.installed

.PHONY: run test setup lint bench clean-home local-llm local-llm-stop test-local-llm

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	# the CPU wheel first, so that nothing resolves torch to the CUDA build
	$(PY) -m pip install --quiet torch==2.13.0
	$(PY) -m pip install --quiet -e ".[dev]"
	touch $(STAMP)

setup: $(STAMP)

WORKERS ?= 2
run: $(STAMP)
	$(VENV)/bin/voproshalych-eval demo
	# one worker of the job queue beside the app (docs/QUEUE.md); it stops with the app
	$(VENV)/bin/voproshalych-eval worker --concurrency $(WORKERS) & worker=$$!; \
	trap 'kill $$worker 2>/dev/null' EXIT INT TERM; \
	VOPROSHALYCH_EVAL_NO_WORKER=1 $(PY) -m streamlit run serve.py --server.address 127.0.0.1 --server.port $(PORT) \
		--server.headless true

test: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/mypy
	$(PY) -m pytest -q

lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/mypy

bench: $(STAMP)
	for f in benchmarks/bench_*.py; do $(PY) $$f --quick || exit 1; done

clean-home:
	rm -rf .home

# Optional: a real OpenAI-compatible LLM server on 127.0.0.1 (llama.cpp + Qwen2.5-Coder-1.5B, PyPI only;
# first run: ~1.1 GB download and a llama.cpp compile of ~45-50 min on a busy 2-core machine). Prints the
# variables to export (one request at a time, a timeout from the measured speed). See docs/LLM.md.
local-llm:
	$(PYTHON) scripts/local_llm.py all

local-llm-stop:
	$(PYTHON) scripts/local_llm.py stop

LOCAL_LLM_PORT ?= 8080
LOCAL_LLM_EMBED_PORT ?= 8081
test-local-llm: $(STAMP)
	VOPROSHALYCH_EVAL_LOCAL_LLM_URL=http://127.0.0.1:$(LOCAL_LLM_PORT)/v1 \
	VOPROSHALYCH_EVAL_LOCAL_LLM_EMBED_URL=http://127.0.0.1:$(LOCAL_LLM_EMBED_PORT)/v1 \
	$(PY) -m pytest -q -rxXs -m local_llm tests/local_llm
