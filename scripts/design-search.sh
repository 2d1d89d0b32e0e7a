#!/usr/bin/env bash
# The design search for peak_ewma_experimental's semantics: runs the policies of scenarios/design/
# (the proposal as first written, its lblabAblation variations and the references: Finagle's,
# Envoy's, least_request, the oracle) through
#   cold-four  (four backends, one slow, one client, no warm-up: the first 10 s count), 10 seeds;
#   one-slow   swept over 1 to 1,000 client channels at one total rate, 10 seeds;
#   recovery   (the slow backend heals at 30 s: time_to_fair_s, until it carries 80 % of its fair
#              share), 10 seeds;
#   recovery-clients  the same, 168 s after the heal, over 1 to 1,000 client channels, 10 seeds;
#   scale-out  (4 of 20 backends join at 20 s: time_to_fair_s of those), 10 seeds;
#   methods-mixed, methods-slow-heavy  a light and a heavy method (90 % / 10 % of calls), without
#              a fault and with one backend slow on the heavy method only, at 10/40/60 % of
#              capacity: the default against per-method estimates and a decay adapted to each
#              endpoint's rate of answers, all calls and each method's alone, 10 seeds;
#   grid       one-slow over 1/20/200 client channels x 5/20 backends x 5/50 % of capacity, with
#              the default at decayTime 5/10/20 s and choiceCount 3, the semantics as first written
#              at defaultRtt 1/30/100 ms, a plain EWMA and the references, 10 seeds;
#   small-busy, small-busy-gc  3/5/8 backends x 30/50/60 % of capacity x 1/20 channels, one
#              backend steadily 10x slower or pausing 150 ms every 2 s: the peak jump against a
#              plain EWMA and blendSamples, 10 seeds;
#   canonical  every canonical scenario (scenarios/*.toml) with the policies of
#              scenarios/design/variants.toml in place of its own, 10 seeds (only the CSVs kept);
# and writes results/design/: the raw outputs and README.md (scripts/design_report.py), every
# number on it read from those files. About four minutes on 2 cores.
#
#   scripts/design-search.sh
#   SEEDS=5 OUT=/tmp/design scripts/design-search.sh
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --quiet
bin="${CARGO_TARGET_DIR:-target}/release/lblab"
seeds=${SEEDS:-10}
out=${OUT:-results/design}
mkdir -p "$out"

echo "== cold-four"
"$bin" sim scenarios/design/cold-four.toml --seeds "$seeds" --out "$out/cold-four" >/dev/null
echo "== clients"
"$bin" sweep scenarios/design/one-slow.toml --vary workload.clients=1,10,50,200,1000 \
    --seeds "$seeds" --out "$out/clients" >/dev/null
# Recovery and scale-out: the simulator's time_to_fair_s over seeds (intervals.csv).
for scenario in recovery scale-out; do
    echo "== $scenario"
    "$bin" sim "scenarios/design/$scenario.toml" --seeds "$seeds" --out "$out/$scenario" >/dev/null
done
# Recovery against the number of clients: the pick clock decays an avoided backend per pick, so a
# client with few picks sees a heal late; idleMaxTime bounds that.
echo "== recovery-clients"
rm -rf "$out/recovery-clients"
"$bin" sweep scenarios/design/recovery-clients.toml --vary workload.clients=1,10,50,200,1000 \
    --seeds "$seeds" --out "$out/recovery-clients" >/dev/null
find "$out/recovery-clients" -type f ! -name 'sweep.csv' -delete
# Every canonical scenario under the same variations and references.
echo "== canonical"
rm -rf "$out/canonical"
python3 scripts/design_canonical.py scenarios/design/variants.toml "$out/canonical/scenarios"
for scenario in "$out"/canonical/scenarios/*.toml; do
    name=$(basename "$scenario" .toml)
    "$bin" sim "$scenario" --seeds "$seeds" --out "$out/canonical/$name" >/dev/null
    # The medians and intervals are the evidence; the charts and histograms of one seed are not.
    find "$out/canonical/$name" -type f ! -name '*.csv' -delete
    rm -f "$out/canonical/$name/timeseries.csv" "$out/canonical/$name/failures.csv"
done
# What the minimal policy gives up: per-method estimates (lblabAblation.perMethod) with a light and
# a heavy method, without a fault and with one backend slow on the heavy method only, at 10, 40 and
# 60 % of the fleet's capacity.
# Each is run three times: all calls measured, then the light and the heavy method's calls alone
# (workload.measured_method), so a method's own percentiles are not hidden by the other's.
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for scenario in methods-mixed methods-slow-heavy; do
    for method in "" light heavy; do
        name=$scenario${method:+-$method}
        echo "== $name"
        file="scenarios/design/$scenario.toml"
        if [ -n "$method" ]; then
            file="$tmp/$name.toml"
            sed "s/^\[workload\]\$/[workload]\nmeasured_method = \"$method\"/" \
                "scenarios/design/$scenario.toml" >"$file"
        fi
        rm -rf "$out/$name"
        "$bin" sweep "$file" --vary workload.utilization=0.1,0.4,0.6 \
            --seeds "$seeds" --out "$out/$name" >/dev/null
        find "$out/$name" -type f ! -name 'sweep.csv' -delete
    done
done
# The grid: client channels x fleet size x load, with decayTime, choiceCount and defaultRtt as
# policies of scenarios/design/grid.toml.
echo "== grid"
rm -rf "$out/grid"
"$bin" sweep scenarios/design/grid.toml --vary workload.clients=1,20,200 \
    --vary fleet.main.count=4,19 --vary workload.utilization=0.05,0.5 \
    --seeds "$seeds" --out "$out/grid" >/dev/null
find "$out/grid" -type f ! -name 'sweep.csv' -delete
# Small, busy fleets, steady and intermittent slowness: the peak jump against a plain EWMA and a
# decay adapted to each endpoint's rate of answers.
for scenario in small-busy small-busy-gc; do
    echo "== $scenario"
    rm -rf "$out/$scenario"
    "$bin" sweep "scenarios/design/$scenario.toml" --vary workload.clients=1,20 \
        --vary fleet.main.count=2,4,7 --vary workload.utilization=0.3,0.5,0.6 \
        --seeds "$seeds" --out "$out/$scenario" >/dev/null
    find "$out/$scenario" -type f ! -name 'sweep.csv' -delete
done
python3 scripts/design_report.py "$out"
echo "wrote $out/README.md"
