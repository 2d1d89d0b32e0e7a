#!/usr/bin/env bash
# Simulates every canonical scenario (scenarios/*.toml, the scenario's own seed) with the lblab
# binary BIN and writes each result folder to OUT/<scenario>/. Two such trees from two builds
# compare with `diff -r` (or `cmp` per file): a change that is meant to leave the simulator's
# behaviour alone must leave every byte the same: summaries, CSVs, hlogs and charts.
#
#   scripts/sim-outputs.sh target/release/lblab /tmp/after
#   diff -r /tmp/before /tmp/after && echo identical
set -euo pipefail
bin=${1:?usage: scripts/sim-outputs.sh BIN OUT}
out=${2:?usage: scripts/sim-outputs.sh BIN OUT}
cd "$(dirname "$0")/.."
mkdir -p "$out"
for f in scenarios/*.toml; do
    stem=$(basename "$f" .toml)
    "$bin" sim "$f" --out "$out/$stem" --jobs 2 > "$out/$stem.txt"
done
echo "simulated $(ls scenarios/*.toml | wc -l) scenarios into $out"
