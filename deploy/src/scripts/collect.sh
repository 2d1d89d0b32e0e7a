set -eu
results="${LBLAB_RESULTS:-@RESULTS@}"
@JOIN@deadline=$((START_AT + @POLICIES@ * @SLOT@ + @GRACE@))
rc=0
k=0
while [ "$k" -lt @POLICIES@ ]; do
  # A shard is done when its run folder has its summary.
  while [ "$(ls "$results/policy-$k"/shard-*/summary.json 2>/dev/null | wc -l)" -lt @SHARDS@ ] && [ "$(date +%s)" -lt "$deadline" ]; do sleep 10; done
  done_n="$(ls "$results/policy-$k"/shard-*/summary.json 2>/dev/null | wc -l)"
  if [ "$done_n" -lt @SHARDS@ ]; then echo "policy-$k: $done_n of @SHARDS@ shards finished by the deadline" >&2; rc=1; fi
  if [ "$done_n" -gt 0 ]; then
    lblab report --merge "$results/policy-$k"/shard-* --out "$results/merged/policy-$k" || rc=1
  fi
  k=$((k + 1))
done
echo "merged: $results/merged; fetch it within the hour with"
echo "  kubectl cp -n ${POD_NAMESPACE:-default} ${HOSTNAME:-POD}:$results/merged ./lblab-merged"
sleep 3600
exit "$rc"
