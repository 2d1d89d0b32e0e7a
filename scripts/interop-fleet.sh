# Sourced by the interop scripts, not run, with the script's arguments: their settings (from the
# environment) and scenarios (the arguments), the lblab binary, one `lblab backend` fleet at a
# time (stopped when the script exits, and by itself after its --for), and lblab's own load
# generator against it. Needs `root`.

out="${OUT:-$root/results/interop}"
rate="${RATE:-400}"
duration="${DURATION:-6}"
warmup="${WARMUP:-3}"
clients="${CLIENTS:-4}"
deadline="${DEADLINE:-1}"
scenarios=("$@")
[[ ${#scenarios[@]} -gt 0 ]] || scenarios=(one-slow gc-pauses heterogeneous)

# Sets `bin`: $LBLAB_BIN, or the project's release build (built quietly at low priority).
find_lblab() {
    bin="${LBLAB_BIN:-}"
    if [[ -z "$bin" ]]; then
        local target_dir="${CARGO_TARGET_DIR:-$root/target}"
        (cd "$root" && nice -n 19 cargo build --release -j1 --quiet) >&2
        bin="$target_dir/release/lblab"
    fi
    [[ -x "$bin" ]] || { echo "error: no lblab binary at $bin" >&2; exit 2; }
}

fleet_pid=""
stop_fleet() {
    if [[ -n "$fleet_pid" ]]; then
        kill "$fleet_pid" 2>/dev/null || true
        wait "$fleet_pid" 2>/dev/null || true
        fleet_pid=""
    fi
}
trap stop_fleet EXIT

# start_fleet SCENARIO_FILE DIR SECONDS: serves the scenario's fleet for at most SECONDS, its
# output in DIR/backend.{txt,err}, and sets `targets` to its addresses.
start_fleet() {
    "$bin" backend "$1" --no-realtime --for "${3}s" > "$2/backend.txt" 2> "$2/backend.err" &
    fleet_pid=$!
    for _ in $(seq 100); do
        grep -q '^--targets ' "$2/backend.txt" 2>/dev/null && break
        sleep 0.1
    done
    targets="$(sed -n 's/^--targets //p' "$2/backend.txt")"
    [[ -n "$targets" ]] || { echo "error: lblab backend did not start: $(cat "$2/backend.err")" >&2; exit 2; }
}

# lblab_loadgen DIR ARGS…: `lblab loadgen ARGS…` into DIR/lblab, its output in
# DIR/lblab-loadgen.{txt,err}; then only the small files the tables read are kept.
lblab_loadgen() {
    local dir=$1
    shift
    "$bin" loadgen "$@" --no-realtime --out "$dir/lblab" \
        > "$dir/lblab-loadgen.txt" 2> "$dir/lblab-loadgen.err" || {
        echo "error: lblab loadgen failed: $(tail -5 "$dir/lblab-loadgen.err")" >&2
        exit 2
    }
    find "$dir/lblab" -type f ! -name 'summary.json' ! -name 'summary.csv' ! -name 'targets.csv' -delete
}

# The group whose share the tables report, per scenario.
slow_of() {
    case "$1" in
        one-slow | one-slow-busy) echo "slow/" ;;
        gc-pauses | gc-pauses-busy) echo "gc/" ;;
        heterogeneous | heterogeneous-busy) echo "old/" ;;
        cold-start) echo "new/" ;;
        crash-restart) echo "crashy/" ;;
        *) echo "slow/" ;;
    esac
}

# begin_scenario STACK SCENARIO SECONDS: sets `file` (the scenario's), `dir` (its results folder
# under $out/STACK, emptied) and `slow` (the group whose share is reported), says what runs, and
# starts the scenario's fleet for the SECONDS its runs take (plus 30 s of start-up; it stops
# after them in any case).
begin_scenario() {
    file="$root/scenarios/$2.toml"
    [[ -f "$file" ]] || { echo "error: no scenario $file" >&2; exit 2; }
    dir="$out/$1/$2"
    rm -rf "$dir"
    mkdir -p "$dir"
    slow="$(slow_of "$2")"
    echo "== $2: rate $rate/s, warm-up ${warmup}s, measured ${duration}s, $clients clients, share of $slow" >&2
    start_fleet "$file" "$dir" "$(($3 + 30))"
}

# run_port STACK CLIENT REPORT SLACK SCRIPT_ARGS…: for each scenario, one fleet, the port's client
# (CLIENT, writing DIR/grpc-STACK-POLICY) with the stack's round_robin, pick_first and
# peak_ewma_experimental, then lblab's round_robin, peak_ewma and tower_p2c_peak_ewma; then
# REPORT writes $out/STACK.md and .csv. SLACK: seconds a client run takes beyond its warm-up and
# measured time (start-up).
run_port() {
    local stack=$1 client=$2 report=$3 slack=$4
    shift 4
    local per_run=$((warmup + duration + slack)) scenario policy
    for scenario in "${scenarios[@]}"; do
        # Six runs (three of the port's client, three of lblab's).
        begin_scenario "$stack" "$scenario" "$((6 * per_run))"
        for policy in round_robin pick_first peak_ewma_experimental; do
            "$client" --targets "$targets" --policy "$policy" --label "$policy" \
                --rate "$rate" --duration "$duration" --warmup "$warmup" --clients "$clients" \
                --deadline "$deadline" --slow "$slow" --out "$dir/grpc-$stack-$policy" >&2
        done
        lblab_loadgen "$dir" "$file" --targets "$targets" --policy round_robin --policy peak_ewma \
            --policy tower_p2c_peak_ewma \
            --rate "$rate" --clients "$clients" --duration "${duration}s" \
            --warmup "${warmup}s" --deadline "${deadline}s"
        grep -E 'client CPU' "$dir/lblab-loadgen.err" >&2 || true
        stop_fleet
    done
    "$report" --dir "$out/$stack" --out "$out/$stack.md" \
        --command "RATE=$rate DURATION=$duration WARMUP=$warmup CLIENTS=$clients scripts/interop-$stack.sh $*" \
        --rate "$rate" --duration "$duration" --warmup "$warmup" --clients "$clients" "${scenarios[@]}"
    echo "wrote $out/$stack.md" >&2
}

