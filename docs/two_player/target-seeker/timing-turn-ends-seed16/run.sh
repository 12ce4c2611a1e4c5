#!/bin/sh
# Alternated whole commands: the code before (624babb, worktree) and after (dc82a44).
cd /work/main  # the checkout at dc82a44; the code before: git worktree add /tmp/oldtree 624babb
for i in 1 2; do
  for side in before after; do
    if [ $side = before ]; then PP=/tmp/oldtree; else PP=; fi
    echo "$side $i start $(date -u +%FT%TZ) load $(cut -d' ' -f1-3 /proc/loadavg)" >> /tmp/bench16/load.txt
    PYTHONPATH=$PP /usr/bin/time -v .venv/bin/yahtzee-jax match target-seeker --games 10000 --seed 16 --no-progress --out /tmp/bench16/${side}_$i.json > /tmp/bench16/${side}_$i.log 2>&1
    echo "$side $i end $(date -u +%FT%TZ) load $(cut -d' ' -f1-3 /proc/loadavg)" >> /tmp/bench16/load.txt
  done
done
