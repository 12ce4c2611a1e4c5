#!/bin/bash
# The device call of 2026-11-26 (stop 40), kept as run: `BUDGET=510 bash .gpu/call1.sh` from the
# checkout's root on the H100, with two ignored folders, .gpu and .whl, carried with it:
#   .gpu/yj.py    the console script without an install: `import sys; from
#                 yahtzee_jax.commands.cli import main; sys.exit(main())`
#   .gpu/tdpm-ft  runs/tdpm-ft's config.yaml, summary.json and its last checkpoint (9375)
#   .whl/         tensorboardX 2.6.5 and flashbax 0.1.3 (the image lacks them); .whl/pinned/ the
#                 local flax, optax, chex and orbax-checkpoint, installed only if fast-gpu failed
#                 on the image's (it did not)
# Issue 30's GPU figures in one call: fast-gpu's whole command, td-planner against A2C per
# update, td-planner's preset trained, the two-turn planner's matches in the time left.
# SMOKE=1 shrinks every step (a dry run on the CPU).
export PYTHONUNBUFFERED=1 TF_CPP_MIN_LOG_LEVEL=2
START=$(date +%s); DEADLINE=$((START + ${BUDGET:-530}))
exec > >(tee -a "$OUT/log.txt") 2>&1
left() { echo $((DEADLINE - $(date +%s))); }
stamp() { echo "== $(date -u +%H:%M:%S) ($(( $(date +%s) - START )) s in, $(left) s left): $*"; }
timed() {  # timed NAME SECONDS CMD...: run under a SIGINT deadline, print its wall time
  local name=$1 cap=$2; shift 2; local t0=$(date +%s.%N)
  timeout -s INT -k 20 "$cap" "$@"; local rc=$?
  echo "WALL $name rc=$rc $(python3 -c "print(round($(date +%s.%N) - $t0, 1))") s"; return $rc
}

pack() { tar czf "$OUT/$1.tgz" -C /tmp --exclude='checkpoints' --exclude='best' --exclude='events.out*' "$1"; }
stamp setup; nvidia-smi -L; nproc; lscpu | grep -m1 'Model name'
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 3
export PYTHONPATH=/tmp/site:$PWD
versions() { python3 -c "import jax, flax, optax, chex, orbax.checkpoint as o; print('jax', jax.__version__, 'flax', flax.__version__, 'optax', optax.__version__, 'chex', chex.__version__, 'orbax', o.__version__ if hasattr(o, '__version__') else '?', jax.devices())"; }
versions
BENCH=(--batches 20,64,256,1024 --repeats 3)
if [ -n "$SMOKE" ]; then BENCH=(--batches 20 --repeats 1); FG=(--set train.total_games=2560 --set train.final_eval_games=2000); TP=(--set train.total_games=3200 --set train.final_eval_games=2000); else FG=(); TP=(); fi

stamp "1. fast-gpu, the whole command"
if ! timed fast-gpu 200 python3 .gpu/yj.py train --preset fast-gpu --no-progress "${FG[@]}" --out /tmp/fast-gpu; then
  if [ ! -f /tmp/fast-gpu/summary.json ]; then
    stamp "fast-gpu failed: the pinned flax/optax/chex/orbax, then again"
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/pinned/*.whl || exit 3
    versions; rm -rf /tmp/fast-gpu
    timed fast-gpu-pinned 200 python3 .gpu/yj.py train --preset fast-gpu --no-progress "${FG[@]}" --out /tmp/fast-gpu || exit 4
  fi
fi
pack fast-gpu

stamp "2. training speed, one process"
timed bench 150 python3 experiments/bench_td_planner.py --presets fast-cpu,td-planner "${BENCH[@]}" --json "$OUT/bench_td_planner_h100.json"

stamp "3. td-planner preset"
timed td-planner $(( $(left) > 420 ? 200 : $(left) / 3 )) python3 .gpu/yj.py train --preset td-planner --no-progress "${TP[@]}" --out /tmp/td-planner
pack td-planner

stamp "4. two-turn match planner, first 2,000 matches of seed 3"
M=(match .gpu/tdpm-ft --games 2000 --seed 3 --set algo.match_early=normal --no-progress)
[ -n "$SMOKE" ] && M=(match .gpu/tdpm-ft --games 10 --seed 3 --set algo.match_early=normal --no-progress)
t0=$(date +%s); timed match2-2000 $(( $(left) - 10 )) python3 .gpu/yj.py "${M[@]}" --set algo.lookahead=2 --out "$OUT/lookahead2_2000.json"
took=$(( $(date +%s) - t0 + 1 )); n=$(( ($(left) - 30) * 2000 / took / 2000 * 2000 ))
stamp "2,000 matches took ${took} s; next: ${n} matches"
if [ "$n" -gt 2000 ] && [ -z "$SMOKE" ]; then
  timed match2-more $(( $(left) - 5 )) python3 .gpu/yj.py match .gpu/tdpm-ft --games $n --seed 3 --set algo.match_early=normal --no-progress --set algo.lookahead=2 --out "$OUT/lookahead2_more.json"
fi
stamp done
