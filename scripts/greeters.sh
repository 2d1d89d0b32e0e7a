# Sourced (from the project root) by the scripts that measure lblab against a service nobody here
# wrote: Python grpcio greeters (interop/python/greeter_server.py) on loopback. Builds lblab and
# sets $bin; installs the interop environment; defines
#   start_greeter DELAY_MS FILE   start one greeter sleeping DELAY_MS per call, its output in FILE
#   greeter_addr FILE             wait until it listens; print its host:port
#   stop_greeters                 stop every greeter started
cargo build --release --quiet
bin="${CARGO_TARGET_DIR:-target}/release/lblab"
python=$(scripts/interop-env.sh | tail -1)
gen="$(dirname "$(dirname "$python")")/gen"
pids=()

start_greeter() {
    : >"$2"
    # Its stdin stays open (it stops when stdin closes); $! is the server itself.
    PYTHONPATH="$gen" "$python" interop/python/greeter_server.py --port 0 --delay-ms "$1" \
        --workers 8 >"$2" 2>&1 < <(sleep 7200) &
    pids+=($!)
}

greeter_addr() {
    until grep -q 'listening on' "$1"; do sleep 0.1; done
    sed -n 's/^listening on //p' "$1"
}

stop_greeters() {
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
    pids=()
}
