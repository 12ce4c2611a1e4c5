#!/bin/bash
# Interleaved idle A/B of bench train: before 898d267 (/work/ab-898), after HEAD (/work/main).
set -e
OUT=/tmp/ab66
PY=/work/main/.venv/bin/python
run() { # side tree index
  cd $2 && echo "$(date -u +%FT%TZ) $1 $3 load: $(cut -d' ' -f1-3 /proc/loadavg) commit $(git rev-parse --short HEAD)" >> $OUT/log-train.txt
  YAHTZEE_JAX_CACHE=/tmp/cache-ab PYTHONPATH=$2 $PY -m yahtzee_jax.commands.cli bench train --preset paper-a2c --batches 20,256 --repeats 10 --json $OUT/train-a2c-$1-$3.json >> $OUT/log-train.txt 2>&1
  YAHTZEE_JAX_CACHE=/tmp/cache-ab PYTHONPATH=$2 $PY -m yahtzee_jax.commands.cli bench train --preset cpu-ppo --minibatches 2 --batches 20,256 --repeats 10 --json $OUT/train-ppo-$1-$3.json >> $OUT/log-train.txt 2>&1
}
for i in 1 2 3; do
  if [ $((i % 2)) = 1 ]; then run before /work/ab-898 $i; run after /work/main $i; else run after /work/main $i; run before /work/ab-898 $i; fi
done
echo done >> $OUT/log-train.txt
