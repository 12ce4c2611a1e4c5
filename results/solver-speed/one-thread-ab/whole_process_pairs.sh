# A/B: the whole process of `yahtzee-jax solve --rules yatzy --force`, main (before) vs clone11 (after), alternated
for side in main clone11; do /work/$side/.venv/bin/yahtzee-jax solve --rules yatzy --force --cache-dir /tmp/s9ab11-$side > /dev/null 2>&1; done
for i in 1 2 3 4 5 6; do for side in main clone11; do
  s=$(date +%s.%N); out=$(cd /work/$side && /usr/bin/time -f "%e %U %S" .venv/bin/yahtzee-jax solve --rules yatzy --force --cache-dir /tmp/s9ab11-$side 2>&1 | grep -E "solved in|^[0-9.]+ [0-9.]+ [0-9.]+$" | tr '\n' ' ')
  echo "$side $out"
done; done
