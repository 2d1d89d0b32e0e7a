#!/usr/bin/env bash
# Measures `lblab regress --targets` against a service nobody here wrote: two Python grpcio
# greeters (interop/python/greeter_server.py, started here on loopback, each sleeping DELAY ms per
# call). A baseline of REPEATS repeats at the base delay, then TRIALS comparisons of the unchanged
# service (every WORSE is a false alarm) and of the service with its delay raised so that its p99
# rises by about 5 % and 20 % (every WORSE is a regression caught; the summary gives the p99
# change each condition measured). Writes
# results/regress/real/trials.csv (one row per comparison: condition, trial, exit code, the
# median p99 of the baseline and of the trial, its p-value) and summary.txt.
#
#   scripts/regress-real-sensitivity.sh           # about 20 minutes on 2 cores
#   TRIALS=5 scripts/regress-real-sensitivity.sh
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/greeters.sh
trials=${TRIALS:-20}
repeats=${REPEATS:-8}
base=${BASE_DELAY_MS:-5}
out=results/regress/real
tmp=$(mktemp -d)
trap 'stop_greeters; rm -rf "$tmp"' EXIT
mkdir -p "$out"

# Starts the two greeters at DELAY ms; sets $targets.
serve() {
    stop_greeters
    targets=""
    for i in 1 2; do start_greeter "$1" "$tmp/g$i.out"; done
    for i in 1 2; do targets+="${targets:+,}$(greeter_addr "$tmp/g$i.out")"; done
}

flags=(--call lblab.interop.v1.Greeter/SayHello --policy round_robin -r 200 --warmup 0.5s
    --duration 2s --repeat "$repeats" --no-realtime --out "$tmp/runs")
serve "$base"
"$bin" regress --targets "$targets" "${flags[@]}" --write-baseline "$tmp/baseline.csv" >/dev/null 2>&1
cp "$tmp/baseline.csv" "$out/baseline.csv"
echo "condition,delay_ms,trial,exit,baseline_p99_ms,now_p99_ms,p99_change,p" >"$out/trials.csv"
# The delays whose p99 is about 5 % and 20 % above the base's (p99 = delay + the stack's own
# time, about 1.5 ms here).
for condition in "unchanged:$base" "p99+5%:${DELAY5:-5.33}" "p99+20%:${DELAY20:-6.3}"; do
    name=${condition%%:*}
    delay=${condition#*:}
    serve "$delay"
    for t in $(seq 1 "$trials"); do
        set +e
        "$bin" regress --targets "$targets" "${flags[@]}" --baseline "$tmp/baseline.csv" \
            --report "$tmp/report.csv" >/dev/null 2>&1
        code=$?
        set -e
        row=$(awk -F, '$2=="p99_ms" {printf "%s,%s,%.4f,%s", $3, $4, $4/$3-1, $5}' "$tmp/report.csv")
        echo "$name,$delay,$t,$code,$row" >>"$out/trials.csv"
        echo "$name trial $t: exit $code ($row)"
    done
done
python3 - "$out" <<'PY' | tee "$out/summary.txt"
import csv, statistics, sys
rows = list(csv.DictReader(open(f"{sys.argv[1]}/trials.csv")))
print(f"lblab regress --targets: {len(rows)} comparisons with a baseline of the unchanged service")
for name in dict.fromkeys(r["condition"] for r in rows):
    rs = [r for r in rows if r["condition"] == name]
    worse = sum(r["exit"] == "1" for r in rs)
    errors = sum(r["exit"] not in ("0", "1") for r in rs)
    change = statistics.median(float(r["p99_change"]) for r in rs)
    what = "false alarms" if name == "unchanged" else "caught"
    print(f"  {name} (delay {rs[0]['delay_ms']} ms, median p99 change {100 * change:+.1f} %): "
          f"{what} {worse} of {len(rs)}" + (f", {errors} errors" if errors else ""))
PY
