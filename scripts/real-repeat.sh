#!/usr/bin/env bash
# Repeats the headline scenario over real gRPC to show how much a real run varies by itself:
# `lblab real` N times on the same scenario and seed (fresh fleet and client each time), then the
# range of every policy's p50, p99 and p99.9 across the runs in range.csv.
#
#   scripts/real-repeat.sh                      # one-slow, 3 runs of 20 s per policy
#   RUNS=5 DURATION=30s scripts/real-repeat.sh scenarios/gc-pauses.toml
set -euo pipefail
cd "$(dirname "$0")/.."

scenario=${1:-scenarios/one-slow.toml}
runs=${RUNS:-3}
duration=${DURATION:-20s}
name=$(basename "$scenario" .toml)
out=results/$name/real-repeat

cargo build --release --quiet
bin="${CARGO_TARGET_DIR:-target}/release/lblab"
for k in $(seq 1 "$runs"); do
    echo "== $scenario: real run $k of $runs, $duration measured per policy"
    "$bin" real "$scenario" --duration "$duration" --out "$out/run-$k"
done

# policy, then min and max over the runs of p50, p99, p99.9 (ms) and of the share to faulty
# backends, from each run's summary.csv (columns by name, so a new column does not shift them).
awk -F, -v runs="$runs" '
    FNR == 1 { for (i = 1; i <= NF; i++) col[$i] = i; next }
    {
        p = $col["policy"]
        if (!(p in seen)) { seen[p] = 1; order[++n] = p }
        split("p50_ms p99_ms p999_ms slow_share", ms, " ")
        for (m = 1; m <= 4; m++) {
            v = $col[ms[m]] + 0; key = p SUBSEP m
            if (!(key in lo) || v < lo[key]) lo[key] = v
            if (!(key in hi) || v > hi[key]) hi[key] = v
        }
        count[p]++
    }
    END {
        print "policy,runs,p50_ms_min,p50_ms_max,p99_ms_min,p99_ms_max,p999_ms_min,p999_ms_max,slow_share_min,slow_share_max"
        for (i = 1; i <= n; i++) {
            p = order[i]; line = p "," count[p]
            for (m = 1; m <= 4; m++) line = line sprintf(",%.3f,%.3f", lo[p SUBSEP m], hi[p SUBSEP m])
            print line
        }
    }' "$out"/run-*/summary.csv > "$out/range.csv"
echo "== range over $runs runs ($out/range.csv)"
column -s, -t < "$out/range.csv"
