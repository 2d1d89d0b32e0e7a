#!/usr/bin/env bash
# The load generator's CPU per call beside a minimal tonic unary client's (loadgen/examples/
# minimal_client.rs), against the same fast fleet (`lblab backend`, 4 backends answering at once)
# at the same open-loop rates, alternating the two; the minimal client also with lblab loadgen's
# deadline, and also paced as lblab loadgen paces (each call at its own time, where its tokio
# interval sends what is due once a millisecond); each process's threads sampled from /proc over
# the same 6 s inside its measured window, so that every thread counts (lblab's own "client CPU"
# counts its runtime's threads only). Writes results/bench/loadgen-vs-minimal.txt (or $OUT).
# About 7 minutes; run it on a machine doing nothing else. Only loopback.
#
#   scripts/loadgen-vs-minimal.sh
#   RATES="2000 6000" REPEATS=2 SPINS="0us 120us" OUT=/tmp/lvm.txt scripts/loadgen-vs-minimal.sh
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
out="${OUT:-$root/results/bench/loadgen-vs-minimal.txt}"
rates=(${RATES:-2000 6000})
repeats="${REPEATS:-2}"
# The load generator's --spin values (the dispatcher's longest spin before each send).
spins=(${SPINS:-0us 120us})
work="$(mktemp -d)"
backend_pid=""
cleanup() {
    [[ -n "$backend_pid" ]] && kill "$backend_pid" 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT

(cd "$root" && cargo build --release --quiet --bin lblab &&
    cargo build --release --quiet -p lblab-loadgen --example minimal_client)
target="${CARGO_TARGET_DIR:-$root/target}/release"

# shellcheck source=fast-fleet.sh
source "$root/scripts/fast-fleet.sh"
fast_fleet "$target/lblab" "$work" 4 4 64

hz="$(getconf CLK_TCK)"
# threads RATE T0 T1 CMD…: each thread name's CPU µs per call of CMD over [T0, T1] s after launch.
threads() {
    local rate=$1 t0=$2 t1=$3 pid
    shift 3
    "$@" > /dev/null 2>&1 &
    pid=$!
    snap() {
        for t in /proc/"$pid"/task/*; do
            echo "$(basename "$t") $(tr ' ' '_' < "$t/comm") $(awk '{print $14 + $15}' "$t/stat")"
        done | sort
    }
    sleep "$t0"; snap > "$work/a"; sleep $((t1 - t0)); snap > "$work/b"
    wait "$pid"
    join "$work/a" "$work/b" | awk -v hz="$hz" -v n=$((rate * (t1 - t0))) \
        '{c[$2] += $5 - $3; all += $5 - $3}
         END {for (k in c) if (c[k] > 0) printf "    %-18s %6.1f\n", k, c[k] * 1e6 / hz / n;
              printf "    %-18s %6.1f\n", "(all threads)", all * 1e6 / hz / n}' | sort -k2 -nr
}

{
    echo "# CPU µs per call, each thread of the process, over 6 s inside the measured window"
    echo "# fleet: lblab backend, 4 backends answering at once, --no-realtime; client --no-realtime"
    echo "# commit $(git -C "$root" rev-parse --short HEAD), $(nproc) cores, $(date -u +%Y-%m-%dT%H:%MZ)"
    for rate in "${rates[@]}"; do
        for k in $(seq "$repeats"); do
            echo "rate $rate/s, repeat $k"
            echo "  minimal tonic client:"
            threads "$rate" 2 8 "$target/examples/minimal_client" "$targets" "$rate" 10
            echo "  minimal tonic client with lblab loadgen's deadline (1s less the call's lateness):"
            threads "$rate" 2 8 "$target/examples/minimal_client" "$targets" "$rate" 10 1000
            echo "  minimal tonic client paced per call as lblab loadgen paces, with its deadline:"
            threads "$rate" 2 8 "$target/examples/minimal_client" "$targets" "p$rate" 10 1000
            for spin in "${spins[@]}"; do
                echo "  lblab loadgen (round_robin, --spin $spin):"
                threads "$rate" 4 10 "$target/lblab" loadgen "$work/fast.toml" --targets "$targets" \
                    --policy round_robin --rate "$rate" --duration 10s --warmup 1s --no-realtime \
                    --spin "$spin" --out "$work/run"
                python3 - "$work/run/summary.json" << 'PY'
import json, sys
notes = dict(json.load(open(sys.argv[1]))["notes"])
print(f"    dispatch lateness p99 {notes['round_robin: dispatch lateness p99 us']} µs")
PY
            done
        done
    done
} | tee "$out"
