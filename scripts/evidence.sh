#!/usr/bin/env bash
# Regenerates the committed evidence in results/: every canonical scenario in the simulator at full
# length over 10 seeds (results/<name>/sim; intervals.csv has the medians and 95 % intervals), then `lblab compare` at a shorter length, which runs the real harness
# (real tonic servers and client over loopback) and the simulator at that same length and seed
# (results/<name>/compare), then results/README.md.
#
#   scripts/evidence.sh                  # everything (the real runs take most of the time)
#   SKIP_REAL=1 scripts/evidence.sh      # simulator only, then the report
#   SKIP_SIM=1 scripts/evidence.sh       # the real comparisons only, then the report
#   REAL_DURATION=30s scripts/evidence.sh
#   scripts/evidence.sh one-slow healthy # only these scenarios (the report covers all folders)
#   SEEDS=20 scripts/evidence.sh         # more seeds for the simulated intervals
#
# The sweeps over the scenario space are scripts/sweeps.sh; the repeated real runs of the headline
# scenario are scripts/real-repeat.sh.
set -euo pipefail
cd "$(dirname "$0")/.."

cargo build --release --quiet
bin="${CARGO_TARGET_DIR:-target}/release/lblab"
real_duration=${REAL_DURATION:-20s}
seeds=${SEEDS:-10}

if [ $# -gt 0 ]; then
    scenarios=()
    for name in "$@"; do scenarios+=("scenarios/$name.toml"); done
else
    scenarios=(scenarios/*.toml)
fi

for scenario in "${scenarios[@]}"; do
    name=$(basename "$scenario" .toml)
    if [ -z "${SKIP_SIM:-}" ]; then
        echo "== $scenario: simulated"
        "$bin" sim "$scenario" --seeds "$seeds" --out "results/$name/sim"
    fi
    if [ -z "${SKIP_REAL:-}" ]; then
        echo "== $scenario: real and simulated, $real_duration measured per policy"
        "$bin" compare "$scenario" --duration "$real_duration" --out "results/$name/compare"
    fi
done

if [ -z "${SKIP_SIM:-}" ] && [ $# -eq 0 ]; then
    # peak_ewma's parameter grid where its choice matters most.
    "$bin" sweep scenarios/one-slow.toml --out results/one-slow/sweep
    "$bin" sweep scenarios/zones.toml --out results/zones/sweep
fi
"$bin" report
