#!/bin/bash
# Interleaved idle A/B of the table agent's play: before b54ce5d (turn path), after HEAD (one call).
set -e
OUT=/tmp/ab66
PY=/work/main/.venv/bin/python
run() {
  cd $2 && echo "$(date -u +%FT%TZ) $1 $3 load: $(cut -d' ' -f1-3 /proc/loadavg) commit $(git rev-parse --short HEAD)" >> $OUT/log-eval.txt
  YAHTZEE_JAX_CACHE=/tmp/cache-ab PYTHONPATH=$2 /usr/bin/time -f "%e s wall %U s user %S s sys" $PY -m yahtzee_jax.commands.cli bench evaluate --agents optimal-table optimal --games 100000 --repeats 3 --json $OUT/eval-$1-$3.json >> $OUT/log-eval.txt 2>&1
}
for i in 1 2 3 4; do
  if [ $((i % 2)) = 1 ]; then run before /work/ab-b54 $i; run after /work/main $i; else run after /work/main $i; run before /work/ab-b54 $i; fi
done
echo done >> $OUT/log-eval.txt
