#!/usr/bin/env bash
# Installs the Python gRPC interop environment: a virtualenv under the Cargo target folder
# ($CARGO_TARGET_DIR, else target/, git-ignored) with the
# pinned grpcio packages of interop/python/requirements.txt from PyPI, and the generated code of
# the greeter and of lblab's Echo service. Idempotent: a second run with unchanged requirements
# does nothing; concurrent runs wait for each other. Prints the virtualenv's python on its last line.
#
#   scripts/interop-env.sh            # -> target/interop-venv/bin/python
#   LBLAB_VENV=/somewhere scripts/interop-env.sh
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
src="$root/interop/python"
venv="${LBLAB_VENV:-${CARGO_TARGET_DIR:-$root/target}/interop-venv}"
stamp="$venv/.lblab-stamp"
mkdir -p "$(dirname "$venv")"
# One installer at a time (tests may call this concurrently).
exec 9>"$venv.lock"
flock 9
echo_proto="$root/wire/proto/lblab/v1/echo.proto"
want="$(cat "$src/requirements.txt" "$src/greeter.proto" "$echo_proto" | sha256sum | cut -d' ' -f1)"
if [[ -f "$stamp" && "$(cat "$stamp")" == "$want" && -x "$venv/bin/python" ]]; then
    echo "$venv/bin/python"
    exit 0
fi
python="${PYTHON:-python3}"
"$python" -m venv --clear "$venv" >&2
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-input \
    -r "$src/requirements.txt" >&2
mkdir -p "$venv/gen"
"$venv/bin/python" -m grpc_tools.protoc -I "$src" --python_out="$venv/gen" \
    --grpc_python_out="$venv/gen" "$src/greeter.proto" >&2
# lblab's own Echo service, for the client that drives lblab's fleet (interop/python/echo_client.py).
"$venv/bin/python" -m grpc_tools.protoc -I "$(dirname "$echo_proto")" --python_out="$venv/gen" \
    "$echo_proto" >&2
echo "$want" > "$stamp"
echo "$venv/bin/python"
