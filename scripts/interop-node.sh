#!/usr/bin/env bash
# grpc-js (Node) beside lblab's own client on the same fleet: installs the pinned Node packages
# of interop/node (npm ci), builds or uses the lblab binary, and for each scenario starts
# `lblab backend SCENARIO` once and runs against it, one after the other at the same rate:
#   grpc-js round_robin, grpc-js pick_first, grpc-js peak_ewma_experimental (interop/node's port),
#   then `lblab loadgen` with lblab's round_robin, peak_ewma and tower_p2c_peak_ewma;
# then writes results/interop/node.md (tables, agreement, CPU per call) and the raw files under
# results/interop/node/<scenario>/. About 4 minutes on a 2-core machine with the defaults.
#
#   scripts/interop-node.sh                      # one-slow, gc-pauses, heterogeneous
#   scripts/interop-node.sh one-slow             # just one
#   LBLAB_BIN=/path/to/lblab RATE=400 DURATION=8 WARMUP=3 scripts/interop-node.sh
#   OUT=/tmp/somewhere scripts/interop-node.sh   # raw files and node.md elsewhere
#   scripts/interop-node.sh --install            # only npm ci, prints NODE_PATH (tests/interop_node.rs)
#
# Only loopback; every process it starts stops by itself (the fleet with --for) and is also
# stopped when the script exits.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
node_dir="$root/interop/node"
# shellcheck source=scripts/interop-fleet.sh
source "$root/scripts/interop-fleet.sh"

command -v node >/dev/null || { echo "error: node is not installed (Node 20 or newer is needed)" >&2; exit 2; }
command -v npm >/dev/null || { echo "error: npm is not installed (it comes with Node 20)" >&2; exit 2; }

# The Node packages, exactly as package-lock.json pins them, installed outside the checkout (under
# the Cargo target folder, or $LBLAB_NODE_PREFIX) and found through NODE_PATH; skipped when
# already installed from this lock file. One installer at a time (tests may call this concurrently).
prefix="${LBLAB_NODE_PREFIX:-${CARGO_TARGET_DIR:-$root/target}/interop-node}"
mkdir -p "$prefix"
prefix="$(cd "$prefix" && pwd)"
exec 8>"$prefix.lock"
flock 8
stamp="$prefix/node_modules/.lblab-stamp"
want="$(sha256sum "$node_dir/package-lock.json" | cut -d' ' -f1)"
if [[ ! -f "$stamp" || "$(cat "$stamp")" != "$want" ]]; then
    cp "$node_dir/package.json" "$node_dir/package-lock.json" "$prefix/"
    npm ci --prefix "$prefix" --no-audit --no-fund --loglevel=error >&2
    echo "$want" > "$stamp"
fi
export NODE_PATH="$prefix/node_modules"
if [[ "${1:-}" == "--install" ]]; then
    echo "$NODE_PATH"
    exit 0
fi
(cd "$node_dir" && node --test test/ >/dev/null) || { echo "error: interop/node unit tests fail" >&2; exit 2; }

find_lblab

per_run=$((warmup + duration + 4))
for scenario in "${scenarios[@]}"; do
    # Long enough for the runs; stopped at the end of the scenario in any case.
    begin_scenario node "$scenario" "$((10 * per_run))"
    # grpc-js's own policies and the port, as label=config. grpc-js reads snake_case fields, takes
    # outlier detection's durations as {seconds, nanos} and registers it as `outlier_detection`.
    # WRR's blackout is shortened so its weights count within the short warm-up, on both sides.
    for entry in \
        'round_robin=round_robin' \
        'pick_first=pick_first' \
        'peak_ewma_experimental=peak_ewma_experimental' \
        'weighted_round_robin={"weighted_round_robin":{"blackout_period":"1s","weight_update_period":"0.1s"}}' \
        'outlier_detection(round_robin)={"outlier_detection":{"interval":{"seconds":1,"nanos":0},"base_ejection_time":{"seconds":10,"nanos":0},"max_ejection_percent":20,"success_rate_ejection":{"request_volume":20},"failure_percentage_ejection":{"threshold":50,"request_volume":20},"child_policy":[{"round_robin":{}}]}}'; do
        label="${entry%%=*}"
        node "$node_dir/client.js" --targets "$targets" --policy "${entry#*=}" --label "$label" \
            --rate "$rate" --duration "$duration" --warmup "$warmup" --clients "$clients" \
            --deadline "$deadline" --slow "$slow" --out "$dir/grpc-js-$label" >&2
    done
    lblab_loadgen "$dir" "$file" --targets "$targets" --policy round_robin --policy peak_ewma \
        --policy tower_p2c_peak_ewma \
        --policy '{"weighted_round_robin":{"blackoutPeriod":"1s","weightUpdatePeriod":"0.1s"}}' \
        --policy '{"outlier_detection_experimental":{"interval":"1s","baseEjectionTime":"10s","maxEjectionPercent":20,"successRateEjection":{"requestVolume":20},"failurePercentageEjection":{"threshold":50,"requestVolume":20},"childPolicy":[{"round_robin":{}}]}}' \
        --rate "$rate" --clients "$clients" --duration "${duration}s" \
        --warmup "${warmup}s" --deadline "${deadline}s"
    grep -E 'client CPU' "$dir/lblab-loadgen.err" >&2 || true
    stop_fleet
done

node "$node_dir/report.js" --dir "$out/node" --out "$out/node.md" \
    --command "scripts/interop-node.sh $*" --rate "$rate" --duration "$duration" --warmup "$warmup" \
    --clients "$clients" "${scenarios[@]}"
echo "wrote $out/node.md" >&2
