#!/usr/bin/env bash
# End-to-end memory networks on the 20 bAbI tasks (Sukhbaatar et al. 2015, Table 1): per-task
# test error of the paper's MemN2N columns BoW, PE, PE LS, PE LS RN (one model per task) and
# PE LS RN joint (one model on all tasks), on the 1k and 10k training sets, each with --repeats
# runs: the run of the best validation error (the paper's protocol) and the median over the runs;
# then the hop table of a task-16 question (the paper's Fig. 2, the notes' table) and its picture.
# Chains: attn-data babi -> attn-memnet train --repeats -> attn-memnet eval / answer -> attn-plot table.
#
# Usage: experiments/memnet-babi/run.sh [BUILD_DIR]
# Environment (defaults in brackets): SETS ["en en-10k"], COLUMNS ["bow pe pe-ls pe-ls-rn joint"],
# COLUMNS_10K [as COLUMNS], REPEATS [10], THREADS [1], PARALLEL [1; runs of separate tasks at
# once], DATA_DIR [../shared/data/babi beside the project], REUSE [0; 1 keeps trained models],
# PYTHON [/usr/bin/python3, with h5py, for the table].
# Results: results/memnet-babi/ — <set>/data/task<N>.h5 and all.h5, <set>/<column>/task<N>.h5 (the
# kept run), .run<k>.h5, .repeats.h5 (every run's validation and test error), .log; table.md;
# <set>/joint/answers.h5, hops16_<set>.md and hops16_<set>.png (the hop table).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=$(cd "${1:-$ROOT/build}" && pwd)
BIN=$BUILD/apps
SETS=${SETS:-en en-10k}
COLUMNS=${COLUMNS:-bow pe pe-ls pe-ls-rn joint}
COLUMNS_10K=${COLUMNS_10K:-$COLUMNS}
REPEATS=${REPEATS:-10}
THREADS=${THREADS:-1}
PARALLEL=${PARALLEL:-1}
DATA_DIR=${DATA_DIR:-$ROOT/../shared/data/babi}
PYTHON=${PYTHON:-/usr/bin/python3}
OUT=$ROOT/results/memnet-babi
export OMP_WAIT_POLICY=PASSIVE
for tool in attn-data attn-memnet attn-plot; do
  [ -x "$BIN/$tool" ] || { echo "memnet-babi: $BIN/$tool is missing; build first (make -f Makefile.scripts build)" >&2; exit 1; }
done
[ -d "$DATA_DIR/en" ] || { echo "memnet-babi: no bAbI data in $DATA_DIR (set DATA_DIR)" >&2; exit 1; }
"$PYTHON" -c 'import h5py' 2>/dev/null || { echo "memnet-babi: $PYTHON cannot import h5py (make -f Makefile.scripts deps)" >&2; exit 1; }
start=$SECONDS

# The paper's settings (sec. 4.2) as the authors' code runs them, as attn-memnet options. Every
# column has 3 hops, adjacent tying and temporal encoding; the tool's SGD defaults are the
# paper's (lr 0.01 per question, halved every 25 epochs, 100 epochs, norm clipped to 40, rescaled
# for a mean loss: see attn-memnet train --help). PE is the code's form (position-fixed), and the
# hops' softmax spans the memory's empty slots as in the code (--empty-slots). Linear
# start as in the code: 20 epochs without the softmax at half the rate (0.005), then the 100
# epochs of the schedule from that rate. Joint models: 50 wide, 30 + 60 epochs, halving every 15.
column_options() {
  local pe="--encoding position-fixed --empty-slots" ls="--linear-start --linear-start-epochs 20 --lr 0.16 --epochs 120"
  case $1 in
    bow) echo "--encoding bow --empty-slots" ;;
    pe) echo "$pe" ;;
    pe-ls) echo "$pe $ls" ;;
    pe-ls-rn) echo "$pe $ls --random-noise" ;;
    joint) echo "$pe --linear-start --linear-start-epochs 30 --lr 0.16 --epochs 90 --lr-decay-every 15 --random-noise --embedding-size 50" ;;
    *) echo "memnet-babi: unknown column '$1' (bow pe pe-ls pe-ls-rn joint)" >&2; exit 1 ;;
  esac
}

# train SET COLUMN NAME: NAME.h5 (task<N> or all) of COLUMN from SET's NAME data, --repeats runs.
train() {
  local set=$1 column=$2 name=$3
  local dir=$OUT/$set/$column
  if [ "${REUSE:-0}" = 1 ] && [ -f "$dir/$name.repeats.h5" ]; then return; fi
  # shellcheck disable=SC2046
  "$BIN/attn-memnet" train --data "$OUT/$set/data/$name.h5" --model "$dir/$name.h5" --repeats "$REPEATS" \
    --threads "$THREADS" --quiet $(column_options "$column") >"$dir/$name.log"
  tail -n 1 "$dir/$name.log" | sed "s|^|$set $column $name: |"
}
export -f train column_options
export BIN OUT REPEATS THREADS REUSE

for set in $SETS; do
  echo "== $set: data (attn-data babi)"
  mkdir -p "$OUT/$set/data"
  tasks=""
  for t in $(seq 1 20); do
    if ls "$DATA_DIR/$set"/qa${t}_*_train.txt >/dev/null 2>&1; then
      "$BIN/attn-data" babi --task "$t" --set "$set" --data-dir "$DATA_DIR" --out "$OUT/$set/data/task$t.h5" --quiet
      tasks="$tasks $t"
    else
      echo "$set: task $t has no training file here; left out"
    fi
  done
  "$BIN/attn-data" babi --task all --set "$set" --data-dir "$DATA_DIR" --out "$OUT/$set/data/all.h5" --quiet
  columns=$COLUMNS
  [ "$set" = en-10k ] && columns=$COLUMNS_10K
  for column in $columns; do
    echo "== $set: $column ($REPEATS runs each)"
    mkdir -p "$OUT/$set/$column"
    if [ "$column" = joint ]; then
      train "$set" joint all
      # The joint model's per-task test error, for every run.
      for k in $(seq "$REPEATS"); do
        "$BIN/attn-memnet" eval --model "$OUT/$set/joint/all.run$k.h5" --data "$OUT/$set/data/all.h5" \
          --threads "$THREADS" >"$OUT/$set/joint/all.run$k.eval.txt"
      done
    else
      for t in $tasks; do echo "$set $column task$t"; done | xargs -P "$PARALLEL" -n 3 bash -c 'train "$0" "$1" "$2"'
    fi
  done
done

echo "== table"
# Every set and column trained so far, this run's and earlier ones' (REUSE, or SETS run apart).
"$PYTHON" "$ROOT/experiments/memnet-babi/table.py" "$OUT" --sets "en en-10k" --columns "bow pe pe-ls pe-ls-rn joint" |
  tee "$OUT/table.md"

# The hop table of the first task-16 test question (basic induction, Fig. 2's right panel): each
# set's joint model's attention of every hop over the story beside the supporting facts.
for set in $SETS; do
  [ -f "$OUT/$set/joint/all.h5" ] || continue
  echo "== $set: task 16 hop table"
  answers=$OUT/$set/joint/answers.h5
  "$BIN/attn-memnet" answer --model "$OUT/$set/joint/all.h5" --data "$OUT/$set/data/all.h5" --out "$answers" \
    --threads "$THREADS" --quiet
  index=$("$PYTHON" -c 'import sys, h5py, numpy as np; f = h5py.File(sys.argv[1], "r"); print(int(np.nonzero(f["/task"][()] == 16)[0][0]))' "$answers")
  "$PYTHON" "$ROOT/experiments/memnet-babi/table.py" "$OUT" --hops "$answers" --index "$index" | tee "$OUT/hops16_$set.md"
  "$BIN/attn-plot" table "$answers" --dataset /attention/support_hops --index "$index" --transpose \
    --row-ids /story --row-vocab /vocab/words --col-labels "Support|Hop 1|Hop 2|Hop 3" \
    --title "bAbI task 16, $set joint PE LS RN: $(head -n 1 "$OUT/hops16_$set.md" | cut -d: -f2-)" \
    --out "$OUT/hops16_$set.png" --quiet
done
echo "memnet-babi: $((SECONDS - start)) s wall time"
