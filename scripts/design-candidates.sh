#!/usr/bin/env bash
# The candidates of the issue "The policy a gRFC can specify" (scenarios/design/candidates.toml:
# today's default, the stall-aware cost, the simple policy and its variations one rule at a time,
# and the references: tower's, Finagle's and Envoy's algorithms, least_request, the oracle), run in
# place of each scenario's own policies through these sections:
#   canonical    every canonical scenario (scenarios/*.toml);
#   heal         cold-four, recovery, scale-out: the design sets' cold start, heal and join
#                (time_to_fair_s);
#   clients      recovery-clients: a heal seen by 1 to 1,000 client channels at 2,000 req/s in all;
#   busy         small-busy, small-busy-gc: 3/5/8 backends x 30/50/60 % of capacity x 1/20
#                channels, one backend steadily 10x slower or pausing 150 ms every 2 s;
#   grid         one-slow over 1/20/200 channels x 5/20 backends x 5/50 % of capacity;
#   methods      methods-mixed and methods-slow-heavy (a light and a heavy method, 90 % / 10 % of
#                calls, no fault or one backend slow on the heavy method only) at 10/40/60 % of
#                capacity: all calls, and each method's calls alone;
#   decay        recovery with the default and the simple policy at decayTime 1 s, 10 s and 30 s;
#   tradeoff     decayTime as the trade-off between the return of a healed backend and the tail:
#                the default at decayTime 1, 3, 10 and 30 s on recovery-clients (1 to 1,000
#                channels) and on many-clients (50 channels at 40 calls/s each, one backend 10x
#                slower for the whole run), beside Envoy's and Finagle's algorithms;
#   failures     most-fail with its own policies: 1 or 7 backends that fail every call from 10 s
#                to 40 s beside 1, 3 or 19 healthy ones (the error-aware cost against none and
#                against outlier detection);
# all with SEEDS seeds (default 10), and writes results/design/candidates/ (only the CSVs) and its
# README.md (scripts/design_candidates.py). About ten minutes on 2 cores for all sections.
#
#   scripts/design-candidates.sh                 # every section
#   scripts/design-candidates.sh decay tradeoff  # only these (the others' CSVs stay)
#   SEEDS=5 OUT=/tmp/candidates scripts/design-candidates.sh
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --quiet
bin="${CARGO_TARGET_DIR:-target}/release/lblab"
seeds=${SEEDS:-10}
out=${OUT:-results/design/candidates}
policies=scenarios/design/candidates.toml
all=(canonical heal clients busy grid methods decay tradeoff failures)
sections=("$@")
[ ${#sections[@]} -gt 0 ] || sections=("${all[@]}")
for section in "${sections[@]}"; do
    [[ " ${all[*]} " == *" $section "* ]] || { echo "error: unknown section '$section' (the sections: ${all[*]})" >&2; exit 2; }
done
want() { [[ " ${sections[*]} " == *" $1 "* ]]; }
[ $# -gt 0 ] || rm -rf "$out"
mkdir -p "$out"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# The policies NAMES (comma-separated, from $policies) at each decayTime of TAUS, named
# NAME_tau_TAU, and the policies REFS as they are, in place of SCENARIO's own.
at_decay_times() {
    python3 - "$policies" "$1" "$2" "$3" "${4:-}" <<'PY'
import json, sys, tomllib
policies = {p["name"]: p["config"] for p in tomllib.load(open(sys.argv[1], "rb"))["policies"]}
text = open(sys.argv[2]).read()
print(text[: text.index("[[policies]]")])
for name in sys.argv[3].split(","):
    for tau in sys.argv[4].split(","):
        config = json.loads(policies[name])
        config["loadBalancingConfig"][0]["peak_ewma_experimental"]["decayTime"] = tau
        print(f'[[policies]]\nname = "{name}_tau_{tau}"\nconfig = \'{json.dumps(config)}\'\n')
for name in filter(None, sys.argv[5].split(",")):
    print(f'[[policies]]\nname = "{name}"\nconfig = \'{policies[name]}\'\n')
PY
}

# Keeps only the medians and intervals: the charts and histograms of one seed are not evidence.
keep_csv() {
    find "$1" -type f ! -name 'intervals.csv' ! -name 'sweep.csv' -delete
}

if want canonical; then
    echo "== canonical"
    rm -rf "$out/canonical"
    python3 scripts/design_canonical.py "$policies" "$tmp/canonical"
    for scenario in "$tmp"/canonical/*.toml; do
        name=$(basename "$scenario" .toml)
        "$bin" sim "$scenario" --seeds "$seeds" --out "$out/canonical/$name" >/dev/null 2>&1
        keep_csv "$out/canonical/$name"
    done
fi

python3 scripts/design_canonical.py "$policies" "$tmp/design" \
    scenarios/design/{cold-four,recovery,scale-out,recovery-clients,small-busy,small-busy-gc,grid}.toml
if want heal; then
    for scenario in cold-four recovery scale-out; do
        echo "== $scenario"
        rm -rf "${out:?}/$scenario"
        "$bin" sim "$tmp/design/$scenario.toml" --seeds "$seeds" --out "$out/$scenario" >/dev/null 2>&1
        keep_csv "$out/$scenario"
    done
fi
if want clients; then
    echo "== recovery-clients"
    rm -rf "$out/recovery-clients"
    "$bin" sweep "$tmp/design/recovery-clients.toml" --vary workload.clients=1,10,50,200,1000 \
        --seeds "$seeds" --out "$out/recovery-clients" >/dev/null 2>&1
    keep_csv "$out/recovery-clients"
fi
if want busy; then
    for scenario in small-busy small-busy-gc; do
        echo "== $scenario"
        rm -rf "${out:?}/$scenario"
        "$bin" sweep "$tmp/design/$scenario.toml" --vary workload.clients=1,20 \
            --vary fleet.main.count=2,4,7 --vary workload.utilization=0.3,0.5,0.6 \
            --seeds "$seeds" --out "$out/$scenario" >/dev/null 2>&1
        keep_csv "$out/$scenario"
    done
fi
if want grid; then
    echo "== grid"
    rm -rf "$out/grid"
    "$bin" sweep "$tmp/design/grid.toml" --vary workload.clients=1,20,200 \
        --vary fleet.main.count=4,19 --vary workload.utilization=0.05,0.5 \
        --seeds "$seeds" --out "$out/grid" >/dev/null 2>&1
    keep_csv "$out/grid"
fi
# Multi-method workloads: one estimate per endpoint, lifted by every heavy answer.
if want methods; then
    for scenario in methods-mixed methods-slow-heavy; do
        python3 scripts/design_canonical.py "$policies" "$tmp/methods" "scenarios/design/$scenario.toml"
        for method in "" light heavy; do
            name=$scenario${method:+-$method}
            echo "== $name"
            file="$tmp/methods/$name.toml"
            if [ -n "$method" ]; then
                sed "s/^\[workload\]\$/[workload]\nmeasured_method = \"$method\"/" \
                    "$tmp/methods/$scenario.toml" >"$file"
            fi
            rm -rf "${out:?}/$name"
            "$bin" sweep "$file" --vary workload.utilization=0.1,0.4,0.6 \
                --seeds "$seeds" --out "$out/$name" >/dev/null 2>&1
            keep_csv "$out/$name"
        done
    done
fi
# decayTime must act: the default's and the simple policy's heal at three time constants.
if want decay; then
    echo "== decay"
    rm -rf "$out/decay"
    at_decay_times scenarios/design/recovery.toml peak_ewma,simple 1s,10s,30s >"$tmp/decay.toml"
    "$bin" sim "$tmp/decay.toml" --seeds "$seeds" --out "$out/decay" >/dev/null 2>&1
    keep_csv "$out/decay"
fi
# decayTime as the user's trade-off: the heal at 1 to 1,000 channels against many-clients' tail.
if want tradeoff; then
    echo "== tradeoff"
    rm -rf "$out/tradeoff-clients" "$out/tradeoff-tail"
    taus=1s,3s,10s,30s
    at_decay_times scenarios/design/recovery-clients.toml peak_ewma "$taus" \
        finagle_peak_ewma,envoy_peak_ewma >"$tmp/tradeoff-clients.toml"
    "$bin" sweep "$tmp/tradeoff-clients.toml" --vary workload.clients=1,10,50,200,1000 \
        --seeds "$seeds" --out "$out/tradeoff-clients" >/dev/null 2>&1
    keep_csv "$out/tradeoff-clients"
    at_decay_times scenarios/many-clients.toml peak_ewma "$taus" \
        finagle_peak_ewma,envoy_peak_ewma,oracle >"$tmp/tradeoff-tail.toml"
    "$bin" sim "$tmp/tradeoff-tail.toml" --seeds "$seeds" --out "$out/tradeoff-tail" >/dev/null 2>&1
    keep_csv "$out/tradeoff-tail"
fi
# Failure handling: the scenario's own policies (the error-aware cost, none, outlier detection).
if want failures; then
    echo "== failures"
    rm -rf "$out/most-fail"
    "$bin" sweep scenarios/design/most-fail.toml --vary fleet.main.count=1,3,19 \
        --vary fleet.broken.count=1,7 --seeds "$seeds" --out "$out/most-fail" >/dev/null 2>&1
    keep_csv "$out/most-fail"
fi
python3 scripts/design_candidates.py "$out"
echo "wrote $out/README.md"
