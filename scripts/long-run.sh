#!/usr/bin/env bash
# Long runs keep resident memory flat and account for every request.
#
#   scripts/long-run.sh sim  [lblab sim flags]    100 million simulated requests
#                                                 (scenarios/long/one-slow-100m.toml)
#   scripts/long-run.sh real [lblab real flags]   10 minutes at 2,000 req/s over loopback TCP
#                                                 (scenarios/one-slow.toml --duration 600s)
#   SCENARIO=path/to/other.toml scripts/long-run.sh sim|real ...
#
# Default flags: --policy peak_ewma (and for real: --floor 0s --attempts 1). Samples RSS every
# second into target/long-<mode>/rss.csv and prints it at the first sample, at the last and at
# its peak (VmHWM); then checks from summary.json that requests = ok + errors + dropped for each
# policy and, for sim, that this equals what was sent after the warm-up; lists harness
# incidents. Writes under target/long-<mode>/ (not committed). Exit status 1 if accounting fails.
set -euo pipefail
cd "$(dirname "$0")/.."
mode=${1:-}
case "$mode" in
sim | real) shift ;;
*)
    echo "usage: scripts/long-run.sh sim|real [lblab flags]" >&2
    exit 2
    ;;
esac
flags=("$@")
if [ ${#flags[@]} -eq 0 ]; then
    flags=(--policy peak_ewma)
fi
if [ "$mode" = sim ]; then
    scenario=${SCENARIO:-scenarios/long/one-slow-100m.toml}
else
    scenario=${SCENARIO:-scenarios/one-slow.toml}
    flags=(--duration 600s --floor 0s --attempts 1 "${flags[@]}")
fi
cargo build --release --bin lblab
bin=${CARGO_TARGET_DIR:-target}/release/lblab
out=target/long-$mode
rm -rf "$out"
mkdir -p "$out"
start=$(date +%s)
"$bin" "$mode" "$scenario" --out "$out/results" "${flags[@]}" >"$out/stdout.txt" 2>"$out/stderr.txt" &
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
    echo "$(($(date +%s) - start)),$rss" >>"$out/rss.csv"
done
status=0
wait "$pid" || status=$?
cat "$out/stdout.txt"
echo "== lblab $mode exited with status $status after $(($(date +%s) - start)) s"
echo "== resident memory (KiB), sampled every second: $out/rss.csv"
awk -F, 'NR==2 {first=$2; t0=$1} NR==12 {ten=$2} NR>1 {last=$2; t1=$1}
    END {printf "start (t=%ss) %s, at t=10s %s, end (t=%ss) %s\n", t0, first, ten, t1, last}' "$out/rss.csv"
echo "peak (VmHWM) at the last sample $hwm (drawing the charts at the end adds a few MiB)"
echo "== accounting"
python3 - "$out/results/summary.json" "$mode" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
mode = sys.argv[2]
notes = dict(s.get("notes", []))
ok = True
for r in s["rows"]:
    total = r["ok"] + r["errors"] + r["dropped"]
    good = total == r["requests"]
    line = f'{r["policy"]}: requests {r["requests"]:,} = ok {r["ok"]:,} + errors {r["errors"]:,} + dropped {r["dropped"]:,}'
    if mode == "sim":
        sent = int(notes.get("sent_after_warmup:" + r["policy"], -1))
        good = good and sent == r["requests"]
        line += f"; sent after warm-up {sent:,}"
    line += f'; harness incidents {r.get("incidents", 0)}: {"yes" if good else "NO"}'
    ok &= good
    print(line)
for i in s.get("incidents", []):
    print(f'incident: {i["policy"]} {i["kind"]} {i["start_s"]:.1f}-{i["end_s"]:.1f} s: {i["detail"]}')
print("partial:", s["partial"])
sys.exit(0 if ok and not s["partial"] else 1)
PY
