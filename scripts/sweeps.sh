#!/usr/bin/env bash
# Regenerates the committed sweeps over the scenario space in results/sweeps/: each varies one
# thing about one-slow (20 backends, one 10x slower, 2,000 req/s, 50 s measured after 10 s of
# warm-up) and runs every policy at every point over several seeds, in the simulator at full length.
# Each folder gets sweep.csv (medians and 95 % intervals), runs.csv (every run), sweep.json and the
# charts; results/sweeps/README.md says what each shows.
#
#   scripts/sweeps.sh                # all of them (about five minutes on 2 cores)
#   scripts/sweeps.sh sampling clients   # only these
#   SEEDS=20 scripts/sweeps.sh       # more seeds (default 10; the utilization sweep uses half)
set -euo pipefail
cd "$(dirname "$0")/.."

cargo build --release --quiet
bin="${CARGO_TARGET_DIR:-target}/release/lblab"
seeds=${SEEDS:-10}
out=results/sweeps

# A fleet of n backends (n-1 healthy, 1 slow) at 100 req/s per backend, n = 3 to 100.
fleet_points=""
for n in 3 4 5 6 8 10 15 20 30 50 75 100; do
    fleet_points+="${fleet_points:+,}$((n - 1)):$((100 * n))"
done

sweep() {
    local name=$1; shift
    if [ ${#only[@]} -gt 0 ] && [[ ! " ${only[*]} " =~ " $name " ]]; then return; fi
    echo "== $name"
    "$bin" sweep "$@" --out "$out/$name"
}
only=("$@")

# The sampling finding: distinct draws against A48's with-replacement draw, by fleet size.
sweep sampling scenarios/sweeps/one-slow-sampling.toml \
    --vary "fleet.main.count,workload.rate=$fleet_points" --x backends --seeds "$seeds"
# Fleet size under every canonical policy.
sweep fleet-size scenarios/one-slow.toml \
    --vary "fleet.main.count,workload.rate=$fleet_points" --x backends --seeds "$seeds"
# Load: 5 % to 90 % of the fleet's capacity at full speed (the slow backend has a tenth of its
# share of it, so a policy that keeps sending it 5 % overloads it from 10 % utilization on).
sweep utilization scenarios/one-slow.toml \
    --vary workload.utilization=0.05,0.1,0.2,0.3,0.4,0.5,0.6,0.7,0.8,0.9 --seeds $(( (seeds + 1) / 2 ))
# How slow the slow backend is: mild slowdowns are the hard case for a latency-aware policy.
sweep slowdown scenarios/one-slow.toml \
    --vary faults.0.factor=1.2,1.5,2,3,5,10,20,50 --seeds "$seeds"
# How many backends are slow: 1 % to 50 % of 100 backends at 100 req/s each.
sweep slow-share scenarios/one-slow.toml \
    --vary "fleet.main.count,fleet.slow.count,workload.rate=99:1:10000,95:5:10000,90:10:10000,80:20:10000,70:30:10000,50:50:10000" \
    --x faulty_share --seeds $(( (seeds + 1) / 2 ))
# How many clients share the fleet, each with its own policy instance: the herd measure.
sweep clients scenarios/one-slow.toml \
    --vary workload.clients=1,2,5,10,20,50,100,200 --seeds "$seeds"
