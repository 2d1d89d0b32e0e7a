#!/usr/bin/env bash
# Long-run check of the simulator: 100 million requests (scenarios/long/one-slow-100m.toml) with
# resident memory sampled every second, then the accounting checked from summary.json.
#
#   scripts/long-sim.sh [--policy LABEL]...     default: --policy peak_ewma (100M requests)
#   SCENARIO=path/to/other.toml scripts/long-sim.sh ...
#
# Prints RSS at the first sample, at the last and the peak (VmHWM), and for each policy
# requests = ok + errors + dropped and that it equals what was sent after the warm-up
# (rate x duration, within Poisson noise). Writes results under target/long-sim/ (not committed).
set -euo pipefail
cd "$(dirname "$0")/.."
policies=("$@")
if [ ${#policies[@]} -eq 0 ]; then
    policies=(--policy peak_ewma)
fi
cargo build --release --bin lblab
bin=${CARGO_TARGET_DIR:-target}/release/lblab
out=target/long-sim
rm -rf "$out"
mkdir -p "$out"
start=$(date +%s)
"$bin" sim "${SCENARIO:-scenarios/long/one-slow-100m.toml}" --out "$out/results" "${policies[@]}" >"$out/stdout.txt" 2>"$out/stderr.txt" &
pid=$!
echo "seconds,rss_kib" >"$out/rss.csv"
hwm=0
while kill -0 "$pid" 2>/dev/null; do
    sleep 1
    status=/proc/$pid/status
    [ -r "$status" ] || break
    rss=$(awk '/^VmRSS:/ {print $2}' "$status" 2>/dev/null || true)
    h=$(awk '/^VmHWM:/ {print $2}' "$status" 2>/dev/null || true)
    [ -n "$rss" ] || break
    hwm=${h:-$hwm}
    echo "$(( $(date +%s) - start )),$rss" >>"$out/rss.csv"
done
wait "$pid"
cat "$out/stdout.txt"
echo "== resident memory (KiB), sampled every second: $out/rss.csv"
awk -F, 'NR==2 {first=$2; t0=$1} NR>1 {last=$2; t1=$1} END {printf "start (t=%ss) %s, end (t=%ss) %s\n", t0, first, t1, last}' "$out/rss.csv"
echo "peak (VmHWM) at the last sample $hwm (drawing the charts at the end adds a few MiB)"
echo "== accounting"
python3 - "$out/results/summary.json" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
ok = True
for r in s["rows"]:
    total = r["ok"] + r["errors"] + r["dropped"]
    good = total == r["requests"]
    ok &= good
    sent = int(dict(s.get("notes", [])).get("sent_after_warmup:" + r["policy"], -1))
    good = good and sent == r["requests"]
    ok &= good
    print(f'{r["policy"]}: sent after warm-up {sent:,}; requests {r["requests"]:,} = ok {r["ok"]:,} + errors {r["errors"]:,} + dropped {r["dropped"]:,}: {"yes" if good else "NO"}')
print("partial:", s["partial"], "| simulated (warm-up included):", dict(s.get("notes", [])).get("simulated_requests"))
sys.exit(0 if ok and not s["partial"] else 1)
PY
