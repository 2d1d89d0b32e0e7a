#!/usr/bin/env bash
# A cluster rehearsed on this machine in the shape `lblab deploy k8s` gives it: one process per
# pod, each in a network namespace of its own, with real kernel TCP between them, every peer
# found by name, all released by the start barrier; then compared with the single-process
# `lblab real` run of the same scenario.
#
#   sudo scripts/cluster-netns.sh [SCENARIO] [--shards N] [--rate R] [--warmup W] [--duration D]
#                                 [--policy P]… [--p99-tolerance PCT]
#
#   SCENARIO    a scenario file or a name in scenarios/ [default: one-slow]
#   --shards N  load-generator shards, 1 to 10, each a process in its own namespace [default: 2];
#               the clients, rate and seeds of each are those of `lblab deploy k8s --shards N`
#   --rate R    the scenario's rate in all, calls/s [default: 1000, what this project's 2-core
#               machine holds with every process on it; 0 keeps the scenario's own]
#   --warmup W, --duration D   per policy [default: 3s, 10s]
#   --policy P  repeatable [default: round_robin and peak_ewma]
#   --p99-tolerance PCT   the relative part of the p99 agreement rule [default: 20, the project's
#               rule; only a debug build's test, whose own cost per call adds tail noise, widens it]
#
# Environment: LBLAB (the binary) [default: target/release/lblab], OUT (results folder)
# [default: lblab-out/<scenario>/netns], LBLAB_NETNS_PREFIX (the first three octets of the /24
# the namespaces' links use) [default: 198.18.26, in the /15 that RFC 2544 sets aside for
# benchmarks].
#
# Topology, as the manifests' pods, none of it in this machine's own namespace: a "switch"
# namespace holding a bridge; the starter (`lblab barrier serve`, start.yaml's pod) on PREFIX.2;
# one namespace per backend k of the scenario (`lblab backend --index k` on port 50051, the
# fleet's pod k) on PREFIX.(20+k); one per load-generator shard i (`lblab loadgen`, the load
# generators' index i) on PREFIX.(10+i); each joined to the bridge by a veth pair created directly
# inside the two namespaces. Names, as the cluster's DNS gives them: every namespace's /etc/hosts
# (the /etc/netns/<namespace>/hosts that `ip netns exec` mounts over it, with an nsswitch.conf
# that reads only files and a host.conf with `multi on`, so that a name gives all its addresses)
# maps <name>-start to the starter, <name>-fleet to every backend (the headless Service) and
# <name>-fleet-k.<name>-fleet to backend k (its pod's own name). The shards call
# dns:///<name>-fleet:50051, re-resolved as in the manifests; backends are numbered up the
# prefix in scenario order, so the sorted addresses are the scenario's backends and the share
# sent to faulty ones counts right. Before anything is sent, the script checks that the prefix is
# on none of this machine's own interfaces, that no namespace it made has a default route or any
# interface but its own link and loopback, that every peer is reached on that link, not through a
# gateway, and that the names resolve to those addresses in every namespace.
#
# One policy at a time, each against a fresh fleet, as the manifests' slots: every backend and
# shard checks in with the starter (`lblab barrier join <name>-start:50050`) and is released
# with one start a few seconds ahead, the backends' fault timeline's time 0 and the shards'
# start; the shards' results are merged with `lblab report --merge`. Then `lblab real` runs the
# same scenario, rate, policies and lengths in one process on loopback, and the two are
# compared: for each policy the p99 must agree by the project's rule (within ±20 % or 1 ms,
# record/src/compare.rs) and the share sent to faulty backends within 0.02 or 20 %. Each verdict
# is printed with the incidents of both runs beside it (the harness's own overload, late
# dispatch, busy machine and connection records, from the runs' summary.json), which say when
# a difference is the machine's rather than the policy's.
# Exit 0 when all agree, 1 when one does not, 2 on any other failure, 130 on Ctrl-C.
#
# Every namespace, link, /etc/netns entry and process it made is removed when it ends: on
# success, on failure and on Ctrl-C or SIGTERM (the links go with their namespaces).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"

scenario=one-slow
shards=2
total_rate=1000
warmup=3s
duration=10s
policies=()
tolerance=20
while (($#)); do
    case "$1" in
        --shards) shards="$2"; shift 2 ;;
        --rate) total_rate="$2"; shift 2 ;;
        --warmup) warmup="$2"; shift 2 ;;
        --duration) duration="$2"; shift 2 ;;
        --policy) policies+=("$2"); shift 2 ;;
        --p99-tolerance) tolerance="$2"; shift 2 ;;
        -h|--help) sed -n '2,58p' "$0"; exit 0 ;;
        -*) echo "cluster-netns.sh: unknown flag $1 (see --help)" >&2; exit 2 ;;
        *) scenario="$1"; shift ;;
    esac
done
((${#policies[@]})) || policies=(round_robin peak_ewma)
[[ "$shards" =~ ^([1-9]|10)$ ]] || { echo "--shards $shards: give 1 to 10" >&2; exit 2; }
[[ "$total_rate" =~ ^[0-9]{1,6}$ ]] || { echo "--rate $total_rate: give whole calls/s (0: the scenario's)" >&2; exit 2; }
[[ "$tolerance" =~ ^[0-9]{1,3}$ ]] || { echo "--p99-tolerance $tolerance: give a whole percent" >&2; exit 2; }

lblab="${LBLAB:-$root/target/release/lblab}"
[[ -x "$lblab" ]] || { echo "no lblab binary at $lblab: cargo build --release, or set LBLAB" >&2; exit 2; }
if [[ "$(id -u)" != 0 ]]; then
    echo "cluster-netns.sh needs root (network namespaces, veth pairs and /etc/netns)" >&2
    exit 2
fi
command -v ip >/dev/null || { echo "cluster-netns.sh needs iproute2's ip" >&2; exit 2; }
command -v python3 >/dev/null || { echo "cluster-netns.sh needs python3 to compare" >&2; exit 2; }
command -v getent >/dev/null || { echo "cluster-netns.sh needs getent to check the names" >&2; exit 2; }
prefix="${LBLAB_NETNS_PREFIX:-198.18.26}"
[[ "$prefix" =~ ^[0-9]{1,3}\.[0-9]{1,3}\.[0-9]{1,3}$ ]] || {
    echo "LBLAB_NETNS_PREFIX=$prefix: give three octets, e.g. 198.18.26" >&2; exit 2; }

if [[ -f "$scenario" ]]; then given="$scenario"; else given="scenarios/$scenario.toml"; fi
[[ -f "$given" ]] || { echo "no scenario $scenario (nor $given)" >&2; exit 2; }
stem="$(basename "$given" .toml)"
out="${OUT:-lblab-out/$stem/netns}"
mkdir -p "$out"
out="$(cd "$out" && pwd)"
rm -rf "$out"/policy-* "$out/single" "$out/k8s" "$out/scenario.toml"

# The scenario at the rehearsal's rate (its [workload] table's rate replaced): every process
# here, and `lblab real` after them, runs this copy.
file="$out/scenario.toml"
python3 - "$given" "$file" "$total_rate" <<'EOF'
import re, sys
src, dst, rate = sys.argv[1], sys.argv[2], int(sys.argv[3])
text = open(src).read()
if rate > 0:
    table = re.search(r"(?ms)^\[workload\][^\n]*\n(.*?)(?=^\[|\Z)", text)
    line = table and re.search(r"(?m)^(\s*rate\s*=\s*)[^#\n]*", table.group(1))
    if not line:
        sys.exit(f"{src}: no rate in [workload] to replace (a closed loop?): give --rate 0")
    at = table.start(1) + line.start()
    text = text[:at] + line.group(1) + str(rate) + " " + text[table.start(1) + line.end():]
open(dst, "w").write(text)
EOF

id="lbn$$"
name="$id"
sw="$id-sw"
st="$id-st"
made_ns=()
made_etc=()
made_netns_dir=0
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
    for dir in "${made_etc[@]}"; do rm -rf -- "$dir"; done
    ((made_netns_dir == 0)) || rmdir /etc/netns 2>/dev/null || true
    local left etc_left
    left="$(ip netns list | grep -c "^$id-" || true)"
    etc_left=0
    [[ ! -d /etc/netns ]] || etc_left="$(find /etc/netns -maxdepth 1 -name "$id-*" | wc -l)"
    if [[ "$left" != 0 || "$etc_left" != 0 ]]; then
        echo "cluster-netns.sh: $left namespaces and $etc_left /etc/netns entries of $id could not be removed" >&2
        rc=2
    else
        echo "cleaned up: ${#made_ns[@]} namespaces, their links, /etc/netns entries and processes removed" >&2
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

# The shards' clients, rates and seeds, as `lblab deploy k8s` splits them, and the fleet's size.
"$lblab" deploy k8s "$file" --image unused --shards "$shards" --name "$name" --out "$out/k8s" >/dev/null
mapfile -t loads < <(sed -n 's/^ *\([0-9]*\)) \(clients=[0-9]*\( rate=[0-9.e+-]*\)\? seed=[0-9]*\) ;;$/\2/p' \
    "$out/k8s/loadgen.yaml")
((${#loads[@]} == shards)) || { echo "could not read the shards from $out/k8s/loadgen.yaml" >&2; exit 2; }
backends="$(sed -n 's/^ *completions: \([0-9]*\)$/\1/p' "$out/k8s/fleet.yaml" | head -1)"
[[ "$backends" =~ ^[0-9]+$ ]] || { echo "could not read the fleet's size from $out/k8s/fleet.yaml" >&2; exit 2; }
((backends <= 230)) || { echo "$stem has $backends backends; the rehearsal's /24 holds 230" >&2; exit 2; }

netns() { # name
    ip netns add "$1"
    made_ns+=("$1")
    ip -n "$1" link set lo up
}
netns "$sw"
ip -n "$sw" link add br0 type bridge
ip -n "$sw" link set br0 up
# Every node: the starter, the shards, the backends; its namespace and address.
nodes=("$st")
addrs=("$prefix.2")
for ((i = 0; i < shards; i++)); do nodes+=("$id-lg$i"); addrs+=("$prefix.$((10 + i))"); done
for ((k = 0; k < backends; k++)); do nodes+=("$id-b$k"); addrs+=("$prefix.$((20 + k))"); done
for n in "${!nodes[@]}"; do
    ns="${nodes[$n]}"
    netns "$ns"
    # Both ends made inside their namespaces: the link never exists in this machine's own.
    ip link add eth0 netns "$ns" type veth peer name "p$n" netns "$sw"
    ip -n "$sw" link set "p$n" master br0 up
    ip -n "$ns" addr add "${addrs[$n]}/24" dev eth0
    ip -n "$ns" link set eth0 up
done

# Nothing routed outside: every namespace has only lo and eth0, no default route, and reaches
# every peer directly on eth0 (the starter and each backend reach every shard and the starter;
# each shard every node).
for n in "${!nodes[@]}"; do
    ns="${nodes[$n]}"
    links="$(ip -n "$ns" -o link show | awk -F': ' '{print $2}' | sed 's/@.*//' | sort | tr '\n' ' ')"
    [[ "$links" == "eth0 lo " ]] || { echo "$ns has links $links, not just eth0 and lo" >&2; exit 2; }
    [[ -z "$(ip -n "$ns" route show default)" ]] || { echo "$ns has a default route" >&2; exit 2; }
    for m in "${!nodes[@]}"; do
        ((m == n)) && continue
        ((n > shards && m > shards)) && continue # backend to backend: no traffic
        route="$(ip -n "$ns" route get "${addrs[$m]}" 2>&1 || true)"
        if [[ "$route" != *"dev eth0"* || "$route" == *" via "* ]]; then
            echo "$ns reaches ${addrs[$m]} by '$route', not directly on its own link" >&2
            exit 2
        fi
    done
done

# The names, as the cluster's DNS serves them, in every namespace's own /etc.
[[ -d /etc/netns ]] || { mkdir /etc/netns; made_netns_dir=1; }
hosts="127.0.0.1 localhost
${addrs[0]} $name-start"
for ((k = 0; k < backends; k++)); do
    a="$prefix.$((20 + k))"
    hosts+="
$a $name-fleet
$a $name-fleet-$k.$name-fleet"
done
for ns in "${nodes[@]}"; do
    dir="/etc/netns/$ns"
    mkdir "$dir"
    made_etc+=("$dir")
    printf '%s\n' "$hosts" >"$dir/hosts"
    # Files only (no DNS server is reachable, nor asked), and every address of a name.
    [[ ! -e /etc/nsswitch.conf ]] || printf 'hosts: files\n' >"$dir/nsswitch.conf"
    [[ ! -e /etc/host.conf ]] || printf 'multi on\n' >"$dir/host.conf"
done
want="$(for ((k = 0; k < backends; k++)); do echo "$prefix.$((20 + k))"; done | sort)"
for ((i = 0; i < shards; i++)); do
    got="$(ip netns exec "$id-lg$i" getent ahostsv4 "$name-fleet" | awk '{print $1}' | sort -u)"
    [[ "$got" == "$want" ]] || { echo "$name-fleet resolves in $id-lg$i to $(echo $got), not every backend" >&2; exit 2; }
    got="$(ip netns exec "$id-lg$i" getent ahostsv4 "$name-fleet-$((backends - 1)).$name-fleet" | awk '{print $1}' | sort -u)"
    [[ "$got" == "$prefix.$((19 + backends))" ]] || { echo "the last backend's own name resolves in $id-lg$i to $got" >&2; exit 2; }
done
for ns in "${nodes[@]:1}"; do
    got="$(ip netns exec "$ns" getent ahostsv4 "$name-start" | awk '{print $1}' | sort -u)"
    [[ "$got" == "${addrs[0]}" ]] || { echo "$name-start resolves in $ns to $got, not the starter" >&2; exit 2; }
done
echo "namespaces: ${#made_ns[@]} (a starter, $shards shards, $backends backends, a switch) on $prefix.0/24, nothing routed outside them; $name-fleet resolves to all $backends backends in every shard's namespace" >&2

policy_flags=()
for p in "${policies[@]}"; do policy_flags+=(--policy "$p"); done
secs() { python3 -c '
import re, sys
t = sys.argv[1]; m = re.fullmatch(r"([0-9.]+)(ms|s|m)", t)
if not m: sys.exit("give a duration such as 10s or 500ms, not " + t)
print(float(m[1]) * {"ms": 0.001, "s": 1, "m": 60}[m[2]])' "$1"; }
# The start barrier releases every process this long after the last checks in.
margin=4
# A backend serves from its release: the margin, the run, and its drain.
length="$(python3 -c "print(int($margin + $(secs "$warmup") + $(secs "$duration") + 30))")"

# One pod's process in its namespace: checks in with the starter as ID, then runs what follows
# LEAD seconds before the start it is given (@START@ in its arguments): a backend at once, as it
# listens before its slot in the manifests, a shard 2 s before it (the manifests' load
# generators connect in the 5 s before theirs). It runs in the background, its process id in
# $! (`ip netns exec` and then the command replace the shell that checks in, so that a signal
# to that id reaches the command itself).
pod() { # namespace id lead -- command…
    local ns="$1" who="$2" lead="$3"
    shift 4
    ip netns exec "$ns" bash -c '
        lblab="$1" starter="$2" who="$3" since="$4" lead="$5"; shift 5
        start="$("$lblab" barrier join "$starter" --id "$who" --start-at "$since" --wait 60s)"
        now="$(date +%s)"
        if ((start - lead > now)); then sleep "$((start - lead - now))"; fi
        args=(); for a in "$@"; do args+=("${a//@START@/$start}"); done
        exec "${args[@]}"' _ "$lblab" "$name-start:50050" "$who" "$(date +%s)" "$lead" "$@" &
}

merged_dirs=()
for k in "${!policies[@]}"; do
    policy="${policies[$k]}"
    dir="$out/policy-$k"
    mkdir -p "$dir"
    # A fresh starter, fleet and shards for each policy, as the manifests' slots.
    ip netns exec "$st" "$lblab" barrier serve --listen "${addrs[0]}:50050" \
        --expect "fleet=$backends" --expect "loadgen=$shards" --start-at "$(date +%s)" \
        --margin "${margin}s" --wait 60s >"$dir/start.out" 2>"$dir/start.err" &
    starter=$!
    pids=("$starter")
    for ((b = 0; b < backends; b++)); do
        pod "$id-b$b" "fleet-$b" "$margin" -- "$lblab" backend "$file" --index "$b" \
            --listen "$prefix.$((20 + b)):50051" --start-at @START@ --for "${length}s" --no-realtime \
            >"$dir/backend-$b.out" 2>"$dir/backend-$b.err"
        pids+=($!)
    done
    shard_pids=()
    for ((i = 0; i < shards; i++)); do
        eval "${loads[$i]}"
        rate_flag=()
        [[ -n "${rate:-}" ]] && rate_flag=(--rate "$rate")
        pod "$id-lg$i" "loadgen-$i" 2 -- "$lblab" loadgen "$file" \
            --targets "dns:///$name-fleet:50051" --clients "$clients" "${rate_flag[@]}" \
            --seed "$seed" --start-at @START@ --warmup "$warmup" --duration "$duration" \
            --policy="$policy" --no-realtime --out "$dir/shard-$i" \
            >"$dir/shard-$i.out" 2>"$dir/shard-$i.err"
        shard_pids+=($!)
        pids+=($!)
        unset rate
    done
    if ! wait "$starter"; then
        echo "$policy: the start barrier did not release every process:" >&2
        tail -3 "$dir/start.err" >&2
        exit 2
    fi
    ((k > 0)) || echo "$(tail -1 "$dir/start.err")" >&2
    failed=0
    for ((i = 0; i < shards; i++)); do
        if ! wait "${shard_pids[$i]}"; then
            echo "$policy: shard $i failed:" >&2
            tail -5 "$dir/shard-$i.err" >&2
            failed=1
        fi
    done
    ((failed == 0)) || exit 2
    for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
    for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
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
import csv, json, re, sys
tolerance = int(sys.argv.pop(1)) / 100
single = json.load(open(sys.argv[1]))
merged = [json.load(open(d + "/summary.json")) for d in sys.argv[3:]]
rows = {r["policy"]: r for r in single["rows"]}

def incidents(summary, policy):
    """The harness's own incidents of `policy`'s run: one line each."""
    out = []
    for i in summary.get("incidents", []):
        if i["policy"] != policy:
            continue
        where = f", backend {i['backend']}" if i.get("backend") is not None else ""
        # A merged run's incident names its shard's folder: the shard is enough here.
        detail = re.sub(r"^\S*/(shard-\d+): ", r"\1: ", i["detail"])
        out.append(f"{i['kind']} ×{i['count']} at {i['start_s']:.1f}–{i['end_s']:.1f} s{where}: "
                   f"{detail}")
    return out

agree_all = True
out = csv.writer(open(sys.argv[2], "w", newline=""))
out.writerow(["policy", "netns_p99_ms", "single_p99_ms", "p99_agrees", "netns_slow_share",
              "single_slow_share", "share_agrees", "netns_requests", "single_requests",
              "netns_incidents", "single_incidents"])
print(f"{'policy':<24} {'p99 netns':>10} {'p99 single':>10}  {'to faulty netns':>15} {'single':>8}")
for summary in merged:
    for m in summary["rows"]:
        s = rows.get(m["policy"])
        if s is None:
            print(f"{m['policy']}: not in the single-process run"); agree_all = False; continue
        a, b = m["p99_ms"], s["p99_ms"]
        p99_ok = abs(a - b) <= 1.0 or abs(a - b) <= tolerance * b   # the agreement rule
        x, y = m["slow_share"], s["slow_share"]
        share_ok = abs(x - y) <= max(0.02, 0.2 * max(x, y))
        agree_all &= p99_ok and share_ok
        ours, theirs = incidents(summary, m["policy"]), incidents(single, m["policy"])
        out.writerow([m["policy"], f"{a:.3f}", f"{b:.3f}", p99_ok, f"{x:.4f}", f"{y:.4f}",
                      share_ok, m["requests"], s["requests"], len(ours), len(theirs)])
        print(f"{m['policy']:<24} {a:>8.2f}ms {b:>8.2f}ms  {100*x:>14.2f}% {100*y:>7.2f}%  "
              f"{'agree' if p99_ok and share_ok else 'DIFFER'}")
        for side, lines in (("netns", ours), ("single", theirs)):
            print(f"    incidents, {side}: {len(lines) or 'none'}")
            for line in lines:
                print(f"      {line}")
sys.exit(0 if agree_all else 1)
EOF
