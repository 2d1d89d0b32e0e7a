#!/usr/bin/env bash
# The return of a healed backend over real gRPC at several numbers of client channels: the
# recovery-clients design scenario (one backend of 20 is 10x slower until 30 s, then heals; 2,000
# calls/s in all) with 1, 10 and 50 client channels, the default beside Finagle's algorithm, one
# run each, 12 s of warm-up and 108 s measured (90 s after the heal). Writes
# results/design/real/recovery-c<N>/ (the usual real run folders), which scripts/design_report.py
# reads into results/design/README.md's real table (seconds until the healed backend carries 80 %
# of its fair share). About 13 minutes on 2 cores.
#
#   scripts/recovery-real.sh
#   CLIENTS="1 10" scripts/recovery-real.sh
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --quiet
bin="${CARGO_TARGET_DIR:-target}/release/lblab"
out=${OUT:-results/design/real}
scenarios=$(mktemp -d)
trap 'rm -rf "$scenarios"' EXIT
for n in ${CLIENTS:-1 10 50}; do
    file="$scenarios/recovery-c$n.toml"
    sed -e "s/^name = \"recovery-clients\"/name = \"recovery-c$n\"/" \
        -e "s/^clients = 4$/clients = $n/" \
        -e 's/^duration = "198s"$/duration = "108s"/' \
        scenarios/design/recovery-clients.toml > "$file"
    grep -q "^clients = $n$" "$file" && grep -q '^duration = "108s"$' "$file" || {
        echo "recovery-real.sh: scenarios/design/recovery-clients.toml changed shape; update the sed" >&2
        exit 2
    }
    echo "== recovery, $n client channels"
    "$bin" real "$file" --policy peak_ewma --policy finagle_peak_ewma --out "$out/recovery-c$n"
done
