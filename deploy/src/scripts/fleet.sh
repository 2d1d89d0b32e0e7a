set -eu
# The Indexed Job's completion index is the scenario backend's index.
ordinal="${JOB_COMPLETION_INDEX:-}"
case "$ordinal" in
  ''|*[!0-9]*) echo "pod ${HOSTNAME:-?}: no completion index (JOB_COMPLETION_INDEX)" >&2; exit 2 ;;
esac
if [ "$ordinal" -ge @BACKENDS@ ]; then echo "pod ${HOSTNAME:-?}: the scenario has @BACKENDS@ backends, none with index $ordinal" >&2; exit 2; fi
@JOIN@# A fresh fleet for each of the @POLICIES@ policies' slots of @SLOT@ s from START_AT: listening @LEAD@ s
# before the slot, its fault timeline's time 0 at the slot's start, gone 25 s before the next.
k=0
while [ "$k" -lt @POLICIES@ ]; do
  t=$((START_AT + k * @SLOT@))
  now="$(date +%s)"
  if [ "$((t + @SLOT@ - 25))" -gt "$now" ]; then
    if [ "$((t - @LEAD@))" -gt "$now" ]; then sleep "$((t - @LEAD@ - now))"; now="$(date +%s)"; fi
    lblab backend @SCENARIO@ --index "$ordinal" --listen 0.0.0.0:@PORT@ --start-at "$t" --for "$((t + @SLOT@ - 25 - now))s"
  fi
  k=$((k + 1))
done
echo "every policy's slot is over"
