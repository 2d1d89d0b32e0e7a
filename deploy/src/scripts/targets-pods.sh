targets=""
b=0
while [ "$b" -lt @BACKENDS@ ]; do targets="$targets${targets:+,}$fleet-$b.$fleet:@PORT@"; b=$((b + 1)); done
