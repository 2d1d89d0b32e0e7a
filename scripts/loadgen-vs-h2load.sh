#!/usr/bin/env bash
# The load generator's calls per second beside h2load's (nghttp2's HTTP/2 benchmarking client, a
# C program that sends each call as fixed bytes and reads nothing of the reply) and a minimal
# tonic client's (loadgen/examples/minimal_client.rs), when the client is the limit: all closed
# loop with the same calls in flight over one HTTP/2 connection to one `lblab backend` that
# answers at once, on the same cores, --no-realtime, alternating. h2load sends lblab.v1.Echo/Unary
# with an empty CallRequest as a gRPC frame, as the load generator's default call does. Also the
# CPU per call of each client process (from /proc over the same window). Writes
# results/bench/loadgen-vs-h2load.txt (or $OUT). About 2 minutes; run it on a machine doing
# nothing else. Only loopback. Installs Debian's nghttp2-client if h2load is missing and apt-get
# may run (root); otherwise says so and exits 2.
#
#   scripts/loadgen-vs-h2load.sh
#   IN_FLIGHT="16 64" REPEATS=3 SECONDS_EACH=8 OUT=/tmp/h2.txt scripts/loadgen-vs-h2load.sh
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
out="${OUT:-$root/results/bench/loadgen-vs-h2load.txt}"
in_flight=(${IN_FLIGHT:-64})
repeats="${REPEATS:-3}"
seconds="${SECONDS_EACH:-8}"
if ! command -v h2load > /dev/null; then
    if [[ $(id -u) == 0 ]] && command -v apt-get > /dev/null; then
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nghttp2-client > /dev/null
    else
        echo "error: h2load is not installed (Debian: apt-get install nghttp2-client)" >&2
        exit 2
    fi
fi
work="$(mktemp -d)"
backend_pid=""
cleanup() {
    [[ -n "$backend_pid" ]] && kill "$backend_pid" 2> /dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT

(cd "$root" && cargo build --release --quiet --bin lblab &&
    cargo build --release --quiet -p lblab-loadgen --example minimal_client)
lblab="${CARGO_TARGET_DIR:-$root/target}/release/lblab"
minimal="${CARGO_TARGET_DIR:-$root/target}/release/examples/minimal_client"

# shellcheck source=fast-fleet.sh
source "$root/scripts/fast-fleet.sh"
fast_fleet "$lblab" "$work" 1 1 256
target=$targets
# An empty CallRequest in a gRPC frame: not compressed, length 0.
printf '\x00\x00\x00\x00\x00' > "$work/request"

hz="$(getconf CLK_TCK)"
# cpu PID: user + system ticks of every thread of PID so far.
cpu() { awk '{print $14 + $15}' /proc/"$1"/stat; }

# h2load_run N: calls/s and CPU µs per call of h2load with N streams in flight on one connection
# over $seconds s after 1 s of warm-up.
h2load_run() {
    h2load -c 1 -m "$1" -t 1 -D "$seconds" --warm-up-time 1 \
        -H 'content-type: application/grpc' -H 'te: trailers' -d "$work/request" \
        "http://$target/lblab.v1.Echo/Unary" > "$work/h2.txt" 2>&1 &
    local pid=$! a b
    sleep 1.5; a=$(cpu "$pid"); sleep $((seconds - 1)); b=$(cpu "$pid")
    wait "$pid"
    local rps ok
    rps=$(awk '/^finished in/ {gsub(",", "", $4); print $4}' "$work/h2.txt")
    ok=$(awk '/^requests:/ {print $8}' "$work/h2.txt")
    awk -v rps="$rps" -v ok="$ok" -v t=$((seconds - 1)) -v d=$((b - a)) -v hz="$hz" \
        'BEGIN {printf "%9.0f calls/s  %6.1f µs CPU per call  (%s succeeded)\n", rps, d * 1e6 / hz / (rps * t), ok}'
}

# loadgen_run N: the same for lblab loadgen (round_robin, one client, N calls in flight).
loadgen_run() {
    "$lblab" loadgen --targets "$target" --policy round_robin --clients 1 --concurrency "$1" \
        --duration "${seconds}s" --warmup 1s --no-realtime -O json --out "$work/run" \
        > "$work/lg.json" 2> /dev/null &
    local pid=$! a b
    sleep 2.5; a=$(cpu "$pid"); sleep $((seconds - 1)); b=$(cpu "$pid")
    wait "$pid"
    python3 - "$work/lg.json" "$seconds" $((seconds - 1)) $((b - a)) "$hz" << 'PY'
import json, sys
run = json.load(open(sys.argv[1]))
seconds, window, ticks, hz = float(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
ok = run["rows"][0]["ok"]
rps = ok / run["measured_s"]
print(f"{rps:9.0f} calls/s  {ticks * 1e6 / hz / (rps * window):6.1f} µs CPU per call  ({ok} succeeded)")
PY
}

# minimal_run N: the same for the minimal tonic client (loadgen/examples/minimal_client.rs), N
# tasks each calling in turn; its first second is its warm-up here.
minimal_run() {
    "$minimal" "$target" "c$1" $((seconds + 1)) > "$work/min.txt" 2>&1 &
    local pid=$! a b
    sleep 1.5; a=$(cpu "$pid"); sleep $((seconds - 1)); b=$(cpu "$pid")
    wait "$pid"
    local rps ok
    rps=$(sed -n 's/.*(\([0-9]*\) calls\/s).*/\1/p' "$work/min.txt")
    ok=$(awk '{print $4}' "$work/min.txt")
    awk -v rps="$rps" -v ok="$ok" -v t=$((seconds - 1)) -v d=$((b - a)) -v hz="$hz" \
        'BEGIN {printf "%9.0f calls/s  %6.1f µs CPU per call  (%s succeeded)\n", rps, d * 1e6 / hz / (rps * t), ok}'
}

{
    echo "# closed loop, one HTTP/2 connection to one lblab backend answering at once (--no-realtime),"
    echo "# ${seconds} s measured after 1 s of warm-up; CPU per call of the client process over ${seconds} - 1 s"
    echo "# commit $(git -C "$root" rev-parse --short HEAD), $(nproc) cores, $(h2load --version | head -1), $(date -u +%Y-%m-%dT%H:%MZ)"
    for n in "${in_flight[@]}"; do
        for k in $(seq "$repeats"); do
            echo "in flight $n, repeat $k"
            echo "  h2load:        $(h2load_run "$n")"
            echo "  minimal tonic: $(minimal_run "$n")"
            echo "  lblab loadgen: $(loadgen_run "$n")"
        done
    done
} | tee "$out"
