#!/usr/bin/env bash
# grpcio (gRPC C-core, Python) beside lblab's own client on the same fleet: for each scenario,
# starts `lblab backend SCENARIO` once and runs against it, one after the other at the same rate
# and with the same service configs, grpcio's round_robin, pick_first, weighted_round_robin (its
# weights from the per-call ORCA reports in lblab's `endpoint-load-metrics-bin` trailers),
# outlier_detection_experimental and least_request_experimental (which grpcio lacks: recorded as
# such), then `lblab loadgen` with lblab's implementations of the same configs; then writes
# results/interop/python.md and the raw files under results/interop/python/<scenario>/. About 5
# minutes on a 2-core machine with the defaults.
#
#   scripts/interop-python.sh                     # one-slow, gc-pauses, heterogeneous
#   scripts/interop-python.sh one-slow            # just one
#   LBLAB_BIN=/path/to/lblab RATE=400 DURATION=6 WARMUP=3 CLIENTS=4 scripts/interop-python.sh
#   OUT=/tmp/somewhere scripts/interop-python.sh  # raw files and python.md elsewhere
#
# Only loopback; every process it starts stops by itself (the fleet with --for) and is also
# stopped when the script exits.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
# shellcheck source=scripts/interop-fleet.sh
source "$root/scripts/interop-fleet.sh"

python="$("$root/scripts/interop-env.sh" | tail -1)"
gen="$(dirname "$(dirname "$python")")/gen"

find_lblab

# The policies both clients run, as label=config (the same JSON on both sides). WRR's blackout is
# shortened so that its weights count within the short warm-up; outlier detection is tuned for a
# run of seconds, as the canonical scenarios tune it for a minute.
policies=(
    'round_robin={"round_robin":{}}'
    'pick_first={"pick_first":{}}'
    'weighted_round_robin={"weighted_round_robin":{"blackoutPeriod":"1s","weightUpdatePeriod":"0.1s"}}'
    'od(round_robin)={"outlier_detection_experimental":{"interval":"1s","baseEjectionTime":"10s","maxEjectionPercent":20,"successRateEjection":{"requestVolume":20},"failurePercentageEjection":{"threshold":50,"requestVolume":20},"childPolicy":[{"round_robin":{}}]}}'
    'least_request={"least_request_experimental":{"choiceCount":2}}'
)

per_run=$((warmup + duration + 8))
for scenario in "${scenarios[@]}"; do
    file="$root/scenarios/$scenario.toml"
    [[ -f "$file" ]] || { echo "error: no scenario $file" >&2; exit 2; }
    dir="$out/python/$scenario"
    rm -rf "$dir"
    mkdir -p "$dir"
    echo "== $scenario: rate $rate/s, warm-up ${warmup}s, measured ${duration}s, $clients clients" >&2
    start_fleet "$file" "$dir" "$((2 * ${#policies[@]} * per_run + 30))"
    lblab_policies=()
    for entry in "${policies[@]}"; do
        label="${entry%%=*}"
        config="{\"loadBalancingConfig\":[${entry#*=}]}"
        echo "   grpcio $label" >&2
        PYTHONPATH="$gen" "$python" "$root/interop/python/echo_client.py" --targets "$targets" \
            --service-config "$config" --rate "$rate" --duration "$duration" --warmup "$warmup" \
            --clients "$clients" --deadline "$deadline" > "$dir/grpcio-$label.json" || true
        lblab_policies+=(--policy "$config")
    done
    echo "   lblab loadgen" >&2
    lblab_loadgen "$dir" "$file" --targets "$targets" "${lblab_policies[@]}" --rate "$rate" \
        --clients "$clients" --duration "${duration}s" --warmup "${warmup}s" \
        --deadline "${deadline}s"
    stop_fleet
done

"$python" "$root/interop/python/report.py" --dir "$out/python" --out "$out/python.md" \
    --command "scripts/interop-python.sh $*" --rate "$rate" --duration "$duration" \
    --warmup "$warmup" --clients "$clients" "${scenarios[@]}"
echo "wrote $out/python.md" >&2
