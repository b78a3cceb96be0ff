#!/bin/sh
# Instructions per clean operation (valgrind callgrind): prints one line per store.
# usage: sh packages/core/scripts/instr-per-op.sh [stores…]   (N1/N2 default 200/1200: (I(N2) - I(N1)) / (N2 - N1) cancels start-up;
# a later window, N1=1200 N2=3200, also leaves out most of the optimising compiler's warm-up)
cd "$(dirname "$0")/.." || exit 1
n1=${N1:-200}
n2=${N2:-1200}
out=$(mktemp -d)
for store in ${*:-memory sqlite}; do
  for n in "$n1" "$n2"; do
    valgrind --tool=callgrind --callgrind-out-file="$out/$store.$n" node scripts/instr-per-op.mjs "$store" "$n" 2>"$out/$store.$n.log" >/dev/null || { cat "$out/$store.$n.log"; exit 1; }
  done
  a=$(grep -h '^summary:' "$out/$store.$n1" | awk '{print $2}')
  b=$(grep -h '^summary:' "$out/$store.$n2" | awk '{print $2}')
  echo "$store: $(( (b - a) / (n2 - n1) )) instructions/op (N=$n1: $a, N=$n2: $b)"
done
rm -rf "$out"
