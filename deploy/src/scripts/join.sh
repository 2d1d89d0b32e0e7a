# The common start: the start barrier's, which releases every pod at once when all have
# checked in (START_AT, from the ConfigMap, is the earliest); kept where a restarted
# container finds it.
start_file="${LBLAB_START_FILE:-@START_FILE@}"
if [ -s "$start_file" ]; then
  START_AT="$(cat "$start_file")"
else
  starter="${JOB_NAME%@JOB@*}-start${JOB_NAME##*@JOB@}:@PORT@"
  START_AT="$(lblab barrier join "$starter" --id "@ID@" --start-at "$START_AT" --wait @WAIT@s)"
  echo "$START_AT" > "$start_file"
fi
