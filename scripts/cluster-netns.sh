#!/usr/bin/env bash
# A cluster rehearsed on this machine: the topology `lblab deploy k8s` writes for Kubernetes, as
# separate processes in separate network namespaces, with real kernel TCP between them, then
# compared with the single-process `lblab real` run of the same scenario.
#
#   sudo scripts/cluster-netns.sh [SCENARIO] [--shards N] [--warmup W] [--duration D] [--policy P]…
#
#   SCENARIO    a scenario file or a name in scenarios/ [default: one-slow]
#   --shards N  load-generator shards, each a process in its own namespace [default: 2]; the
#               clients, rate and seeds of each are those of `lblab deploy k8s --shards N`
#   --warmup W, --duration D   per policy [default: 3s, 10s]
#   --policy P  repeatable [default: round_robin and peak_ewma]
#   --p99-tolerance PCT   the relative part of the p99 agreement rule [default: 20, the project's
#               rule; only a debug build's test, whose own cost per call adds tail noise, widens it]
#
# Environment: LBLAB (the binary) [default: target/release/lblab], OUT (results folder)
# [default: lblab-out/<scenario>/netns], LBLAB_NETNS_PREFIX (the first three octets of the /24
# the namespaces' links use) [default: 198.18.26, in the /15 that RFC 2544 sets
# aside for benchmarks].
#
# Topology, none of it in this machine's own namespace: a "switch" namespace holding a bridge;
# a backend namespace (`lblab backend`, the whole fleet, PREFIX.1, ports 50051…); and one
# namespace per load-generator shard (PREFIX.11, .12, …), each joined to the bridge by a veth
# pair created directly inside the two namespaces. Before anything is sent, the script checks that
# the prefix is on none of this machine's own interfaces, that no namespace it made has a default
# route or any interface but its own link and loopback, and that every peer address is reached on
# that link, not through a gateway. The backend's fault timeline and every shard start at one
# `--start-at`, a few seconds ahead; the shards' results are merged with `lblab report --merge`.
# Then `lblab real` runs the same scenario, policies and lengths in one process on loopback, and
# the two are compared: for each policy the p99 must agree by the project's rule (within ±20 % or
# 1 ms, record/src/compare.rs) and the share sent to faulty backends within 0.02 or 20 %.
# Exit 0 when all agree, 1 when one does not, 2 on any other failure, 130 on Ctrl-C.
#
# Every namespace, link and process it made is removed when it ends: on success, on failure and
# on Ctrl-C or SIGTERM (the links go with their namespaces).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"

scenario=one-slow
shards=2
warmup=3s
duration=10s
policies=()
tolerance=20
while (($#)); do
    case "$1" in
        --shards) shards="$2"; shift 2 ;;
        --warmup) warmup="$2"; shift 2 ;;
        --duration) duration="$2"; shift 2 ;;
        --policy) policies+=("$2"); shift 2 ;;
        --p99-tolerance) tolerance="$2"; shift 2 ;;
        -h|--help) sed -n '2,34p' "$0"; exit 0 ;;
        -*) echo "cluster-netns.sh: unknown flag $1 (see --help)" >&2; exit 2 ;;
        *) scenario="$1"; shift ;;
    esac
done
((${#policies[@]})) || policies=(round_robin peak_ewma)
[[ "$shards" =~ ^[1-9][0-9]?$ ]] || { echo "--shards $shards: give 1 to 99" >&2; exit 2; }
[[ "$tolerance" =~ ^[0-9]{1,3}$ ]] || { echo "--p99-tolerance $tolerance: give a whole percent" >&2; exit 2; }

lblab="${LBLAB:-$root/target/release/lblab}"
[[ -x "$lblab" ]] || { echo "no lblab binary at $lblab: cargo build --release, or set LBLAB" >&2; exit 2; }
if [[ "$(id -u)" != 0 ]]; then
    echo "cluster-netns.sh needs root (network namespaces and veth pairs)" >&2
    exit 2
fi
command -v ip >/dev/null || { echo "cluster-netns.sh needs iproute2's ip" >&2; exit 2; }
command -v python3 >/dev/null || { echo "cluster-netns.sh needs python3 to compare" >&2; exit 2; }
prefix="${LBLAB_NETNS_PREFIX:-198.18.26}"
[[ "$prefix" =~ ^[0-9]{1,3}\.[0-9]{1,3}\.[0-9]{1,3}$ ]] || {
    echo "LBLAB_NETNS_PREFIX=$prefix: give three octets, e.g. 198.18.26" >&2; exit 2; }

if [[ -f "$scenario" ]]; then file="$scenario"; else file="scenarios/$scenario.toml"; fi
[[ -f "$file" ]] || { echo "no scenario $scenario (nor $file)" >&2; exit 2; }
stem="$(basename "$file" .toml)"
out="${OUT:-lblab-out/$stem/netns}"
mkdir -p "$out"
out="$(cd "$out" && pwd)"
rm -rf "$out"/policy-* "$out/single" "$out/k8s"

id="lbn$$"
sw="$id-sw"
be="$id-be"
made_ns=()
pids=()

cleanup() {
    local rc=$?
    trap - EXIT INT TERM
    for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
    # Anything else still running in a namespace this script made is its own child's child.
    for ns in "${made_ns[@]}"; do
        for pid in $(ip netns pids "$ns" 2>/dev/null); do kill -TERM "$pid" 2>/dev/null || true; done
    done
    sleep 0.3
    for ns in "${made_ns[@]}"; do
        for pid in $(ip netns pids "$ns" 2>/dev/null); do kill -KILL "$pid" 2>/dev/null || true; done
    done
    for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
    for ns in "${made_ns[@]}"; do ip netns del "$ns" 2>/dev/null || true; done
    local left
    left="$(ip netns list | grep -c "^$id-" || true)"
    if [[ "$left" != 0 ]]; then
        echo "cluster-netns.sh: $left namespaces of $id could not be removed" >&2
        rc=2
    else
        echo "cleaned up: namespaces ${made_ns[*]:-none} and their links and processes removed" >&2
    fi
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# The prefix must be nobody's on this machine: no address and no route of the host in it.
if ip -4 -o addr show | grep -q " $prefix\."; then
    echo "$prefix.0/24 is already on one of this machine's interfaces: set LBLAB_NETNS_PREFIX to an unused /24" >&2
    exit 2
fi

netns() { # name
    ip netns add "$1"
    made_ns+=("$1")
    ip -n "$1" link set lo up
}
netns "$sw"
ip -n "$sw" link add br0 type bridge
ip -n "$sw" link set br0 up
nodes=("$be")
for ((i = 0; i < shards; i++)); do nodes+=("$id-lg$i"); done
addr_of() { # node index: 0 the fleet, i+1 shard i
    if (($1 == 0)); then echo "$prefix.1"; else echo "$prefix.$((10 + $1))"; fi
}
for n in "${!nodes[@]}"; do
    ns="${nodes[$n]}"
    netns "$ns"
    # Both ends made inside their namespaces: the link never exists in this machine's own.
    ip link add eth0 netns "$ns" type veth peer name "p$n" netns "$sw"
    ip -n "$sw" link set "p$n" master br0 up
    ip -n "$ns" addr add "$(addr_of "$n")/24" dev eth0
    ip -n "$ns" link set eth0 up
done

# Nothing routed outside: every namespace has only lo and eth0, no default route, and reaches
# every peer directly on eth0.
for n in "${!nodes[@]}"; do
    ns="${nodes[$n]}"
    links="$(ip -n "$ns" -o link show | awk -F': ' '{print $2}' | sed 's/@.*//' | sort | tr '\n' ' ')"
    [[ "$links" == "eth0 lo " ]] || { echo "$ns has links $links, not just eth0 and lo" >&2; exit 2; }
    [[ -z "$(ip -n "$ns" route show default)" ]] || { echo "$ns has a default route" >&2; exit 2; }
    for m in "${!nodes[@]}"; do
        ((m == n)) && continue
        route="$(ip -n "$ns" route get "$(addr_of "$m")" 2>&1 || true)"
        if [[ "$route" != *"dev eth0"* || "$route" == *" via "* ]]; then
            echo "$ns reaches $(addr_of "$m") by '$route', not directly on its own link" >&2
            exit 2
        fi
    done
done
echo "namespaces: ${made_ns[*]} on $prefix.0/24, nothing routed outside them" >&2

# The shards' clients, rates and seeds, as `lblab deploy k8s` splits them.
"$lblab" deploy k8s "$file" --image unused --shards "$shards" --out "$out/k8s" >/dev/null
mapfile -t loads < <(sed -n 's/^ *\([0-9]*\)) \(clients=[0-9]*\( rate=[0-9.e+-]*\)\? seed=[0-9]*\) ;;$/\2/p' \
    "$out/k8s/loadgen.yaml")
((${#loads[@]} == shards)) || { echo "could not read the shards from $out/k8s/loadgen.yaml" >&2; exit 2; }

policy_flags=()
for p in "${policies[@]}"; do policy_flags+=(--policy "$p"); done
# Per policy: warm-up + duration, plus connecting and draining; the fleet stops on its own after.
secs() { python3 -c '
import re, sys
t = sys.argv[1]; m = re.fullmatch(r"([0-9.]+)(ms|s|m)", t)
if not m: sys.exit("give a duration such as 10s or 500ms, not " + t)
print(float(m[1]) * {"ms": 0.001, "s": 1, "m": 60}[m[2]])' "$1"; }
length="$(python3 -c "print(int($(secs "$warmup") + $(secs "$duration") + 40))")"

# One policy at a time, each against a fresh fleet whose fault timeline starts with it, as
# `lblab real` runs them (a load generator's --start-at is the time 0 of its arrivals too, so one
# long-lived fleet and one --start-at would serve only the first policy).
merged_dirs=()
for k in "${!policies[@]}"; do
    policy="${policies[$k]}"
    dir="$out/policy-$k"
    mkdir -p "$dir"
    # The fleet, in its namespace: every backend of the scenario on PREFIX.1, ports 50051 and up.
    start_at=$(($(date +%s) + 3))
    ip netns exec "$be" "$lblab" backend "$file" --listen "$prefix.1:50051" \
        --start-at "$start_at" --for "${length}s" --no-realtime \
        >"$dir/backend.out" 2>"$dir/backend.err" &
    pids=($!)
    for _ in $(seq 100); do
        grep -q '^--targets ' "$dir/backend.out" 2>/dev/null && break
        sleep 0.1
    done
    targets="$(sed -n 's/^--targets //p' "$dir/backend.out")"
    [[ -n "$targets" ]] || { echo "the fleet did not start:" >&2; cat "$dir/backend.err" >&2; exit 2; }
    ((k > 0)) || echo "fleet in $be: --targets $targets" >&2
    # The shards, each in its namespace, all from the fleet's time 0 (each waits for it after
    # connecting).
    for ((i = 0; i < shards; i++)); do
        eval "${loads[$i]}"
        rate_flag=()
        [[ -n "${rate:-}" ]] && rate_flag=(--rate "$rate")
        ip netns exec "$id-lg$i" "$lblab" loadgen "$file" --targets "$targets" \
            --clients "$clients" "${rate_flag[@]}" --seed "$seed" --start-at "$start_at" \
            --warmup "$warmup" --duration "$duration" --policy "$policy" --no-realtime \
            --out "$dir/shard-$i" >"$dir/shard-$i.out" 2>"$dir/shard-$i.err" &
        pids+=($!)
        unset rate
    done
    failed=0
    for ((i = 0; i < shards; i++)); do
        if ! wait "${pids[$((i + 1))]}"; then
            echo "$policy: shard $i failed:" >&2
            tail -5 "$dir/shard-$i.err" >&2
            failed=1
        fi
    done
    ((failed == 0)) || exit 2
    kill -TERM "${pids[0]}" 2>/dev/null || true
    wait "${pids[0]}" 2>/dev/null || true
    pids=()
    shard_dirs=()
    for ((i = 0; i < shards; i++)); do shard_dirs+=("$dir/shard-$i"); done
    "$lblab" report --merge "${shard_dirs[@]}" --out "$dir/merged" >"$dir/merged.out"
    merged_dirs+=("$dir/merged")
    echo "$policy: merged ${#shard_dirs[@]} shards into $dir/merged" >&2
done

# The same scenario in one process, on loopback, after the namespaced run (never two at once),
# with the runtime threads `lblab backend` and `lblab loadgen` have (two each), unpinned and at
# normal priority as they are.
"$lblab" real "$file" --warmup "$warmup" --duration "$duration" "${policy_flags[@]}" \
    --floor 0s --attempts 1 --fleet-threads 2 --client-threads 2 --no-realtime --no-pin \
    --out "$out/single" >"$out/single.out" 2>"$out/single.err" ||
    { echo "lblab real failed:" >&2; tail -5 "$out/single.err" >&2; exit 2; }

python3 - "$tolerance" "$out/single/summary.json" "$out/compare.csv" "${merged_dirs[@]}" <<'EOF'
import csv, json, sys
tolerance = int(sys.argv.pop(1)) / 100
single = json.load(open(sys.argv[1]))
merged = {"rows": [r for d in sys.argv[3:] for r in json.load(open(d + "/summary.json"))["rows"]]}
rows = {r["policy"]: r for r in single["rows"]}
agree_all = True
out = csv.writer(open(sys.argv[2], "w", newline=""))
out.writerow(["policy", "netns_p99_ms", "single_p99_ms", "p99_agrees", "netns_slow_share",
              "single_slow_share", "share_agrees", "netns_requests", "single_requests"])
print(f"{'policy':<24} {'p99 netns':>10} {'p99 single':>10}  {'to faulty netns':>15} {'single':>8}")
for m in merged["rows"]:
    s = rows.get(m["policy"])
    if s is None:
        print(f"{m['policy']}: not in the single-process run"); agree_all = False; continue
    a, b = m["p99_ms"], s["p99_ms"]
    p99_ok = abs(a - b) <= 1.0 or abs(a - b) <= tolerance * b   # the agreement rule
    x, y = m["slow_share"], s["slow_share"]
    share_ok = abs(x - y) <= max(0.02, 0.2 * max(x, y))
    agree_all &= p99_ok and share_ok
    out.writerow([m["policy"], f"{a:.3f}", f"{b:.3f}", p99_ok, f"{x:.4f}", f"{y:.4f}", share_ok,
                  m["requests"], s["requests"]])
    print(f"{m['policy']:<24} {a:>8.2f}ms {b:>8.2f}ms  {100*x:>14.2f}% {100*y:>7.2f}%  "
          f"{'agree' if p99_ok and share_ok else 'DIFFER'}")
sys.exit(0 if agree_all else 1)
EOF
