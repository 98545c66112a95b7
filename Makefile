# EKS Drain Orchestrator — developer entry points. `make test` is what CI runs (.ci/run).
SHELL := /bin/bash
.DEFAULT_GOAL := help

CACHE      ?= $(HOME)/.cache/drain-orchestrator
UV_VERSION := 0.13.8
UV         := $(CACHE)/uv-$(UV_VERSION)/bin/uv
# Python 3.13 = the Lambda runtime. Found on PATH or under pyenv; never downloaded.
# (a pyenv shim on PATH may exist without working, so each candidate is run once to check it)
PY313      ?= $(shell for p in $$(ls -d $(HOME)/.pyenv/versions/3.13*/bin/python3.13 2>/dev/null) $$(command -v python3.13 2>/dev/null); do \
                "$$p" -c 'import sys; assert sys.version_info[:2] == (3, 13)' 2>/dev/null && { echo "$$p"; break; }; done)
VENV       := .venv
PY         := $(VENV)/bin/python
export UV_PYTHON := $(PY313)
export UV
export UV_PYTHON_DOWNLOADS := never
# Node 22 from the pinned npm package `node` (jsii needs >= 22; the machine may only have 20)
export PATH := $(CURDIR)/node_modules/node/bin:$(CURDIR)/node_modules/.bin:$(PATH)
PYTEST_ARGS ?=
# the bed `make env` describes: a pytest session's (DRAIN_TESTBED_DIR) or cluster-up's
TESTBED_DIR ?= $(or $(DRAIN_TESTBED_DIR),$(CURDIR)/.local/cluster)

.PHONY: help setup setup-python setup-node setup-bins lint test test-quick test-durations test-unit test-integration test-infra synth \
        test-bare soak cluster-up cluster-down env demo package bench bench-drain bench-lambda bench-cold-import bench-hold bench-turn-queue bench-storm bench-storm-waves bench-fleet bench-reclaim bench-nth build-nth clean \
        prune-versions test-k8s-range

help:
	@echo "make demo          set up, start the local test bed, replay events/ through the handler"
	@echo "make test          lint + type-check + every test (what CI runs; PYTEST_WORKERS=8 workers with a bed each)"
	@echo "make test-quick    lint + type-check + unit and infra tests, no bed (the inner loop, < 2 min)"
	@echo "make test-k8s-range  the drain, RBAC and surge suites on each Kubernetes version of build/k8s/v*/"
	@echo "                   (DRAIN_TESTBED_KUBE_VERSIONS='1.36.3' picks some; one version: DRAIN_TESTBED_KUBE_VERSION=1.36.3 make ...)"
	@echo "make test-bare     what CI runs, from a fresh clone of HEAD with empty package caches (BARE=all: all caches)"
	@echo "make setup         venv on Python 3.13 with pinned deps, npm deps, test-bed binaries (idempotent)"
	@echo "make cluster-up    start the local control plane + AWS emulator (kubeconfig: .local/cluster/kubeconfig)"
	@echo "make cluster-down  stop what cluster-up started"
	@echo 'eval "$$(make -s env)"  the local account in this shell: endpoint, region, credentials, CLUSTER_NAMES, PATH'
	@echo "make package       the DrainOrchestrator CDK construct as a wheel in dist/ (for your own CDK app)"
	@echo "make release       versioned artefacts in dist/: construct and CLI wheels, Lambda code asset zip, RBAC,"
	@echo "                   the plain CloudFormation template, SHA256SUMS"
	@echo "make bench         benchmarks side by side with kubectl drain (results: docs/benchmarks.md)"
	@echo "make bench-hold    a drain held by a PDB: 5 min on the bed, then the model for 48 h (results: docs/benchmarks.md, docs/cost.md)"
	@echo "make bench-turn-queue  20 drains behind a slow budget: Lambda time with far turns waited for durably, and without"
	@echo "make bench-storm   50 nodes' terminate events at once through the handler (results: docs/benchmarks.md)"
	@echo "make bench-storm-waves  a 20-node storm cut into its start and its PDB waves, against the lower bound;"
	@echo "                   BENCH_WAVES_FLAGS='--turns 2x0.2 --turns 1.5x0.1' compares the turn's slot settings"
	@echo "make soak          an hour of random events and faults on the bed, then every invariant checked (SOAK_MINUTES, SOAK_SEED)"
	@echo "make bench-reclaim a Spot reclaim of 100 nodes under emulated EC2 and Lambda limits, with and without shared reads, modelled to 5,000"
	@echo "make bench-fleet   storms of 50, 100 and 200 nodes x 2 pods, and the model of 1,000 nodes (results: docs/benchmarks.md)"
	@echo "make bench-nth     side by side with aws-node-termination-handler and a lower bound, 20 nodes, 3 rounds (builds NTH once);"
	@echo "                   BENCH_NTH_FLAGS=--split-cores puts the control plane on CPUs of its own"
	@echo "make prune-versions FUNCTION=NAME_OR_ARN [YES=1]  the function's versions unused by aliases and executions"

# the three side by side: the Go builds of the bed take minutes on a bare machine, the rest downloads
setup:
	@$(MAKE) --no-print-directory -j3 setup-python setup-node setup-bins

$(UV):
	@test -n "$(PY313)" || { echo "error: Python 3.13 not found (looked for python3.13 on PATH and ~/.pyenv/versions/3.13*)." >&2; \
	  echo "       Install it (e.g. 'pyenv install 3.13.0') and run make again." >&2; exit 2; }
	$(PY313) -m venv $(CACHE)/uv-$(UV_VERSION)
	$(CACHE)/uv-$(UV_VERSION)/bin/pip install --quiet --disable-pip-version-check uv==$(UV_VERSION)

setup-python: $(UV)
	@test -n "$(PY313)" || { echo "error: Python 3.13 not found (see README prerequisites)" >&2; exit 2; }
	$(UV) sync --frozen --all-groups --quiet

setup-node:
	@if [ -f package-lock.json ]; then \
	  if [ ! -x node_modules/node/bin/node ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then \
	    npm ci --no-audit --no-fund --loglevel=error; \
	  fi; \
	fi

setup-bins:
	@bash build/build-bins.sh >/dev/null

lint: setup-python
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy

test-unit: setup-python
	$(PY) -m pytest tests/unit $(PYTEST_ARGS)

test-integration: setup-python setup-bins
	$(PY) -m pytest tests/integration $(PYTEST_ARGS)

test-infra: setup-python setup-node
	$(PY) -m pytest tests/infra $(PYTEST_ARGS)

# everything, side by side (build/run-tests.sh): the bed's Go binaries build in the background while the set-up and
# test-quick run; then the bed's tests on PYTEST_WORKERS workers, each with a bed of its own, the longest tests first
# (tests/scheduling.py). More workers than cores: the bed's tests mostly wait on the apiserver and on wall-clock
# outages. aws-node-termination-handler (tests/integration/test_nth_smoke.py) builds in the background once collected.
PYTEST_WORKERS ?= 8
QUICK_WORKERS ?= 2
test:
	@PYTEST_WORKERS=$(PYTEST_WORKERS) QUICK_WORKERS=$(QUICK_WORKERS) PYTEST_ARGS="$(PYTEST_ARGS)" MAKE="$(MAKE)" \
	  bash build/run-tests.sh

# the Kubernetes range (docs/testbed.md#kubernetes-versions): the suites that talk most to the apiserver on each
# version of build/k8s/v*/, one version after another, each on a bed of that version. A version not built yet builds
# first (niced: ~15-20 min on 2 cores). Every version runs; the exit status says whether all passed.
DRAIN_TESTBED_KUBE_VERSIONS ?= $(sort $(patsubst build/k8s/v%/go.mod,%,$(wildcard build/k8s/v*/go.mod)))
K8S_RANGE_TESTS ?= tests/integration/test_testbed_smoke.py::test_the_control_plane_runs_the_selected_kubernetes_version \
  $(wildcard tests/integration/test_drain_*.py) tests/integration/test_rbac_minimal.py $(wildcard tests/integration/test_surge*.py) \
  $(wildcard tests/integration/test_streamed_lists*.py)
K8S_RANGE_WORKERS ?= 2
test-k8s-range: setup-python
	@failed=; for v in $(DRAIN_TESTBED_KUBE_VERSIONS); do \
	  echo "[make test-k8s-range] Kubernetes $$v: building the bed's binaries (a no-op once cached)"; \
	  DRAIN_TESTBED_KUBE_VERSION=$$v nice -n 10 bash build/build-bins.sh > /dev/null || { failed="$$failed $$v(build)"; continue; }; \
	  start=$$(date +%s); \
	  DRAIN_TESTBED_KUBE_VERSION=$$v nice -n 5 $(PY) -m pytest $(K8S_RANGE_TESTS) -n $(K8S_RANGE_WORKERS) $(PYTEST_ARGS) \
	    || failed="$$failed $$v"; \
	  echo "[make test-k8s-range] Kubernetes $$v: $$(( $$(date +%s) - start )) s"; \
	done; \
	if [ -n "$$failed" ]; then echo "[make test-k8s-range] failed on:$$failed"; exit 1; fi; \
	echo "[make test-k8s-range] passed on: $(DRAIN_TESTBED_KUBE_VERSIONS)"

# the inner loop: lint and types beside the unit and infra tests; no bed, no Go
test-quick: setup-python setup-node
	@mkdir -p .local; $(MAKE) --no-print-directory lint > .local/lint.log 2>&1 & lint=$$!; \
	  $(PY) -m pytest tests/unit tests/infra -n $(QUICK_WORKERS) --timings-json .local/test-quick-times.json $(PYTEST_ARGS); \
	  tests=$$?; wait $$lint; linted=$$?; cat .local/lint.log; \
	  echo "[make test-quick] tests exit $$tests, lint and types exit $$linted"; [ $$tests = 0 ] && [ $$linted = 0 ]

# the longest-first order of make test (tests/durations.json) from the last run's measured walls
test-durations: setup-python
	$(PY) -m tests.timings .local/test-times.json .local/test-quick-times.json

# CI as a new machine runs it: a fresh clone of HEAD (commit first), uv's, npm's and the pinned uv's caches empty, so
# an install step that only a warm cache hides fails here. BARE=all also empties the Go module and build caches and
# the bed's binaries (XDG_CACHE_HOME), which then build from source: ~25 min more on 2 cores.
test-bare:
	@d=$$(mktemp -d /tmp/drain-orchestrator-bare.XXXXXX) && git clone -q . "$$d/repo" && echo "fresh clone of $$(git rev-parse --short HEAD) in $$d/repo" && \
	  cd "$$d/repo" && env UV_CACHE_DIR="$$d/uv" npm_config_cache="$$d/npm" CACHE="$$d/tools" \
	  $(if $(filter all,$(BARE)),XDG_CACHE_HOME="$$d/xdg" GOMODCACHE="$$d/gomod" GOCACHE="$$d/gobuild") \
	  CI=true bash .ci/run < /dev/null

# a chaos soak (testbed/soak.py): events and faults at random on a bed of its own (or DRAIN_TESTBED_DIR's),
# then the invariants; SOAK_SEED replays a run's plan. Report on stdout and in .local/soak.json; exit 1 on a violation
SOAK_MINUTES ?= 60
soak: setup-python setup-bins
	nice -n 10 $(PY) -m testbed.soak --minutes $(SOAK_MINUTES) $(if $(SOAK_SEED),--seed $(SOAK_SEED)) --json .local/soak.json

cluster-up: setup-python setup-bins
	$(PY) -m testbed up

cluster-down:
	@if [ -x $(PY) ]; then $(PY) -m testbed down; else echo "nothing to stop"; fi

# export lines for `eval "$(make -s env)"`; no setup step, so nothing else reaches stdout
env:
	@test -x $(PY) || { echo "error: no .venv yet: run make demo (or make setup-python) first" >&2; exit 2; }
	@$(PY) -m testbed env --dir "$(TESTBED_DIR)"

synth: setup-python setup-node
	npx cdk synth -q -c clusters=demo

# the DrainOrchestrator construct as a wheel for your own CDK app (infra/pyproject.toml; docs/deploy.md)
package: $(UV)
	$(UV) build infra --wheel --out-dir dist

# what an operator pins (docs/releases.md): the construct and CLI wheels, the Lambda code asset as a zip, the
# RBAC and the plain CloudFormation template (synthesized here: Node from setup-node), all of version __version__ (lambda_src/drain_orchestrator/__init__.py), which must have a CHANGELOG.md entry;
# checked first, with a clean work tree and no tag vX.Y.Z on another commit
.PHONY: release
release: setup-python setup-node
	$(PY) build/release.py check --release
	$(UV) build infra --wheel --out-dir dist
	$(UV) build --wheel --out-dir dist
	$(PY) build/release.py bundle dist

bench: bench-drain bench-lambda

bench-drain: setup-python setup-bins
	$(PY) -m bench.bench_drain --repeat 3

bench-lambda: setup-python setup-bins
	$(PY) -m bench.bench_lambda

# the handler's and a first invocation's imports beside the durable SDK's own (no bed needed)
bench-cold-import: setup-python
	$(PY) -m bench.cold_import

# aws-node-termination-handler for side-by-side runs: built on demand (make test, bench-nth) into the bed's cache,
# once per machine; not by `make setup`
build-nth:
	@bash build/build-nth.sh >/dev/null

# a drain held by a PDB: a real hold of 5 min on the bed (audit log, runner), the model for 48 h fed with its costs
bench-hold: setup-python setup-bins
	nice -n 19 $(PY) -m bench.held_cost --measure 300

# 20 drains behind a budget admitting a pod every 10 s, far turns waited for durably and not, 3 rounds: ~22 min
bench-turn-queue: setup-python setup-bins
	nice -n 19 $(PY) -m bench.turn_queue --drains 20 --rise-seconds 10 --rounds 3

# 50 nodes x 20 pods: ~10 min on a busy 2-core host; niced so it yields to other work on the machine
bench-storm: setup-python setup-bins
	nice -n 19 $(PY) -m bench.bench_storm --nodes 50 --pods-per-node 20 --json .local/bench-storm.json

# a 20-node storm cut into its start and its PDB waves, beside the lower bound, the control plane on a core of its own
bench-storm-waves: setup-python setup-bins
	nice -n 19 $(PY) -m bench.storm_waves --nodes 20 --pods-per-node 10 --rounds 2 --split-cores \
	  --json .local/storm-waves.json $(BENCH_WAVES_FLAGS)

# storms at three sizes with few pods a node (kwok nodes are cheap); the model of 1,000 nodes is calibrated on the
# first two and checked against the third
bench-fleet: setup-python setup-bins
	nice -n 19 $(PY) -m bench.bench_storm --nodes 50 --pods-per-node 2 --json .local/storm-50x2.json
	nice -n 19 $(PY) -m bench.bench_storm --nodes 100 --pods-per-node 2 --json .local/storm-100x2.json
	nice -n 19 $(PY) -m bench.bench_storm --nodes 200 --pods-per-node 2 --json .local/storm-200x2.json
	$(PY) -m bench.fleet_model .local/storm-50x2.json .local/storm-100x2.json .local/storm-200x2.json --nodes 1000

# a Spot reclaim of 100 nodes x 2 pods at once against EC2's buckets and the Lambda concurrency scaled to 100/1,000
# (the limits 1,000 nodes meet), with the shared-reads table and then without it (each run reading on its own), then
# the model of 1,000 and 5,000 nodes at the real limits. Larger runs outgrow a 2-core bed: 300 nodes (--nodes 300
# --limits-scale 0.3) overran its control plane, and 1,000 at the real limits its executions' one process
# (docs/benchmarks.md)
bench-reclaim: setup-python setup-bins
	nice -n 19 $(PY) -m bench.bench_reclaim --nodes 100 --pods-per-node 2 --limits-scale 0.1 --lambda-concurrency 100 \
	  --json .local/reclaim-100-as-1000.json
	nice -n 19 $(PY) -m bench.bench_reclaim --nodes 100 --pods-per-node 2 --limits-scale 0.1 --lambda-concurrency 100 \
	  --no-shared-reads --json .local/reclaim-100-as-1000-own-reads.json
	$(PY) -m bench.fleet_model --reclaim .local/reclaim-100-as-1000.json --nodes 1000 5000 --concurrency 1000 5000 \
	  --drain-seconds 10
	$(PY) -m bench.fleet_model --reclaim .local/reclaim-100-as-1000-own-reads.json --nodes 1000 5000 \
	  --concurrency 1000 5000 --drain-seconds 10 --no-shared-reads

# the orchestrator and aws-node-termination-handler (queue-processor mode) side by side on one bed: 20 nodes x 10
# pods each, then events for another cluster's and an unknown instance; ~10 min on a busy 2-core host, niced
bench-nth: setup-python setup-bins build-nth
	nice -n 19 $(PY) -m bench.bench_nth --nodes 20 --pods-per-node 10 --runs 3 --json .local/bench-nth.json $(BENCH_NTH_FLAGS)

# versions no alias routes to and no durable execution runs on: listed (dry), deleted with YES=1 (docs/deploy.md)
prune-versions: setup-python
	@test -n "$(FUNCTION)" || { echo "error: FUNCTION=<function name or ARN> is required" >&2; exit 2; }
	$(VENV)/bin/drain-orchestrator versions --function "$(FUNCTION)" --prune $(if $(filter 1,$(YES)),--yes)

clean:
	rm -rf .local cdk.out .pytest_cache .mypy_cache .ruff_cache

demo: setup-python setup-bins
	@$(PY) -m testbed.demo
