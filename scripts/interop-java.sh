#!/usr/bin/env bash
# grpc-java beside lblab's own client on the same fleet: installs Debian's grpc-java 1.41 and the
# jars it needs (libgrpc-java, libnetty-java, libperfmark-java, libgoogle-gson-java,
# libguava-java; a JDK if javac is missing) when missing, builds interop/java with javac against
# those jars (the classpath is listed below) under the Cargo target folder, runs the port's tests
# (a plain main: unit tests, the replay of the conformance vectors, the port inside grpc-java),
# and for each scenario starts `lblab backend SCENARIO` once and runs against it, one after the
# other at the same rate:
#   grpc-java round_robin, grpc-java pick_first, grpc-java peak_ewma_experimental (interop/java's
#   port), then `lblab loadgen` with lblab's round_robin, peak_ewma and tower_p2c_peak_ewma;
# then writes results/interop/java.md and java.csv (tables, agreement) and the raw files under
# results/interop/java/<scenario>/.
#
#   scripts/interop-java.sh                      # one-slow, gc-pauses, heterogeneous
#   scripts/interop-java.sh one-slow             # just one
#   LBLAB_BIN=/path/to/lblab RATE=400 DURATION=8 WARMUP=3 scripts/interop-java.sh
#   OUT=/tmp/somewhere scripts/interop-java.sh   # raw files and java.md elsewhere
#   scripts/interop-java.sh --install            # only install and build; prints the client launcher
#   scripts/interop-java.sh --test               # install, build and run the port's tests
#   LBLAB_JAVA_OPTS='-XX:+UseSerialGC' scripts/interop-java.sh    # JVM options of the clients
#   LBLAB_PEAK_EWMA_TRACE=1 target/interop-java/bin/client ...    # every RTT sample to stderr
#
# cold-start and crash-restart take their fault at 20 s: give them WARMUP and DURATION that span
# it (e.g. WARMUP=15 DURATION=25). Only loopback; every process it starts stops by itself (the
# fleet with --for) and is also stopped when the script exits.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
java_dir="$root/interop/java"
# shellcheck source=scripts/interop-fleet.sh
source "$root/scripts/interop-fleet.sh"

# The classpath, explicitly: Debian's jars under /usr/share/java (versionless links).
jars=/usr/share/java
compile_jars=(grpc-api grpc-core grpc-context grpc-netty grpc-stub guava jsr305 error_prone_annotations)
runtime_jars=(grpc-api grpc-core grpc-context grpc-netty grpc-stub guava perfmark-api gson
    netty-buffer netty-codec netty-codec-http netty-codec-http2 netty-codec-socks netty-common
    netty-handler netty-handler-proxy netty-resolver netty-transport)
packages=(libgrpc-java libnetty-java libperfmark-java libgoogle-gson-java libguava-java)
cp_of() { local IFS=:; local out=(); for j in "$@"; do out+=("$jars/$j.jar"); done; echo "${out[*]}"; }

installed() {
    command -v javac >/dev/null && command -v java >/dev/null || return 1
    [[ -f "$jars/grpc-api-1.41.3.jar" ]] || return 1
    local j
    for j in "${compile_jars[@]}" "${runtime_jars[@]}"; do
        [[ "$j" == jsr305 || "$j" == error_prone_annotations ]] && continue
        [[ -f "$jars/$j.jar" ]] || return 1
    done
}
if ! installed; then
    if ! command -v apt-get >/dev/null; then
        echo "error: grpc-java interop needs Debian's ${packages[*]} (grpc-java 1.41.3, jars under" \
            "$jars) and a JDK, and apt-get is not available to install them" >&2
        exit 2
    fi
    sudo=""
    [[ "$(id -u)" == 0 ]] || sudo="sudo -n"
    want=("${packages[@]}")
    command -v javac >/dev/null || want+=(default-jdk-headless)
    echo "installing ${want[*]} from Debian's registry" >&2
    export DEBIAN_FRONTEND=noninteractive
    $sudo apt-get install -y --no-install-recommends "${want[@]}" >&2 \
        || { $sudo apt-get update >&2 && $sudo apt-get install -y --no-install-recommends "${want[@]}" >&2; } \
        || { echo "error: apt-get install ${want[*]} failed (root or sudo needed)" >&2; exit 2; }
    installed || { echo "error: javac, java or a jar under $jars missing after the install" >&2; exit 2; }
fi

# Build outputs under the Cargo target folder (or $LBLAB_JAVA_PREFIX); nothing in the checkout.
prefix="${LBLAB_JAVA_PREFIX:-${CARGO_TARGET_DIR:-$root/target}/interop-java}"
mkdir -p "$prefix/bin"
prefix="$(cd "$prefix" && pwd)"
compile_cp="$(cp_of "${compile_jars[@]}")"
runtime_cp="$(cp_of "${runtime_jars[@]}")"
# One builder at a time (tests may call this concurrently); rebuilt when a source is newer.
exec 8>"$prefix.lock"
flock 8
stamp="$prefix/classes/.built"
if [[ ! -f "$stamp" || -n "$(find "$java_dir" "$0" -newer "$stamp" -type f -print -quit)" ]]; then
    rm -rf "$prefix/classes" "$prefix/test-classes"
    mkdir -p "$prefix/classes" "$prefix/test-classes"
    mapfile -t srcs < <(find "$java_dir/src" -name '*.java' | sort)
    mapfile -t tests < <(find "$java_dir/test" -name '*.java' | sort)
    javac -nowarn -encoding UTF-8 -d "$prefix/classes" -cp "$compile_cp" "${srcs[@]}" >&2
    cp -r "$java_dir/resources/." "$prefix/classes/"
    javac -nowarn -encoding UTF-8 -d "$prefix/test-classes" -cp "$prefix/classes:$compile_cp" "${tests[@]}" >&2
    for main in client:lblab.client.Client report:lblab.report.Report; do
        cat > "$prefix/bin/${main%%:*}" <<LAUNCHER
#!/bin/sh
# shellcheck disable=SC2086
exec java \${LBLAB_JAVA_OPTS:-} -cp "$prefix/classes:$runtime_cp" ${main#*:} "\$@"
LAUNCHER
        chmod +x "$prefix/bin/${main%%:*}"
    done
    touch "$stamp"
fi
exec 8>&-
client="$prefix/bin/client"
run_tests() {
    java -cp "$prefix/test-classes:$prefix/classes:$runtime_cp" \
        -Dlblab.vectors="${LBLAB_VECTORS:-$root/conformance/vectors/peak_ewma_experimental.json}" \
        lblab.peakewma.Tests
}
case "${1:-}" in
    --install)
        echo "$client"
        exit 0
        ;;
    --test)
        run_tests
        exit $?
        ;;
esac
run_tests >/dev/null || { echo "error: interop/java tests fail (scripts/interop-java.sh --test)" >&2; exit 2; }

find_lblab

run_port java "$client" "$prefix/bin/report" 6 "$@"
