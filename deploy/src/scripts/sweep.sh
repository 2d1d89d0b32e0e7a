set -eu
i="${JOB_COMPLETION_INDEX:-}"
case "$i" in
  ''|*[!0-9]*) echo "pod ${HOSTNAME:-?}: no completion index (JOB_COMPLETION_INDEX)" >&2; exit 2 ;;
esac
if [ "$i" -ge @SHARDS@ ]; then echo "no sweep shard $i of @SHARDS@" >&2; exit 2; fi
dir="${LBLAB_RESULTS:-@RESULTS@}/@FOLDER@"
mkdir -p "$dir"
# Shard i of @SHARDS@: the sweep's points whose index is i modulo @SHARDS@. It is marked done only
# when the sweep succeeded (an interrupted one writes a partial shard file), and each failed
# attempt's exit code is kept, so that the collector knows when Kubernetes has given up on it.
if lblab sweep @SCENARIO@ @ARGS@ --shard "$i/@SHARDS@" --out "$dir/shard-$i"; then
  : > "$dir/done-$i"
else
  rc=$?
  echo "$rc" >> "$dir/failed-$i"
  exit "$rc"
fi
