#!/usr/bin/env bash
# Measures the peak resident memory of `lblab sim` on a few kinds of input and sets it beside
# lblab's own estimate (model/src/budget.rs, read from the message of a run refused with a 1-byte
# --memory-budget). Writes results/memory/estimates.csv. Run from the repository root with
# nothing else running:  scripts/memory-estimates.sh [path/to/lblab]
# Needs GNU time (/usr/bin/time -v). The ratio estimate/measured should lie in [1.0, 1.5].
set -euo pipefail
LBLAB=${1:-target/release/lblab}
OUT=results/memory/estimates.csv
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

policy() { # label, loadBalancingConfig key
  printf '[[policies]]\nname = "%s"\nconfig = '"'"'{"loadBalancingConfig":[{"%s":{}}]}'"'"'\n' "$1" "$2"
}
fleet() { # count
  printf '[[fleet]]\nname = "main"\ncount = %s\nservice_time = { dist = "lognormal", median = "2ms", p99 = "8ms" }\n' "$1"
}
scenario() { # name, workload lines, backends, policies (rr | many), more tables (faults)
  local f="$WORK/$1.toml"
  { printf 'name = "%s"\nseed = 1\n[workload]\n%b\n' "$1" "$2"; fleet "$3"
    printf '%b' "${5:-}"
    policy round_robin round_robin
    if [ "$4" = many ]; then
      policy peak_ewma peak_ewma_experimental
      policy least_request least_request_experimental
      policy pick_first pick_first
      policy oracle oracle
      policy "peak_ewma(2)" peak_ewma_experimental
      policy "least_request(2)" least_request_experimental
      policy "round_robin(2)" round_robin
    fi; } > "$f"
  echo "$f"
}

# kind, workload, backends, policies
CASES=(
  "baseline|clients = 1\nrate = 100\nwarmup = \"1s\"\nduration = \"10s\"|3|rr"
  "many_backends|clients = 4\nrate = 2000\nwarmup = \"1s\"\nduration = \"20s\"|5000|rr"
  "long_run|clients = 1\nrate = 20\nwarmup = \"1s\"\nduration = \"6h\"|10|rr"
  "many_policies|clients = 2\nrate = 2000\nwarmup = \"1s\"\nduration = \"60s\"|50|many"
  "closed_many_slots|clients = 100\narrival = \"closed\"\nconcurrency = 100\nwarmup = \"1s\"\nduration = \"3s\"|20|rr"
  "high_rate|clients = 4\nrate = 500000\nwarmup = \"1s\"\nduration = \"5s\"|20|rr"
  "overloaded|clients = 4\nrate = 100000\ndeadline = \"2s\"\nwarmup = \"1s\"\nduration = \"5s\"|20|rr"
  "closed_failing|clients = 100\narrival = \"closed\"\nconcurrency = 1000\nwarmup = \"1s\"\nduration = \"1s\"|20|rr|[[faults]]\nkind = \"fail_fast\"\ntargets = [\"main\"]\nerror_rate = 1.0\n"
)

echo "kind,backends,policies,estimate_mib,measured_mib,ratio" > "$OUT"
for c in "${CASES[@]}"; do
  IFS='|' read -r kind workload backends policies extra <<< "$c"
  f=$(scenario "$kind" "$workload" "$backends" "$policies" "$extra")
  n=$(grep -c '^\[\[policies\]\]' "$f")
  # The estimate, from the refusal message ("about 12.3 MiB of memory").
  msg=$("$LBLAB" sim "$f" --out "$WORK/out-$kind" --memory-budget 1 2>&1 >/dev/null || true)
  est=$(sed -n 's/.*need about \([0-9.]*\) \([KMGT]\)iB.*/\1 \2/p' <<< "$msg" | head -1)
  est_mib=$(awk -v v="${est% *}" -v u="${est#* }" 'BEGIN {
    f = (u == "K") ? 1/1024 : (u == "M") ? 1 : (u == "G") ? 1024 : 1048576; printf "%.1f", v * f }')
  # The measured peak (KiB), on a fresh folder.
  if ! /usr/bin/time -v -o "$WORK/time-$kind" "$LBLAB" sim "$f" --out "$WORK/out-$kind" \
      > /dev/null 2> "$WORK/err-$kind"; then
    echo "$kind: lblab sim failed:" >&2; cat "$WORK/err-$kind" >&2; exit 1
  fi
  rss=$(sed -n 's/.*Maximum resident set size (kbytes): //p' "$WORK/time-$kind")
  meas_mib=$(awk -v k="$rss" 'BEGIN { printf "%.1f", k / 1024 }')
  ratio=$(awk -v e="$est_mib" -v m="$meas_mib" 'BEGIN { printf "%.2f", e / m }')
  echo "$kind,$backends,$n,$est_mib,$meas_mib,$ratio" | tee -a "$OUT"
done
