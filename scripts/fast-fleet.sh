# Sourced by the load generator's cost scripts (loadgen-vs-minimal.sh, loadgen-vs-h2load.sh):
# fast_fleet LBLAB WORK CLIENTS BACKENDS WORKERS starts `lblab backend` with BACKENDS backends that
# answer at once (--no-realtime, for at most 15 minutes), writes the scenario to WORK/fast.toml
# (CLIENTS clients, round_robin), and sets `backend_pid` and `targets` (host:port,...); the caller
# kills backend_pid on exit.
fast_fleet() {
    local lblab=$1 work=$2 clients=$3 backends=$4 workers=$5
    cat > "$work/fast.toml" << TOML
name = "fast"
seed = 1
[workload]
clients = $clients
rate = 2000
warmup = "1s"
duration = "10s"
deadline = "1s"
[[fleet]]
name = "main"
count = $backends
workers = $workers
service_time = { dist = "constant", value = "0ms" }
[[policies]]
name = "round_robin"
config = '{"loadBalancingConfig":[{"round_robin":{}}]}'
TOML
    "$lblab" backend "$work/fast.toml" --no-realtime --for 900s > "$work/backend.txt" 2>&1 &
    backend_pid=$!
    for _ in $(seq 50); do grep -q -- '--targets' "$work/backend.txt" && break; sleep 0.1; done
    targets="$(grep -- '--targets' "$work/backend.txt" | awk '{print $2}')"
    [[ -n "$targets" ]] || { echo "error: the fleet did not start" >&2; exit 2; }
}
