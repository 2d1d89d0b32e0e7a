set -eu
i="$JOB_COMPLETION_INDEX"
case "$i" in
@SHARD_CASES@
  *) echo "no load-generator shard $i of @SHARDS@" >&2; exit 2 ;;
esac
fleet="${JOB_NAME%-loadgen*}-fleet${JOB_NAME##*-loadgen}"
@TARGETS@
@JOIN@# Each policy in its slot of @SLOT@ s from START_AT, against that slot's fresh fleet; every
# shard starts at the slot's start (its --start-at: the fault timeline's time 0 too).
rc=0
k=0
while [ "$k" -lt @POLICIES@ ]; do
  case "$k" in
@POLICY_CASES@
  esac
  t=$((START_AT + k * @SLOT@))
  now="$(date +%s)"
  if [ "$now" -gt "$((t + 5))" ]; then
    echo "$policy: its start ($t) has passed; skipped" >&2; rc=1
  else
    if [ "$((t - 5))" -gt "$now" ]; then sleep "$((t - 5 - now))"; fi
    lblab loadgen @SCENARIO@ --targets "$targets" --clients "$clients"@RATE_FLAG@ --seed "$seed" --policy="$policy" --start-at "$t" --out "@RESULTS@/policy-$k/shard-$i" || rc=1
  fi
  k=$((k + 1))
done
exit "$rc"
