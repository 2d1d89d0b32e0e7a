set -eu
dir="${LBLAB_RESULTS:-@RESULTS@}/@FOLDER@"
# Waits until every shard is done, or given up: failed @ATTEMPTS@ times, or with an exit code a
# retry would repeat (1 or 2: lblab's invalid input and errors, which fail the index at once).
while :; do
  done_n=0
  lost=""
  i=0
  while [ "$i" -lt @SHARDS@ ]; do
    if [ -e "$dir/done-$i" ]; then
      done_n=$((done_n + 1))
    elif [ -s "$dir/failed-$i" ] && { [ "$(wc -l < "$dir/failed-$i")" -ge @ATTEMPTS@ ] || grep -qx '[12]' "$dir/failed-$i"; }; then
      lost="$lost${lost:+,}$i"
    fi
    i=$((i + 1))
  done
  if [ -n "$lost" ] || [ "$done_n" -ge @SHARDS@ ]; then break; fi
  sleep 30
done
rc=0
if [ -n "$lost" ]; then
  echo "sweep shards $lost of @SHARDS@ failed (their pods: kubectl get pods -l job-name=@JOB@); the merge needs every shard" >&2
  rc=1
else
  lblab sweep --merge "$dir"/shard-* --out "$dir/merged" || rc=1
  echo "merged: $dir/merged; fetch it within the hour with"
  echo "  kubectl cp -n ${POD_NAMESPACE:-default} ${HOSTNAME:-POD}:$dir/merged ./lblab-sweep"
fi
sleep 3600
exit "$rc"
