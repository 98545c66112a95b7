#!/usr/bin/env bash
# `make test`: everything CI runs, side by side so the machine's cores are used (docs/testbed.md, "make test"):
#   - the bed's Go binaries (build/build-bins.sh) build in the background from the start (a no-op once cached);
#   - meanwhile the set-up (venv, npm) and then `make test-quick` (lint, types, unit and infra tests: no bed);
#   - once the binaries are there, the bed's tests (tests/integration) on PYTEST_WORKERS workers, each with a bed
#     of its own, the longest tests first (tests/scheduling.py).
# The quick part's output is printed when the bed's tests are done (and is in .local/test-quick.log meanwhile).
# PYTEST_ARGS (-x, --lf, ...) go to both pytest runs. Exit status: non-zero if any part failed.
set -uo pipefail
set -m  # each background part in a process group of its own, so an interrupt reaches it through the trap below
cd "$(dirname "$0")/.."
mkdir -p .local
MAKE="${MAKE:-make}"
WORKERS="${PYTEST_WORKERS:-8}"
QUICK_WORKERS="${QUICK_WORKERS:-2}"
# both pytest runs take their tests' slots from one directory: they share the cores (tests/admission.py)
export DRAIN_TEST_SLOTS="$PWD/.local/test-slots" DRAIN_TEST_SLOTS_COUNT=$(( WORKERS + QUICK_WORKERS ))
rm -rf "$DRAIN_TEST_SLOTS"
read -r -a EXTRA <<< "${PYTEST_ARGS:-}"
say() { printf '[make test] %s\n' "$*"; }
t0=$(date +%s)
since() { echo "$(( $(date +%s) - t0 )) s"; }

bash build/build-bins.sh > .local/build-bins.log 2>&1 &
bins=$!
quick="" integration=""
# interrupted (Ctrl-C, a cancelled CI job): pytest gets SIGINT, so its sessions stop their beds before they end
trap 'for job in $bins $quick $integration; do kill -INT -- "-$job" 2>/dev/null; done; wait; exit 130' INT TERM

if ! "$MAKE" --no-print-directory setup-python setup-node; then
  say "set-up failed"; kill "$bins" 2>/dev/null; exit 2
fi
say "set-up done after $(since); lint and the tests without a bed start (output: .local/test-quick.log)"
"$MAKE" --no-print-directory test-quick QUICK_WORKERS="$QUICK_WORKERS" PYTEST_ARGS="${PYTEST_ARGS:-}" \
  > .local/test-quick.log 2>&1 &
quick=$!

if ! wait "$bins"; then
  cat .local/build-bins.log
  say "building the bed's binaries failed (log above: .local/build-bins.log)"
  wait "$quick"; exit 2
fi
say "the bed's binaries are ready after $(since); the bed's tests start on $WORKERS workers"
.venv/bin/python -m pytest tests/integration -n "$WORKERS" "${EXTRA[@]}" &
integration=$!
wait "$integration"
integration_status=$?
say "the bed's tests ended after $(since) (exit $integration_status); waiting for test-quick"
wait "$quick"
quick_status=$?
echo
say "==================== test-quick (lint, types, unit and infra tests) ===================="
cat .local/test-quick.log
say "done after $(since): test-quick exit $quick_status, the bed's tests exit $integration_status"
[ "$quick_status" = 0 ] && [ "$integration_status" = 0 ]
