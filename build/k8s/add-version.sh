#!/usr/bin/env bash
# Writes the wrapper module for one Kubernetes version: build/k8s/vX.Y.Z/{go.mod,go.sum}, which
# build/build-bins.sh builds when DRAIN_TESTBED_KUBE_VERSION selects that version.
#   bash build/k8s/add-version.sh 1.36.3
# k8s.io/kubernetes' own go.mod points its staging modules (k8s.io/api, k8s.io/client-go, ...) at
# ./staging, and replace directives of a dependency are ignored, so each one is mapped here to its
# published v0.Y.Z tag. The list is read from that version's go.mod: it grows between minors.
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
V="${1:?usage: add-version.sh X.Y.Z (a k8s.io/kubernetes release the Go module proxy serves)}"
V="v${V#v}"
if ! [[ "$V" =~ ^v1\.([0-9]+)\.([0-9]+)$ ]]; then
  echo "add-version.sh: '$1' is not a Kubernetes release of the form 1.Y.Z" >&2; exit 2
fi
STAGING_V="v0.${BASH_REMATCH[1]}.${BASH_REMATCH[2]}"
DIR="$HERE/$V"
[ -e "$DIR/go.mod" ] && { echo "add-version.sh: $DIR/go.mod exists already" >&2; exit 2; }

export GOFLAGS="${GOFLAGS:-} -mod=mod"
UPSTREAM_MOD="$(cd /tmp && go mod download -json "k8s.io/kubernetes@$V" | sed -n 's/^\t"GoMod": "\(.*\)",$/\1/p')"
[ -f "$UPSTREAM_MOD" ] || { echo "add-version.sh: the Go module proxy has no k8s.io/kubernetes $V" >&2; exit 2; }
GO_LINE="$(grep -m1 '^go ' "$UPSTREAM_MOD")"
GODEBUG_LINE="$(grep -m1 '^godebug ' "$UPSTREAM_MOD" || true)"
STAGING="$(sed -n 's|^\t\(k8s.io/[a-z0-9-]*\) => \./staging/src/.*$|\1|p' "$UPSTREAM_MOD")"

mkdir -p "$DIR"
{
  echo "// Wrapper module: builds kube-apiserver, kube-controller-manager and kube-scheduler $V from"
  echo "// k8s.io/kubernetes through the module proxy. Written by build/k8s/add-version.sh: k8s.io/kubernetes'"
  echo "// own go.mod points its staging modules at ./staging (replace directives of a dependency are"
  echo "// ignored), so each one is mapped to its published $STAGING_V tag here. Built by build/build-bins.sh."
  echo "module drainbins/k8s"
  echo
  echo "$GO_LINE"
  if [ -n "$GODEBUG_LINE" ]; then
    echo
    echo "// mirror upstream's GODEBUG defaults (k8s.io/kubernetes $V go.mod: \"$GODEBUG_LINE\")"
    echo "$GODEBUG_LINE"
  fi
  echo
  echo "tool ("
  for b in kube-apiserver kube-controller-manager kube-scheduler; do printf '\tk8s.io/kubernetes/cmd/%s\n' "$b"; done
  echo ")"
  echo
  echo "require k8s.io/kubernetes $V"
  echo
  echo "replace ("
  for m in $STAGING; do printf '\t%s => %s %s\n' "$m" "$m" "$STAGING_V"; done
  echo ")"
} > "$DIR/go.mod"
(cd "$DIR" && go mod tidy)
echo "$DIR"
