#!/usr/bin/env bash
# The candidates of the issue "The policy a gRFC can specify" (scenarios/design/candidates.toml:
# today's default, the stall-aware cost, the simple policy and its variations one rule at a time,
# and the references: tower's, Finagle's and Envoy's algorithms, least_request, the oracle), run in
# place of each scenario's own policies through
#   canonical    every canonical scenario (scenarios/*.toml);
#   cold-four, recovery, scale-out  the design sets' cold start, heal and join (time_to_fair_s);
#   recovery-clients  a heal seen by 1 to 1,000 client channels at 2,000 req/s in all;
#   small-busy, small-busy-gc  3/5/8 backends x 30/50/60 % of capacity x 1/20 channels, one backend
#                steadily 10x slower or pausing 150 ms every 2 s;
#   grid         one-slow over 1/20/200 channels x 5/20 backends x 5/50 % of capacity;
#   decay        recovery with the simple policy at decayTime 1 s, 10 s and 30 s;
# all with SEEDS seeds (default 10), and writes results/design/candidates/ (only the CSVs) and its
# README.md (scripts/design_candidates.py). About ten minutes on 2 cores.
#
#   scripts/design-candidates.sh
#   SEEDS=5 OUT=/tmp/candidates scripts/design-candidates.sh
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --quiet
bin="${CARGO_TARGET_DIR:-target}/release/lblab"
seeds=${SEEDS:-10}
out=${OUT:-results/design/candidates}
policies=scenarios/design/candidates.toml
rm -rf "$out"
mkdir -p "$out"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# Keeps only the medians and intervals: the charts and histograms of one seed are not evidence.
keep_csv() {
    find "$1" -type f ! -name 'intervals.csv' ! -name 'sweep.csv' -delete
}

echo "== canonical"
python3 scripts/design_canonical.py "$policies" "$tmp/canonical"
for scenario in "$tmp"/canonical/*.toml; do
    name=$(basename "$scenario" .toml)
    "$bin" sim "$scenario" --seeds "$seeds" --out "$out/canonical/$name" >/dev/null 2>&1
    keep_csv "$out/canonical/$name"
done

python3 scripts/design_canonical.py "$policies" "$tmp/design" \
    scenarios/design/{cold-four,recovery,scale-out,recovery-clients,small-busy,small-busy-gc,grid}.toml
for scenario in cold-four recovery scale-out; do
    echo "== $scenario"
    "$bin" sim "$tmp/design/$scenario.toml" --seeds "$seeds" --out "$out/$scenario" >/dev/null 2>&1
    keep_csv "$out/$scenario"
done
echo "== recovery-clients"
"$bin" sweep "$tmp/design/recovery-clients.toml" --vary workload.clients=1,10,50,200,1000 \
    --seeds "$seeds" --out "$out/recovery-clients" >/dev/null 2>&1
keep_csv "$out/recovery-clients"
for scenario in small-busy small-busy-gc; do
    echo "== $scenario"
    "$bin" sweep "$tmp/design/$scenario.toml" --vary workload.clients=1,20 \
        --vary fleet.main.count=2,4,7 --vary workload.utilization=0.3,0.5,0.6 \
        --seeds "$seeds" --out "$out/$scenario" >/dev/null 2>&1
    keep_csv "$out/$scenario"
done
echo "== grid"
"$bin" sweep "$tmp/design/grid.toml" --vary workload.clients=1,20,200 \
    --vary fleet.main.count=4,19 --vary workload.utilization=0.05,0.5 \
    --seeds "$seeds" --out "$out/grid" >/dev/null 2>&1
keep_csv "$out/grid"
# decayTime must act: the default's and the simple policy's heal at three time constants.
echo "== decay"
python3 - "$policies" scenarios/design/recovery.toml >"$tmp/decay.toml" <<'PY'
import json, sys, tomllib
policies = {p["name"]: p["config"] for p in tomllib.load(open(sys.argv[1], "rb"))["policies"]}
text = open(sys.argv[2]).read()
print(text[: text.index("[[policies]]")])
for name in ["peak_ewma", "simple"]:
    for tau in ["1s", "10s", "30s"]:
        config = json.loads(policies[name])
        config["loadBalancingConfig"][0]["peak_ewma_experimental"]["decayTime"] = tau
        print(f'[[policies]]\nname = "{name}_tau_{tau}"\nconfig = \'{json.dumps(config)}\'\n')
PY
"$bin" sim "$tmp/decay.toml" --seeds "$seeds" --out "$out/decay" >/dev/null 2>&1
keep_csv "$out/decay"
python3 scripts/design_candidates.py "$out"
echo "wrote $out/README.md"
