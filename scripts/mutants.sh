#!/usr/bin/env bash
# Mutation testing of the policies with cargo-mutants: every mutant of the given files of policy/
# (the proposal's pick, estimator and sampling by default) is built and must fail the policy
# crate's tests. Results go to results/mutants/<file stem>/ (cargo-mutants' caught.txt, missed.txt,
# timeout.txt, unviable.txt and outcomes.json); a missed mutant is either caught by a new test or
# listed as equivalent, with the reason, in results/mutants/README.md.
#
#   scripts/mutants.sh                                   # p2c, peak_ewma, estimator, least_request
#   scripts/mutants.sh outlier_detection weighted_round_robin
#
# Needs cargo-mutants (`cargo install cargo-mutants --locked`). It mutates the source in place
# (cargo-mutants restores every file after each mutant, also on Ctrl-C) and builds with the
# `mutants` profile (the policy crate unoptimized: about 8 s a mutant on a 2-core machine).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
command -v cargo-mutants >/dev/null || { echo "error: cargo-mutants is not installed: cargo install cargo-mutants --locked" >&2; exit 2; }
files=("$@")
[[ ${#files[@]} -gt 0 ]] || files=(p2c peak_ewma estimator least_request)
git diff --quiet -- policy/ || { echo "error: policy/ has uncommitted changes; commit them first (mutants run in place)" >&2; exit 2; }
for f in "${files[@]}"; do
    out="results/mutants/$f"
    rm -rf "$out"
    mkdir -p "$out"
    echo "== policy/src/$f.rs: $(cargo mutants --list -p lblab-policy -f "policy/src/$f.rs" | wc -l) mutants" >&2
    cargo mutants --in-place --no-shuffle -p lblab-policy -f "policy/src/$f.rs" \
        --profile mutants --timeout 30 --output "$out" > "$out.log" 2>&1 || true
    grep -q "ERROR cargo test failed in an unmutated tree" "$out.log" && {
        echo "error: the tests fail without mutations; see $out.log" >&2
        exit 1
    }
    rm -f "$out.log"
    # proptest records the failing cases it found in mutated code: they are not regressions.
    git checkout -- policy/tests/proptest-regressions/
    # Keep the verdict lists and outcomes; drop the build logs.
    mv "$out/mutants.out"/{caught,missed,timeout,unviable}.txt "$out/" 2>/dev/null || true
    mv "$out/mutants.out/outcomes.json" "$out/" 2>/dev/null || true
    rm -rf "$out/mutants.out"
    echo "   caught $(wc -l < "$out/caught.txt"), missed $(wc -l < "$out/missed.txt"), timeout $(wc -l < "$out/timeout.txt"), unviable $(wc -l < "$out/unviable.txt")" >&2
done
git diff --quiet -- policy/ || { echo "error: policy/ was left changed" >&2; exit 1; }
