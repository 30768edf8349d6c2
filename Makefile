# transformer-nb -- `make help` lists the targets.
SHELL := /bin/bash
.SHELLFLAGS := -euo pipefail -c
.DEFAULT_GOAL := help
MAKE_START := $(shell date +%s)

PYTHON          ?= python3
VENV            ?= .venv
TORCH_SPEC      ?= torch==2.13.0
TORCH_INDEX_URL ?=
# auto: uv when `pip install uv` works, else pip; pip: pip only
INSTALLER       ?= auto
# where `pip install uv==$(UV_VERSION)` puts uv (not into VENV: that may be a conda environment)
UV_DIR          ?= build/uv-installer
UV_VERSION      ?= 0.13.9
# every dependency but torch, pinned with its hashes (`make lock` writes it; `make install-latest` ignores it)
LOCK            := requirements.lock
LOCKED          ?= 1
NB              ?=
LAB_ARGS        ?=
# make test's pytest-xdist workers; with more than one, each (and each notebook kernel) runs torch on one thread
# (OpenMP threads that outnumber the cores spin-wait for each other: two 2-thread kernels on 2 cores crawl)
TEST_WORKERS    ?= auto

BIN       := $(VENV)/bin
INSTALLED := $(VENV)/.installed
NOTEBOOKS := $(sort $(wildcard notebooks/*.ipynb))
NB_NAMES  := $(basename $(notdir $(NOTEBOOKS)))
# Tools run with the venv first on PATH, so kernels and subprocesses use the venv's python.
RUN       := PATH="$(abspath $(BIN)):$$PATH"

# NB is read as text, never expanded and never handed to a shell: each word must name a notebook (NAME, NAME.ipynb or
# a path to it), and the tools get the names found in notebooks/, checked here before anything runs.
ifneq ($(filter refresh slides solutions,$(MAKECMDGOALS)),)
NB_LIST := $(foreach w,$(value NB),$(or $(filter $(NB_NAMES),$(basename $(notdir $w))),$(error \
  NB: "$w" is not a notebook; name one of $(NB_NAMES))))
endif

NBVAL := --nbval-lax --nbval-current-env --nbval-sanitize-with=tests/nbval_sanitize.cfg

.PHONY: help venv install install-latest lock lab lint test browser-test runtimes refresh refresh-all refresh-stale book lecture slides clean distclean
.PHONY: doctor
.PHONY: wheel colab-test book-cdn

help:
	@echo "make lab                  install, then JupyterLab on notebooks/"
	@echo "make doctor               this set-up against what the companion needs (paste it into a bug report)"
	@echo "make test                 unit tests, every notebook under nbval and solved (quick profile), TEST_WORKERS=auto"
	@echo "make solutions [NB=NAME]  every notebook with exercises, each stub replaced by its solution (quick)"
	@echo "make lint                 ruff: lint the package, tests, tools and notebooks; check the formatting"
	@echo "make browser-test         every notebook's widgets in JupyterLab + headless Chromium"
	@echo "make refresh NB=NAME      re-execute one notebook from notebooks/py/NAME.py (full profile)"
	@echo "make refresh-all          the same for every notebook"
	@echo "make refresh-stale        the same for the notebooks whose outputs are stale (code they run changed)"
	@echo "make runtimes             time every notebook (quick profile) into notebooks/runtimes.json"
	@echo "make book [EXECUTE=1]     the stored notebooks as a navigable HTML book in build/book/ (EXECUTE=1: run them first)"
	@echo "make lecture              train the missing small models of 09, 10, 12 that the lecture notebook (14) shows"
	@echo "make slides NB=NAME       reveal.js slides of a stored notebook into build/slides/ (offline)"
	@echo "make install              create $(VENV) and install (TORCH_SPEC=$(TORCH_SPEC); the rest from $(LOCK))"
	@echo "make install-latest       the same with the newest versions pyproject.toml allows (then make test)"
	@echo "make lock                 write $(LOCK) again: the newest versions pyproject.toml allows, pinned"
	@echo "make wheel                the package wheel into dist/ (Colab's setup cell can install it)"
	@echo "make colab-test           notebooks 00 01 05 07 (quick) under nbval in a fresh Colab-like venv"
	@echo "make book-cdn             fetch and check the book's and slides' pinned npm packages into build/vendor"
	@echo "make clean | distclean    remove build outputs | and .venv"

venv install: $(INSTALLED)

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

# torch first, so the installer keeps the chosen build (CPU/CUDA) instead of pulling its default one; then every
# other dependency from $(LOCK) (pinned, hashes checked) and the package itself, or with LOCKED= (make
# install-latest) the newest versions pyproject.toml allows. With uv (INSTALLER=auto: when `pip install
# uv==$(UV_VERSION)` works, into $(UV_DIR); half pip's time) pip's own indexes and wheel folders are passed on by
# tools/uv_args.py, so both pick the same versions; INSTALLER=pip forces pip. A failed install stops here, with no
# $(INSTALLED) marker, so the next `make` installs again. --compile-bytecode: the .pyc files pip writes too (under
# PYTHONDONTWRITEBYTECODE, without them every torch import compiles it again: +3 s CPU).
$(INSTALLED): pyproject.toml $(LOCK) | $(BIN)/python
	@case "$(INSTALLER)" in auto|pip) ;; *) echo "INSTALLER=$(INSTALLER): auto (uv when it installs, else pip) or pip" >&2; exit 2;; esac
	@rm -f $@
	@if [ "$(INSTALLER)" != pip ] && $(BIN)/python -m pip install -q --progress-bar off --retries 1 --timeout 15 \
	    --upgrade --target $(UV_DIR) "uv==$(UV_VERSION)" >/dev/null 2>&1; then \
	  echo "install: with uv ($(UV_DIR)/bin/uv; INSTALLER=pip for pip)"; \
	  uv=($(UV_DIR)/bin/uv pip install --compile-bytecode --python $(BIN)/python); \
	  args=$$($(BIN)/python tools/uv_args.py $(if $(TORCH_INDEX_URL),--index-url $(TORCH_INDEX_URL))); \
	  mapfile -t torch_args <<< "$$args"; \
	  "$${uv[@]}" "$${torch_args[@]}" "$(TORCH_SPEC)"; \
	  args=$$($(BIN)/python tools/uv_args.py); \
	  mapfile -t args <<< "$$args"; \
	  $(if $(LOCKED),"$${uv[@]}" "$${args[@]}" --require-hashes -r $(LOCK);) \
	  "$${uv[@]}" "$${args[@]}" $(if $(LOCKED),--no-deps) -e ".[test]"; \
	else \
	  echo "install: with pip$(if $(filter pip,$(INSTALLER)),, (\`pip install uv\` failed))"; \
	  $(BIN)/python -m pip install --progress-bar off $(if $(TORCH_INDEX_URL),--index-url $(TORCH_INDEX_URL)) "$(TORCH_SPEC)"; \
	  $(if $(LOCKED),$(BIN)/python -m pip install --progress-bar off --require-hashes -r $(LOCK);) \
	  $(BIN)/python -m pip install --progress-bar off $(if $(LOCKED),--no-deps) -e ".[test]"; \
	fi
	@touch $@

# The newest release of every dependency that pyproject.toml allows, not the lock's: does a clean clone still work?
install-latest:
	rm -f $(INSTALLED)
	$(MAKE) --no-print-directory install LOCKED=

# $(LOCK) from pyproject.toml, from PyPI, for every platform and Python pyproject.toml allows (--universal), with
# every file's hash. torch is left out, with what only torch needs (a marker that is never true): TORCH_SPEC installs
# the build the user chose, with its own dependencies.
lock: $(BIN)/python
	$(BIN)/python -m pip install -q --progress-bar off --upgrade --target $(UV_DIR) "uv==$(UV_VERSION)"
	@mkdir -p build && echo "torch ; sys_platform == 'never'" > build/lock-no-torch.txt
	$(UV_DIR)/bin/uv pip compile pyproject.toml --extra test --universal --generate-hashes --quiet \
	  --override build/lock-no-torch.txt --no-emit-package torch --custom-compile-command "make lock" -o $(LOCK)

# Served from the repo root (so jupytext.toml pairs each notebook with its twin), opened on notebooks/.
lab: $(INSTALLED)
	$(RUN) $(BIN)/jupyter lab --ServerApp.root_dir="$(CURDIR)" --LabApp.default_url=/lab/tree/notebooks \
	  $(if $(filter 0,$(shell id -u)),--allow-root) $(LAB_ARGS)

# No $(INSTALLED) prerequisite: the doctor reports a broken install instead of reinstalling over it.
doctor:
	@if [ ! -x "$(BIN)/python" ]; then echo "doctor: no $(VENV) here: run \`make install\` first" >&2; exit 1; fi
	$(RUN) $(BIN)/python -m transformer_nb.doctor

lint: $(INSTALLED)
	$(BIN)/ruff check transformer_nb tests tools notebooks/*.ipynb
	$(BIN)/ruff format --check transformer_nb tests tools

# --no-loadscope-reorder: xdist hands out the files in the order tests/notebook_harness.py gives them (the longest
# first, the notebooks' models cached before the tests that load them), not by how many tests each has.
# GLIBC_TUNABLES: glibc hands a freed block of over 32 MB (a language model's logits) back to the system and maps it
# anew at the next step, zeroed page by page: training spent as much CPU time in the kernel as in PyTorch (notebook
# 12's solutions run: 31 s of CPU, 23 s with the blocks kept; the same losses). Ignored where glibc is not the libc.
# PYTHONDONTWRITEBYTECODE= (empty: unset): where the environment sets it, every worker, kernel and subprocess would
# compile the package and rewrite the tests' assertions from source again (collection: 8.0 s of CPU, 5.6 s with them).
TEST_ENV := PYTHONDONTWRITEBYTECODE= GLIBC_TUNABLES=glibc.malloc.mmap_threshold=1073741824:glibc.malloc.trim_threshold=1073741824
# WARM: the notebook kernels start as forks of a process that has imported torch, matplotlib and ipykernel
# (tools/warm_kernels.py; a kernel starts as usual until it is ready).
WARM := build/warm-kernels.sock
test: $(INSTALLED)
	@rm -rf build/test-cache $(WARM) && mkdir -p build/test-cache
	@status=0; $(RUN) $(TEST_ENV) $(BIN)/python tools/warm_kernels.py $(WARM) & trap "kill $$! 2>/dev/null; rm -f $(WARM)" EXIT; \
	$(RUN) $(TEST_ENV) TNB_WARM_KERNELS="$(CURDIR)/$(WARM)" PYTHONPATH="$(CURDIR)/tools/warm$${PYTHONPATH:+:$$PYTHONPATH}" \
	  TNB_PROFILE=quick TNB_CACHE_DIR="$(CURDIR)/build/test-cache" $(if $(filter 1,$(TEST_WORKERS)),,OMP_NUM_THREADS=1) \
	  $(BIN)/python -m pytest tests $(NOTEBOOKS) $(NBVAL) --solutions -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder \
	  --durations=0 --durations-min=1 || status=$$?; \
	echo "make test finished in $$(( $$(date +%s) - $(MAKE_START) )) s (install included), exit $$status"; \
	exit $$status

# Every notebook with exercise cells, quick profile, each stub replaced by its student-style solution: every
# check must pass and every later cell run. Reuses the models the nbval run of `make test` trained (same cache).
.PHONY: solutions
solutions: $(INSTALLED)
	@mkdir -p build/test-cache
	$(RUN) $(TEST_ENV) TNB_PROFILE=quick TNB_CACHE_DIR="$${TNB_CACHE_DIR:-$(CURDIR)/build/test-cache}" \
	  $(BIN)/python tools/solutions.py $(NB_LIST)

runtimes: $(INSTALLED)  ## time every notebook in the quick profile into notebooks/runtimes.json
	@rm -rf build/test-cache && mkdir -p build/test-cache
	$(RUN) TNB_PROFILE=quick TNB_RECORD_RUNTIMES=1 TNB_CACHE_DIR="$(CURDIR)/build/test-cache" \
	  $(BIN)/python -m pytest $(NOTEBOOKS) $(NBVAL) -q

# JupyterLab + headless Chromium (Debian's chromium, driven by Playwright's driver): each notebook's
# widgets are run, moved and must redraw; screenshots in build/screenshots/. Also part of make test.
browser-test: $(INSTALLED)
	$(RUN) TNB_PROFILE=quick $(BIN)/python -m pytest tests/browser -rs --durations=0 --durations-min=1

refresh: $(INSTALLED)
	$(if $(NB_LIST),,$(error usage: make refresh NB=01_scaled_attention))
	$(RUN) $(BIN)/python tools/refresh.py $(NB_LIST)

refresh-all: $(INSTALLED)
	$(RUN) $(BIN)/python tools/refresh.py --all

refresh-stale: $(INSTALLED)  ## only the notebooks whose outputs are stale, in book order
	$(RUN) $(BIN)/python tools/refresh.py --stale

# Works offline: require.js, MathJax and ONNX Runtime Web (npm, pinned, integrity-checked) are cached in build/vendor.
book: $(INSTALLED) lecture  ## HTML of the stored notebooks (full-profile outputs; 09's and 10's widgets run the lecture's models); EXECUTE=1 runs them all again first
	rm -rf build/book
	@start=$$(date +%s); $(RUN) $(BIN)/python tools/book.py --out build/book $(if $(EXECUTE),--execute); \
	echo "book: built in $$(( $$(date +%s) - start )) s; open build/book/index.html"

# Lecture mode: train (through the notebooks' own quick-profile cache entries, whatever TNB_PROFILE says) the models
# that notebooks/14_lecture.ipynb shows and that no profile has cached yet; a warm cache makes this a few seconds.
lecture: $(INSTALLED)  ## the small trained models of 09, 10 and 12 for the lecture notebook (14), only those missing
	$(RUN) $(BIN)/python -m transformer_nb.lecture
	@echo "open notebooks/14_lecture.ipynb (make lab): every widget, ready to drive"

slides: $(INSTALLED)
	$(if $(filter 1,$(words $(NB_LIST))),,$(error usage: make slides NB=01_scaled_attention (one notebook)))
	$(RUN) $(BIN)/python tools/slides.py $(NB_LIST) --out build/slides

# The package wheel, built in isolation from pyproject.toml (stale build/lib files would leak into it: removed first).
wheel:
	rm -rf build/lib build/bdist.* dist/transformer_nb-*.whl
	$(PYTHON) -m pip wheel --no-deps --progress-bar off -q -w dist .
	@ls dist/transformer_nb-*.whl

# A fresh Colab-like venv (tools/colab_venv.sh: ipywidgets 7.7.1, a stub google.colab, no companion); the notebooks'
# own setup cell installs the wheel; WikiText-2 through the loader's download path (tools/colab_test.py says how).
colab-test: wheel
	$(PYTHON) tools/colab_test.py $(COLAB_TEST_ARGS)

# The pinned npm packages of the book and the slides (tools/book.py, tools/slides.py: versions and sha512 integrity
# hashes), downloaded once, checked, and unpacked into build/vendor; `make book` and `make slides` then need no network.
book-cdn: $(INSTALLED)
	$(RUN) $(BIN)/python tools/book.py --fetch-only

clean:
	rm -rf build dist .pytest_cache
	find . -path ./.venv -prune -o -name __pycache__ -type d -prune -exec rm -rf {} +

distclean: clean   # the repo's own .venv only, never an environment named with VENV=
	rm -rf .venv *.egg-info

# The suite on an offline GPU machine (tools/gpu_check.py says what each step does). `make gpu-wheels` (network)
# fills GPU_KIT, which travels with the working tree: the notebook and test stack as wheels for Linux x86-64
# CPython 3.12, and WikiText-2. There, `make gpu-check OUT=DIR` installs them into a venv that sees the machine's
# torch, runs the unit tests, every notebook (quick) and 09 and 10 (full) under nbval and the benchmarks on CUDA in
# at most 8 minutes, and writes DIR/report.md, report.json and log.txt. DRY_RUN=1: the CPU, the quick profile and a
# subset, in this checkout's venv (what CI runs). BUDGET=S: seconds for everything (default 470).
GPU_KIT    ?= build/gpu-kit
OUT        ?= build/gpu-check
GPU_PYTHON  = $(if $(DRY_RUN)$(wildcard $(BIN)/python),$(BIN)/python,$(PYTHON))
.PHONY: gpu-wheels gpu-check

gpu-wheels:
	$(GPU_PYTHON) tools/gpu_check.py wheels --kit $(GPU_KIT)

gpu-check: $(if $(DRY_RUN),$(INSTALLED))
	$(GPU_PYTHON) tools/gpu_check.py run --kit $(GPU_KIT) --out $(OUT) $(if $(DRY_RUN),--dry-run) $(if $(BUDGET),--budget $(BUDGET))
