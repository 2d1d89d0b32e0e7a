#!/usr/bin/env bash
# Installs the Python gRPC interop environment: a virtualenv under target/ (git-ignored) with the
# pinned grpcio packages of interop/python/requirements.txt from PyPI, and the greeter's generated
# code. Idempotent: a second run with unchanged requirements does nothing. Prints the virtualenv's
# python on its last line.
#
#   scripts/interop-env.sh            # -> target/interop-venv/bin/python
#   LBLAB_VENV=/somewhere scripts/interop-env.sh
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
src="$root/interop/python"
venv="${LBLAB_VENV:-$root/target/interop-venv}"
stamp="$venv/.lblab-stamp"
want="$(cat "$src/requirements.txt" "$src/greeter.proto" | sha256sum | cut -d' ' -f1)"
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
echo "$want" > "$stamp"
echo "$venv/bin/python"
