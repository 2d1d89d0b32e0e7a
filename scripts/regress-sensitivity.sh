#!/usr/bin/env bash
# Measures what `lblab regress` catches and how often it cries wolf, and writes
# results/regress/ (sensitivity.csv, false-alarms.csv and README.md via
# scripts/regress_report.py; every number there is read from those files).
#
#   * False alarms: a baseline of every canonical scenario (shortened to 5 s + 35 s, as lblab's
#     own CI runs them, 10 seeds), compared with the same code on other draws (--seed-offset
#     1000, 2000, ...): every figure flagged there is a false alarm.
#   * Sensitivity: peak_ewma_experimental changed on purpose (A48's with-replacement draw;
#     decayTime 1.5 to 10 times too long; other settings) in one-slow, crash-restart,
#     noisy-neighbour, cold-start and gc-pauses, compared with the baseline of the unchanged
#     default: which changes are caught where, and by how much each figure moved.
#
#   scripts/regress-sensitivity.sh            # about two minutes on 2 cores
#   OFFSETS="1000 2000" scripts/regress-sensitivity.sh
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --quiet
bin="${CARGO_TARGET_DIR:-target}/release/lblab"
out=results/regress
offsets=${OFFSETS:-"1000 2000 3000 4000 5000"}
short=(--warmup 5s --duration 35s --seeds 10)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$out"

echo "== baseline of every canonical scenario"
"$bin" regress scenarios/*.toml "${short[@]}" --write-baseline "$tmp/canonical.csv" >/dev/null 2>&1
echo "offset,figures,worse,better" > "$out/false-alarms.csv"
for k in $offsets; do
    echo "== the same code, seeds shifted by $k"
    set +e
    "$bin" regress scenarios/*.toml "${short[@]}" --seed-offset "$k" --baseline "$tmp/canonical.csv" \
        --report "$tmp/null-$k.csv" >/dev/null 2>&1
    code=$?
    set -e
    [ "$code" -le 1 ] || { echo "regress failed with $code" >&2; exit 1; }
    python3 - "$tmp/null-$k.csv" "$k" >> "$out/false-alarms.csv" <<'PY'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
worse = sum(r["verdict"] == "worse" for r in rows)
better = sum(r["verdict"] == "better" for r in rows)
print(f"{sys.argv[2]},{len(rows)},{worse},{better}")
PY
done

echo "== deliberate regressions of peak_ewma"
# The scenarios a change of peak_ewma shows in: a slow backend, a crash and restart, a noisy
# neighbour that leaves, a cold start, GC pauses.
changed=(one-slow crash-restart noisy-neighbour cold-start gc-pauses design/recovery)
files=()
for name in "${changed[@]}"; do files+=("scenarios/$name.toml"); done
"$bin" regress "${files[@]}" "${short[@]}" --policy peak_ewma --write-baseline "$tmp/changed.csv" >/dev/null 2>&1
echo "change,scenario,metric,baseline,now,change_abs,lo,hi,relative,verdict" > "$out/sensitivity.csv"
variant() {
    local label=$1 config=$2
    local copies=()
    mkdir -p "$tmp/variant"
    for name in "${changed[@]}"; do
        local copy="$tmp/variant/${name//\//-}.toml"
        sed "s|\"peak_ewma_experimental\":{}|\"peak_ewma_experimental\":$config|" "scenarios/$name.toml" > "$copy"
        copies+=("$copy")
    done
    set +e
    "$bin" regress "${copies[@]}" "${short[@]}" --policy peak_ewma --baseline "$tmp/changed.csv" \
        --report "$tmp/variant.csv" >/dev/null 2>&1
    local code=$?
    set -e
    [ "$code" -le 1 ] || { echo "regress failed with $code on $label" >&2; exit 1; }
    python3 - "$tmp/variant.csv" "$label" >> "$out/sensitivity.csv" <<'PY'
import csv, sys
for r in csv.DictReader(open(sys.argv[1])):
    b, c = (float(r[k] or "nan") for k in ("baseline", "change"))
    rel = c / b if b and b == b and abs(b) != float("inf") else float("nan")
    print(f'{sys.argv[2]},{r["scenario"]},{r["metric"]},{r["baseline"]},{r["now"]},{r["change"]},{r["lo"]},{r["hi"]},{rel:.4f},{r["verdict"]}')
PY
}
variant "unchanged" '{}'
variant "choiceCount 3" '{"choiceCount":3}'
variant "decayTime 1.5x (15s)" '{"decayTime":"15s"}'
variant "decayTime 2x (20s)" '{"decayTime":"20s"}'
variant "decayTime 3x (30s)" '{"decayTime":"30s"}'
variant "decayTime 5x (50s)" '{"decayTime":"50s"}'
variant "decayTime 10x (100s)" '{"decayTime":"100s"}'
variant "with-replacement draw (A48)" '{"lblabAblation":{"sampling":"with_replacement"}}'
variant "idlePicks 2x (10000)" '{"lblabAblation":{"idlePicks":10000}}'
variant "no peak (blend)" '{"lblabAblation":{"peak":"blend"}}'
python3 scripts/regress_report.py "$out"
echo "wrote $out/README.md"
