#!/usr/bin/env bash
# Builds the test bed's binaries once per machine into a cache outside the repo, keyed by versions:
#   kube-apiserver, kube-controller-manager, kube-scheduler (k8s.io/kubernetes, build/k8s/vX.Y.Z/go.mod for the
#   version DRAIN_TESTBED_KUBE_VERSION selects, default DEFAULT_KUBE_VERSION below: what CI runs),
#   etcd (build/etcd/go.mod), kwok (build/kwok/go.mod) and kwok-stages.yaml (from kwok's module),
#   aws-lambda-rie, the AWS Lambda Runtime Interface Emulator (build/rie/go.mod; the real-runtime path).
# A binary whose stamp matches is skipped, so the second run costs a second.
# Prints the bin directory on its last line.
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
# The oldest Kubernetes version of the tested range; the others are the directories build/k8s/v*/.
DEFAULT_KUBE_VERSION=1.35.4
ETCD_V=v3.6.14
KWOK_V=v0.7.0
# the module proxy serves only pseudo-versions of the emulator; build/rie/go.mod pins this one
RIE_V=v0.0.0-20261030222936-bef5c4ba774d
CACHE_ROOT="${DRAIN_TESTBED_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/drain-orchestrator/testbed}"

log() { printf '[build-bins] %s\n' "$*" >&2; }

known_versions() { (cd "$HERE/k8s" && for d in v*/go.mod; do d="${d%/go.mod}"; echo "${d#v}"; done | sort -V | xargs); }
REQUESTED="${DRAIN_TESTBED_KUBE_VERSION:-$DEFAULT_KUBE_VERSION}"
KV="v${REQUESTED#v}"
K8S_MOD="$HERE/k8s/$KV"
if ! [[ "$KV" =~ ^v1\.([0-9]+)\.[0-9]+$ ]] || [ ! -f "$K8S_MOD/go.mod" ]; then
  log "ERROR: DRAIN_TESTBED_KUBE_VERSION='$REQUESTED' is not a Kubernetes version the test bed builds."
  log "       Versions available: $(known_versions) (default $DEFAULT_KUBE_VERSION); each is a wrapper module"
  log "       build/k8s/v<version>/go.mod, which build/k8s/add-version.sh writes for a new release."
  exit 2
fi
MINOR="${BASH_REMATCH[1]}"
OUT="$CACHE_ROOT/k8s-$KV-etcd-$ETCD_V-kwok-$KWOK_V/bin"

stamp_ok() { [ -x "$OUT/$1" ] && [ -f "$OUT/.$1.stamp" ] && [ "$(cat "$OUT/.$1.stamp")" = "$2" ]; }
stamp() { printf '%s' "$2" > "$OUT/.$1.stamp"; }
all_cached() {
  stamp_ok kube-apiserver "$KV" && stamp_ok kube-controller-manager "$KV" && stamp_ok kube-scheduler "$KV" \
    && stamp_ok etcd "$ETCD_V" && stamp_ok kwok "$KWOK_V" && stamp_ok aws-lambda-rie "$RIE_V" \
    && [ -d "$OUT/kwok-stages" ]
}

# Cached binaries need no lock: a stamp is written only after its binary, kwok-stages appears whole (renamed into
# place), so a caller never waits for another version's build.
if all_cached; then
  log "all binaries cached in $OUT"
  echo "$OUT"
  exit 0
fi

# One build per set of versions at a time: a second caller (another checkout, a parallel test run) waits for the
# first and then finds the binaries cached, instead of compiling Kubernetes twice on the same cores.
mkdir -p "$CACHE_ROOT"
exec 9>"$CACHE_ROOT/.build-k8s-$KV.lock"
if ! flock -n 9; then
  log "another build of the test bed's binaries for Kubernetes $KV is running; waiting for it"
  flock 9
fi
if all_cached; then
  log "all binaries cached in $OUT (built by the caller that held the lock)"
  echo "$OUT"
  exit 0
fi

if ! command -v go >/dev/null 2>&1; then
  log "ERROR: Go is not installed or not on PATH. The test bed builds kube-apiserver, etcd and kwok"
  log "       from Go modules (no registry ships kube-apiserver); install Go >= 1.24 (tested with 1.26)"
  log "       and run again. Binaries are cached in $OUT once built."
  exit 2
fi
mkdir -p "$OUT"

export CGO_ENABLED=0 GOFLAGS="${GOFLAGS:-} -mod=mod"

# Kubernetes control plane
need_k8s=0
for b in kube-apiserver kube-controller-manager kube-scheduler; do stamp_ok "$b" "$KV" || need_k8s=1; done
if [ "$need_k8s" = 1 ]; then
  log "building kube-apiserver, kube-controller-manager, kube-scheduler $KV (cold: ~15-30 min on 2 cores)"
  LDF="-s -w \
 -X k8s.io/component-base/version.gitVersion=$KV -X k8s.io/component-base/version.gitMajor=1 \
 -X k8s.io/component-base/version.gitMinor=$MINOR -X k8s.io/component-base/version.gitTreeState=clean \
 -X k8s.io/component-base/version.buildDate=1970-01-01T00:00:00Z \
 -X k8s.io/client-go/pkg/version.gitVersion=$KV -X k8s.io/client-go/pkg/version.gitMajor=1 \
 -X k8s.io/client-go/pkg/version.gitMinor=$MINOR"
  start=$(date +%s)
  for b in kube-apiserver kube-controller-manager kube-scheduler; do
    stamp_ok "$b" "$KV" && { log "$b: cached"; continue; }
    log "  go build $b ..."
    (cd "$K8S_MOD" && go build -trimpath -ldflags "$LDF" -o "$OUT/$b" "k8s.io/kubernetes/cmd/$b")
    stamp "$b" "$KV"
    log "  $b done after $(( $(date +%s) - start )) s"
  done
else
  log "kube-apiserver, kube-controller-manager, kube-scheduler $KV: cached"
fi

if ! stamp_ok etcd "$ETCD_V"; then
  log "building etcd $ETCD_V"
  (cd "$HERE/etcd" && go build -trimpath -ldflags "-s -w" -o "$OUT/etcd" go.etcd.io/etcd/server/v3)
  stamp etcd "$ETCD_V"
else
  log "etcd $ETCD_V: cached"
fi

if ! stamp_ok kwok "$KWOK_V"; then
  log "building kwok $KWOK_V"
  (cd "$HERE/kwok" && go build -trimpath -ldflags "-s -w" -o "$OUT/kwok" sigs.k8s.io/kwok/cmd/kwok)
  stamp kwok "$KWOK_V"
else
  log "kwok $KWOK_V: cached"
fi

if ! stamp_ok aws-lambda-rie "$RIE_V"; then
  log "building aws-lambda-rie $RIE_V"
  (cd "$HERE/rie" && go build -trimpath -ldflags "-s -w" -o "$OUT/aws-lambda-rie" \
    github.com/aws/aws-lambda-runtime-interface-emulator/cmd/aws-lambda-rie)
  stamp aws-lambda-rie "$RIE_V"
else
  log "aws-lambda-rie $RIE_V: cached"
fi

# kwok's stage YAMLs ship in its module (go:embed); copy them from the module cache rather than
# committing third-party files. The pod-delete stage is the test bed's own (testbed/control_plane.py).
if [ ! -d "$OUT/kwok-stages" ]; then
  KWOK_DIR="$(cd "$HERE/kwok" && go list -m -f '{{.Dir}}' sigs.k8s.io/kwok)"
  rm -rf "$OUT/.kwok-stages.tmp"
  mkdir -p "$OUT/.kwok-stages.tmp"
  for f in node/fast/node-initialize.yaml node/heartbeat/node-heartbeat.yaml \
           pod/fast/pod-ready.yaml pod/fast/pod-complete.yaml; do
    cp "$KWOK_DIR/kustomize/stage/$f" "$OUT/.kwok-stages.tmp/$(echo "$f" | tr / _)"
  done
  chmod u+w "$OUT/.kwok-stages.tmp"/*
  mv "$OUT/.kwok-stages.tmp" "$OUT/kwok-stages"
fi
echo "$OUT"
