#!/usr/bin/env bash
# Regenerates the cost figures in results/bench/, with the commit and machine they came from:
#   shared-pick.csv   pick + completion over one picker shared by 1, 2, 4 and 8 threads at 2 to
#                     10,000 endpoints (policy/benches/shared_pick.rs), medians and the ratio to
#                     round_robin at the same threads and endpoints, from one run
#   policy-pick.csv   single-threaded pick + completion of every sans-IO policy and tower's
#                     balancer (policy/benches/pick.rs), medians from one run
#   sim-scaling.txt   simulated requests per CPU-second (sim/examples/scaling.rs)
#   harness-capacity.csv  the real harness (healthy, 20 backends, round_robin, 5 s per rate) at
#                     rising open-loop rates: dispatch lateness p99 and client CPU per call; the
#                     capacity is the highest rate before the first incident (lateness p99 above
#                     1 ms, the harness's own "disturbed" line, or any failed call)
#   memory.csv        bytes per endpoint each policy allocates, counted at 10,000 endpoints
#                     (policy/examples/memory.rs)
#   loadgen-vs-minimal.txt  lblab loadgen's CPU per call, thread by thread, beside a minimal tonic
#                     client's at 2,000 and 6,000 calls/s open loop (scripts/loadgen-vs-minimal.sh)
#   loadgen-vs-h2load.txt   calls/s and CPU per call of h2load, a minimal tonic client and lblab
#                     loadgen, closed loop against one lblab backend (scripts/loadgen-vs-h2load.sh;
#                     installs Debian's nghttp2-client when missing)
#   goals.txt         each cost goal met or not, with its ratio (scripts/bench-goals.py; the
#                     simulator's goal is against 04076bc: run with BASE=04076bc)
#   machine.txt       commit, date, nproc, CPU model, rustc
# With BASE=<commit>, also against that commit, side by side in the same run (its worktree built
# in $CARGO_TARGET_DIR/bench-base/):
#   sim-scaling-vs-base.txt   the scaling example of both commits, alternating per configuration
#   pick-vs-base.csv          both commits' pick benches (only if the base's benches measure
#                             thread CPU time as these do; older ones measured wall time)
# Benchmarks are not tests: run this on a machine doing nothing else. About 25 minutes on 2 cores
# (40 with BASE). The pick benches and the simulator report thread CPU time, which other work on
# the machine inflates far less than wall time; still, quote ratios from one run.
#
#   scripts/bench.sh
#   OUT=/tmp/bench scripts/bench.sh
#   BASE=HEAD~1 OUT=/tmp/bench scripts/bench.sh
set -euo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-results/bench}
target=${CARGO_TARGET_DIR:-target}
mkdir -p "$out"
# Read before machine.txt is opened: writing it would make the tree look changed.
commit="$(git rev-parse --short HEAD)$(git diff --quiet HEAD -- . || echo ' (with uncommitted changes)')"
{
    echo "commit: $commit"
    echo "date: $(date -u +%Y-%m-%dT%H:%MZ)"
    echo "nproc: $(nproc)"
    echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')"
    echo "rustc: $(rustc --version)"
} > "$out/machine.txt"
cargo bench -p lblab-policy --bench shared_pick -- --warm-up-time 1 --measurement-time 2 --noplot
cargo bench -p lblab-policy --bench pick -- --warm-up-time 1 --measurement-time 2 --noplot
# The medians criterion wrote, as CSV (group, function, value, median ns).
python3 - "$target/criterion" "$out" <<'PY'
import csv, json, pathlib, sys
root, out = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
def medians(group):
    rows = {}
    for bench in (root / group).glob("*/*/new/benchmark.json"):
        meta = json.loads(bench.read_text())
        est = json.loads((bench.parent / "estimates.json").read_text())
        rows[(meta["function_id"], int(meta["value_str"]))] = est["median"]["point_estimate"]
    return rows
shared = medians("shared_pick_done")
with open(out / "shared-pick.csv", "w", newline="") as f:
    w = csv.writer(f)
    w.writerow(["policy", "threads", "endpoints", "median_ns", "vs_round_robin"])
    for (fid, n), ns in sorted(shared.items(), key=lambda kv: (kv[0][0].split("/")[0], int(kv[0][0].split("/")[1]), kv[0][1])):
        policy, threads = fid.split("/")
        rr = shared.get((f"round_robin/{threads}", n))
        w.writerow([policy, threads, n, f"{ns:.1f}", f"{ns / rr:.2f}" if rr else ""])
single = medians("pick_done")
with open(out / "policy-pick.csv", "w", newline="") as f:
    w = csv.writer(f)
    w.writerow(["bench", "endpoints", "median_ns"])
    for (fid, n), ns in sorted(single.items()):
        w.writerow([fid, n, f"{ns:.1f}"])
PY
cargo run --release --quiet -p lblab-policy --example memory > "$out/memory.csv"
cargo run --release --quiet -p lblab-sim --example scaling > "$out/sim-scaling.txt"
if [ -n "${BASE:-}" ]; then
    base_tree=$(mktemp -d)
    git worktree add --quiet --detach "$base_tree" "$BASE"
    trap 'git worktree remove --force "$base_tree"' EXIT
    base_target="$(realpath -m "$target")/bench-base"
    base_rev=$(git rev-parse --short "$BASE")
    (cd "$base_tree" && CARGO_TARGET_DIR="$base_target" cargo build --release --quiet -p lblab-sim --example scaling)
    cargo build --release --quiet -p lblab-sim --example scaling
    {
        echo "# the scaling example, $base_rev (base) and $(git rev-parse --short HEAD) (head) alternating per configuration"
        for config in "20 4" "1000 4" "10000 4" "20 1" "20 100"; do
            for policy in round_robin peak_ewma; do
                # shellcheck disable=SC2086 # the configuration is two words on purpose
                echo "base $("$base_target/release/examples/scaling" $config $policy)"
                # shellcheck disable=SC2086
                echo "head $("$target/release/examples/scaling" $config $policy)"
            done
        done
    } > "$out/sim-scaling-vs-base.txt"
    if grep -q thread_cpu "$base_tree/policy/benches/pick.rs"; then
        (cd "$base_tree" && CARGO_TARGET_DIR="$base_target" cargo bench -p lblab-policy --bench shared_pick -- --warm-up-time 1 --measurement-time 2 --noplot \
            && CARGO_TARGET_DIR="$base_target" cargo bench -p lblab-policy --bench pick -- --warm-up-time 1 --measurement-time 2 --noplot)
        python3 - "$base_target/criterion" "$target/criterion" "$out/pick-vs-base.csv" <<'PY'
import csv, json, pathlib, sys
def medians(root):
    rows = {}
    for bench in pathlib.Path(root).glob("*/*/*/new/benchmark.json"):
        meta = json.loads(bench.read_text())
        est = json.loads((bench.parent / "estimates.json").read_text())
        rows[(meta["group_id"], meta["function_id"], int(meta["value_str"]))] = est["median"]["point_estimate"]
    return rows
base, head = medians(sys.argv[1]), medians(sys.argv[2])
with open(sys.argv[3], "w", newline="") as f:
    w = csv.writer(f)
    w.writerow(["bench", "policy", "endpoints", "base_ns", "head_ns", "head_vs_base"])
    for key in sorted(set(base) & set(head)):
        w.writerow([key[0], key[1], key[2], f"{base[key]:.1f}", f"{head[key]:.1f}", f"{head[key] / base[key]:.2f}"])
PY
    else
        echo "bench.sh: $base_rev's pick benches measure wall time, not thread CPU time: no pick-vs-base.csv" >&2
    fi
fi
cargo build --release --quiet
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"; [ -z "${base_tree:-}" ] || git worktree remove --force "$base_tree"' EXIT
echo "rate,lateness_p99_us,client_cpu_per_call_us,dispatcher_cpu_per_call_us,failed,incident" > "$out/harness-capacity.csv"
for rate in 1000 2000 3000 4000 6000 8000; do
    sed "s/^rate = .*/rate = $rate/" scenarios/healthy.toml > "$scratch/healthy-$rate.toml"
    "$target/release/lblab" real "$scratch/healthy-$rate.toml" --policy round_robin --duration 5s \
        --warmup 1s --floor 0s --attempts 1 --out "$scratch/run-$rate" > /dev/null
    python3 - "$scratch/run-$rate" "$rate" >> "$out/harness-capacity.csv" <<'PY'
import csv, json, sys
run, rate = sys.argv[1], sys.argv[2]
p = json.load(open(f"{run}/harness.json"))["policies"][0]
row = next(csv.DictReader(open(f"{run}/summary.csv")))
failed = int(row["errors"]) + int(row["deadline_exceeded"]) + int(row["dropped"])
late = p["dispatch_lateness"]["p99_us"]
print(f"{rate},{late:.0f},{p['client_cpu_per_call_us']:.1f},{p['dispatcher_cpu_per_call_us']:.1f},{failed},{'yes' if late > 1000 or failed else 'no'}")
PY
done
OUT="$out/loadgen-vs-minimal.txt" scripts/loadgen-vs-minimal.sh > /dev/null
OUT="$out/loadgen-vs-h2load.txt" scripts/loadgen-vs-h2load.sh > /dev/null
python3 scripts/bench-goals.py "$out" > "$out/goals.txt"
cat "$out/goals.txt"
base_files="${BASE:+ sim-scaling-vs-base.txt}"
# Only written when the base's pick benches measure thread CPU time.
if [ -n "${BASE:-}" ] && [ -e "$out/pick-vs-base.csv" ] && [ "$out/pick-vs-base.csv" -nt "$out/machine.txt" ]; then
    base_files+=" pick-vs-base.csv"
fi
echo "wrote $out/: shared-pick.csv policy-pick.csv memory.csv sim-scaling.txt harness-capacity.csv loadgen-vs-minimal.txt loadgen-vs-h2load.txt goals.txt machine.txt$base_files"
