#!/usr/bin/env bash
# Builds aws-node-termination-handler (the side-by-side anchor of the benchmarks, not part of `make setup`) once
# per machine from its Go module (wrapper module build/nth/go.mod), into the test bed's cache, keyed by version.
# ~9 min cold on a loaded 2-core host. Prints the binary's path on its last line.
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
NTH_V=v1.25.1
CACHE_ROOT="${DRAIN_TESTBED_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/drain-orchestrator/testbed}"
OUT="$CACHE_ROOT/nth-$NTH_V/bin"
BIN="$OUT/node-termination-handler"

mkdir -p "$OUT"
exec 9>"$CACHE_ROOT/.build-nth.lock"
flock 9  # one build per machine; a second caller waits, then finds it cached
if [ -x "$BIN" ] && [ "$(cat "$OUT/.stamp" 2>/dev/null)" = "$NTH_V" ]; then
  echo "$BIN"
  exit 0
fi
command -v go >/dev/null 2>&1 || { echo "[build-nth] ERROR: Go >= 1.24 is needed to build aws-node-termination-handler" >&2; exit 2; }
echo "[build-nth] building aws-node-termination-handler $NTH_V" >&2
(cd "$HERE/nth" && CGO_ENABLED=0 GOFLAGS="${GOFLAGS:-} -mod=mod" nice -n 19 \
  go build -trimpath -ldflags "-s -w" -o "$BIN" github.com/aws/aws-node-termination-handler/cmd)
printf '%s' "$NTH_V" > "$OUT/.stamp"
echo "$BIN"
