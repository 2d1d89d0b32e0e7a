#!/usr/bin/env bash
# Confirms the chosen peak_ewma_experimental semantics over real gRPC (tonic servers and client on
# loopback, one policy at a time): the chosen default beside the semantics as first written,
# Finagle's and Envoy's algorithms and round_robin, on one-slow, the cold start of four backends,
# a slow backend that heals, 50 client channels and crash-restart; and the default's handling of
# failures (the error-aware cost, failures "hold", errorSamples 10) against the default before the
# two failure rules (failures "sample", errorSamples 0) on fail-fast. Writes
# results/design/real/<scenario>/ (the usual real run folders); scripts/design_report.py reads them.
# About 21 minutes on 2 cores.
#
#   scripts/design-real.sh
#   OUT=/tmp/real scripts/design-real.sh
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --quiet
bin="${CARGO_TARGET_DIR:-target}/release/lblab"
out=${OUT:-results/design/real}
mkdir -p "$out"
canonical=(--policy round_robin --policy peak_ewma --policy "peak_ewma(first_written)"
    --policy finagle_peak_ewma --policy envoy_peak_ewma)
design=(--policy round_robin --policy peak_ewma --policy pe_as_first_written
    --policy finagle_peak_ewma --policy envoy_peak_ewma)
run() {
    local name=$1 file=$2; shift 2
    echo "== $name"
    "$bin" real "$file" "$@" --out "$out/$name"
}
run one-slow scenarios/one-slow.toml "${canonical[@]}" --duration 20s
run cold-four scenarios/design/cold-four.toml "${design[@]}"
run recovery scenarios/design/recovery.toml "${design[@]}"
run many-clients scenarios/many-clients.toml "${canonical[@]}" --duration 20s
run crash-restart scenarios/crash-restart.toml "${canonical[@]}" --duration 38s
# The default's failure rules on a backend that fails fast, with and without them, alone and under
# outlier detection: the
# canonical scenario with the design search's policies (scripts/design-search.sh writes the copy).
run fail-fast results/design/canonical/scenarios/fail-fast.toml --policy round_robin \
    --policy peak_ewma --policy pe_failures_sample --policy "od(peak_ewma)" --policy "od(pe_failures_sample)" \
    --policy "od(least_request)" --policy weighted_round_robin --duration 20s
