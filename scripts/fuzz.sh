#!/usr/bin/env bash
# Coverage-guided fuzzing of lblab's input parsers and policy state machines (cargo-fuzz, libFuzzer).
#
#   scripts/fuzz.sh [SECONDS_PER_TARGET] [TARGET...]     default: 60 s for each of the targets
#
# Targets (fuzz/fuzz_targets/):
#   scenario        Scenario::parse on arbitrary text; accepted scenarios are runnable, errors render
#   service_config  parse_service_config_with on arbitrary text; accepted configs round-trip
#   policy_ops      random operation sequences against every policy (outlier detection around each
#                   child): no panic, no pick of a non-READY endpoint, no NaN cost
#   sim_run         accepted scenarios (small ones) simulated under each of their policies: no
#                   engine panic, every request accounted for
#
# Works on the stable toolchain: `--sanitizer none` (AddressSanitizer needs nightly; lblab is safe
# Rust, so what fuzzing can find is panics, overflows, aborts, hangs and runaway memory, all of
# which libFuzzer catches without it). Installs cargo-fuzz from crates.io if missing. The corpus
# starts from fuzz/seeds/ (the canonical scenarios, the README's `lblab check` examples, every
# scenario's policy configs) and grows in fuzz/corpus/ (not committed). A crash leaves its input in
# fuzz/artifacts/<target>/ and makes this script exit 1; reproduce it with
#   cd fuzz && cargo fuzz run --sanitizer none <target> artifacts/<target>/<file>
# Each target's executions are printed at the end ("Done N runs in S second(s)" from libFuzzer).
set -euo pipefail
cd "$(dirname "$0")/../fuzz"

secs=${1:-60}
shift || true
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
    targets=(scenario service_config policy_ops sim_run)
fi

if ! command -v cargo-fuzz >/dev/null 2>&1; then
    cargo install cargo-fuzz --locked
fi
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$PWD/target}

declare -A max_len=([scenario]=8192 [service_config]=2048 [policy_ops]=4096 [sim_run]=8192)
mkdir -p logs
failed=()
summary=()
for t in "${targets[@]}"; do
    mkdir -p "corpus/$t"
    if [ -d "seeds/$t" ]; then
        cp -n seeds/"$t"/* "corpus/$t/" 2>/dev/null || true
    fi
    echo "== fuzzing $t for ${secs}s"
    # -timeout: one input taking over 10 s is a hang; -rss_limit_mb: runaway memory is a crash.
    if cargo fuzz run --sanitizer none "$t" "corpus/$t" -- \
        -max_total_time="$secs" -max_len="${max_len[$t]:-4096}" -timeout=10 -rss_limit_mb=2048 \
        -print_final_stats=1 >"logs/$t.log" 2>&1; then
        status=ok
    else
        status=CRASH
        failed+=("$t")
        grep -E "panicked|ERROR|Test unit written" "logs/$t.log" | head -5 || true
    fi
    runs=$(grep -Eo "Done [0-9]+ runs in [0-9]+ second" "logs/$t.log" | tail -1 || true)
    summary+=("$t: $status; ${runs:-no final count (see fuzz/logs/$t.log)}")
done
echo "== summary"
printf '%s\n' "${summary[@]}"
if [ ${#failed[@]} -gt 0 ]; then
    echo "crashes in: ${failed[*]} (inputs in fuzz/artifacts/)"
    exit 1
fi
