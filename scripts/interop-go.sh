#!/usr/bin/env bash
# grpc-go beside lblab's own client on the same fleet: installs Debian's Go toolchain and grpc-go
# (golang-go, golang-google-grpc-dev 1.33) when missing, builds interop/go in GOPATH mode under
# the Cargo target folder, runs the port's tests (go test: unit tests and the replay of the
# conformance vectors), and for each scenario starts `lblab backend SCENARIO` once and runs
# against it, one after the other at the same rate:
#   grpc-go round_robin, grpc-go pick_first, grpc-go peak_ewma_experimental (interop/go's port),
#   then `lblab loadgen` with lblab's round_robin, peak_ewma and tower_p2c_peak_ewma;
# then writes results/interop/go.md and go.csv (tables, agreement) and the raw files under
# results/interop/go/<scenario>/.
#
#   scripts/interop-go.sh                        # one-slow, gc-pauses, heterogeneous
#   scripts/interop-go.sh one-slow               # just one
#   LBLAB_BIN=/path/to/lblab RATE=400 DURATION=8 WARMUP=3 scripts/interop-go.sh
#   OUT=/tmp/somewhere scripts/interop-go.sh     # raw files and go.md elsewhere
#   scripts/interop-go.sh --install              # only install and build; prints the client binary
#   scripts/interop-go.sh --test                 # install, build and `go test -v` the port
#
# cold-start and crash-restart take their fault at 20 s: give them WARMUP and DURATION that span
# it (e.g. WARMUP=15 DURATION=25). Only loopback; every process it starts stops by itself (the
# fleet with --for) and is also stopped when the script exits.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
go_dir="$root/interop/go"
# shellcheck source=scripts/interop-fleet.sh
source "$root/scripts/interop-fleet.sh"

grpc_go_src=/usr/share/gocode/src/google.golang.org/grpc
installed() { command -v go >/dev/null && [[ -f "$grpc_go_src/version.go" ]]; }
if ! installed; then
    if ! command -v apt-get >/dev/null; then
        echo "error: grpc-go interop needs Debian's golang-go and golang-google-grpc-dev (grpc-go 1.33," \
            "sources under /usr/share/gocode), and apt-get is not available to install them" >&2
        exit 2
    fi
    sudo=""
    [[ "$(id -u)" == 0 ]] || sudo="sudo -n"
    echo "installing golang-go golang-google-grpc-dev from Debian's registry" >&2
    export DEBIAN_FRONTEND=noninteractive
    $sudo apt-get install -y --no-install-recommends golang-go golang-google-grpc-dev >&2 \
        || { $sudo apt-get update >&2 && $sudo apt-get install -y --no-install-recommends golang-go golang-google-grpc-dev >&2; } \
        || { echo "error: apt-get install golang-go golang-google-grpc-dev failed (root or sudo needed)" >&2; exit 2; }
    installed || { echo "error: go or $grpc_go_src missing after the install" >&2; exit 2; }
fi

# A GOPATH under the Cargo target folder (or $LBLAB_GO_PREFIX) whose src/lblab/interop/go is a
# link to interop/go; Go's build cache there too. Nothing is written into the checkout.
prefix="${LBLAB_GO_PREFIX:-${CARGO_TARGET_DIR:-$root/target}/interop-go}"
mkdir -p "$prefix/gopath/src/lblab/interop" "$prefix/bin"
prefix="$(cd "$prefix" && pwd)"
ln -sfn "$go_dir" "$prefix/gopath/src/lblab/interop/go"
export GO111MODULE=off GOFLAGS= GOPATH="$prefix/gopath:/usr/share/gocode" GOCACHE="$prefix/cache"
pkg="$prefix/gopath/src/lblab/interop/go"
# One builder at a time (tests may call this concurrently).
exec 8>"$prefix.lock"
flock 8
(cd "$pkg" && go build -o "$prefix/bin/client" ./client && go build -o "$prefix/bin/report" ./report) >&2
exec 8>&-
client="$prefix/bin/client"
case "${1:-}" in
    --install)
        echo "$client"
        exit 0
        ;;
    --test)
        cd "$pkg" && exec go test -count=1 -v ./peakewma/
        ;;
esac
(cd "$pkg" && go test -count=1 ./peakewma/ >/dev/null) || { echo "error: interop/go tests fail (scripts/interop-go.sh --test)" >&2; exit 2; }

find_lblab

run_port go "$client" "$prefix/bin/report" 4 "$@"
