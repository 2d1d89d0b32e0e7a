#!/usr/bin/env bash
# Measures whether a `lblab loadgen --repeat` verdict is what a second identical command says.
# Four Python grpcio greeters (interop/python/greeter_server.py, started here on loopback), one
# of them SLOW_MS slower per call than the others (BASE_MS), the case a service owner brings; then
# COMMANDS identical commands, each running round_robin and peak_ewma_experimental REPEATS times
# interleaved. For each command and figure (p99, p99.9, failed share) the verdict line
# (lower / higher / not separable) and its interval. Writes
# results/loadgen/verdict-repeatability/commands.csv and summary.txt (how often consecutive
# commands, paired 1-2, 3-4, …, gave the same line, and the spread of the intervals).
#
#   scripts/verdict-repeatability.sh          # about 8 minutes on 2 cores
#   COMMANDS=4 scripts/verdict-repeatability.sh
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/greeters.sh
commands=${COMMANDS:-10}
repeats=${REPEATS:-6}
base=${BASE_MS:-5}
slow=${SLOW_MS:-20}
out=results/loadgen/verdict-repeatability
tmp=$(mktemp -d)
trap 'stop_greeters; rm -rf "$tmp"' EXIT
mkdir -p "$out"

targets=""
for i in 1 2 3 4; do
    delay=$base
    [ "$i" = 4 ] && delay=$((base + slow))
    start_greeter "$delay" "$tmp/g$i.out"
done
for i in 1 2 3 4; do targets+="${targets:+,}$(greeter_addr "$tmp/g$i.out")"; done

command=(loadgen --targets "$targets" --call lblab.interop.v1.Greeter/SayHello
    --policy round_robin --policy peak_ewma_experimental -r 200 --warmup 0.5s --duration 3s
    --repeat "$repeats" --no-realtime)
echo "lblab ${command[*]}" | sed "s|$targets|<4 greeters>|" >"$out/command.txt"
echo "command,metric,outcome,median,lo,hi,more_repeats,incidents" >"$out/commands.csv"
for c in $(seq 1 "$commands"); do
    "$bin" "${command[@]}" --out "$tmp/run" >"$tmp/stdout" 2>"$tmp/stderr"
    python3 - "$tmp/run/verdict.json" "$c" >>"$out/commands.csv" <<'PY'
import json, sys
v = json.load(open(sys.argv[1]))
incidents = sum(n for _, n in v["verdict"]["incidents"])
pe = next(p for p in v["verdict"]["policies"] if p["policy"] == "peak_ewma_experimental")
for line in pe["against_baseline"]:
    ch = line["change"]
    more = "" if line["more_repeats"] is None else line["more_repeats"]
    print(f'{sys.argv[2]},{line["metric"]},{line["outcome"]},{ch["median"]:.3f},{ch["lo"]:.3f},'
          f'{ch["hi"]:.3f},{more},{incidents}')
PY
    grep "against round_robin" "$tmp/stdout" | sed "s/^/command $c: /" || true
    rm -rf "$tmp/run"
done
python3 - "$out" <<'PY' | tee "$out/summary.txt"
import collections, csv, sys
rows = list(csv.DictReader(open(f"{sys.argv[1]}/commands.csv")))
commands = sorted({int(r["command"]) for r in rows})
print(f"{len(commands)} identical commands: {open(f'{sys.argv[1]}/command.txt').read().strip()}")
print("peak_ewma_experimental against round_robin, per figure:")
for metric in dict.fromkeys(r["metric"] for r in rows):
    rs = {int(r["command"]): r for r in rows if r["metric"] == metric}
    outcomes = collections.Counter(r["outcome"] for r in rs.values())
    pairs = [(a, a + 1) for i, a in enumerate(commands) if i % 2 == 0 and a + 1 in rs]
    same = sum(rs[a]["outcome"] == rs[b]["outcome"] for a, b in pairs)
    top, n = outcomes.most_common(1)[0]
    medians = sorted(float(r["median"]) for r in rs.values())
    print(f"  {metric}: {dict(outcomes)}; the second command of a pair said the same in {same} of "
          f"{len(pairs)} pairs; {n} of {len(rs)} commands said '{top}'; median change "
          f"{medians[0]:+.2f} to {medians[-1]:+.2f} ms across commands")
PY
