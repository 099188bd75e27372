#!/usr/bin/env bash
# Show, Attend and Tell on handwritten digit strips (Xu et al. 2015, soft attention; issue 15):
# a captioner trained from scratch on 1-5-digit MNIST strips, for every seed, beside two ablations:
# without attention (the context is the mean annotation) and attention over annotations without
# their locations' coordinates (Xu et al.'s annotations); test sequence accuracy, BLEU-1..4 and
# attention correctness on 1-5-digit and on 3-digit strips; whether attention moves left to right
# word by word; and one panel per word for a few test strips (Xu et al. Fig. 3).
# Chains: attn-data mnist-strips -> attn-caption train -> eval / caption -> attn-plot overlay.
#
# Usage: experiments/caption-mnist/run.sh [BUILD_DIR]
# Environment (defaults in brackets): SEEDS ["1 2 3"], ABLATION_SEEDS ["1": without attention],
# NOCOORDS_SEEDS [$ABLATION_SEEDS: attention without coordinates], N [10000 training strips],
# EPOCHS [8], ENCODER [conv32x3,pool2,conv64x3,pool2,conv128x3,pool2], ALPHA_C [0.1], OPTIONS
# [extra attn-caption train options], DATA_OPTIONS [extra attn-data mnist-strips options for the
# training strips, e.g. the --warp-* augmentation], THREADS [1], PARALLEL [2: trainings at once],
# REUSE [0; 1 keeps trained models and continues interrupted ones from their newest checkpoint],
# DATA_DIR [../shared/data/mnist beside the project], PYTHON [/usr/bin/python3, with h5py],
# RESULTS [results/caption-mnist: where everything goes, so that two settings can run side by side].
# Results: $RESULTS — strips.h5, strips3.h5; soft_s<S>.h5, nocoords_s<S>.h5, mean_s<S>.h5 (with
# their learning curves) and .log; caps_<model>.h5 (test captions with attention); table.md;
# looked_<i>.png.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=$(cd "${1:-$ROOT/build}" && pwd)
BIN=$BUILD/apps
SEEDS=${SEEDS:-1 2 3}
ABLATION_SEEDS=${ABLATION_SEEDS-1}
NOCOORDS_SEEDS=${NOCOORDS_SEEDS-$ABLATION_SEEDS}
N=${N:-10000}
EPOCHS=${EPOCHS:-8}
ALPHA_C=${ALPHA_C:-0.1}
ENCODER=${ENCODER:-conv32x3,pool2,conv64x3,pool2,conv128x3,pool2}
OPTIONS=${OPTIONS:-}
DATA_OPTIONS=${DATA_OPTIONS:-}
THREADS=${THREADS:-1}
PARALLEL=${PARALLEL:-2}
REUSE=${REUSE:-0}
DATA_DIR=${DATA_DIR:-$ROOT/../shared/data/mnist}
PYTHON=${PYTHON:-/usr/bin/python3}
OUT=${RESULTS:-$ROOT/results/caption-mnist}
export OMP_WAIT_POLICY=PASSIVE
# shellcheck source=experiments/lib/reuse.sh
source "$ROOT/experiments/lib/reuse.sh"
for tool in attn-data attn-caption attn-plot; do
  [ -x "$BIN/$tool" ] || { echo "caption-mnist: $BIN/$tool is missing; build first (make -f Makefile.scripts build)" >&2; exit 1; }
done
[ -f "$DATA_DIR/t10k-images-idx3-ubyte.gz" ] || { echo "caption-mnist: no MNIST files in $DATA_DIR (set DATA_DIR)" >&2; exit 1; }
"$PYTHON" -c 'import h5py' 2>/dev/null || { echo "caption-mnist: $PYTHON cannot import h5py (make -f Makefile.scripts deps)" >&2; exit 1; }
mkdir -p "$OUT"
start=$SECONDS

echo "== data: $N training strips of 1-5 digits (32 x 160), 1000 valid, 1000 test; 1000 test strips of 3 digits"
# shellcheck disable=SC2086
"$BIN/attn-data" mnist-strips --data-dir "$DATA_DIR" --n "$N" --valid-n 1000 --test-n 1000 --seed 1 $DATA_OPTIONS \
  --out "$OUT/strips.h5" --quiet
# The same pools (MNIST image i mod 10 decides its split in every file), other compositions.
"$BIN/attn-data" mnist-strips --data-dir "$DATA_DIR" --min-digits 3 --max-digits 3 --n 10 --valid-n 10 \
  --test-n 1000 --seed 2 --out "$OUT/strips3.h5" --quiet

# train NAME SEED OPTIONS...: NAME.h5, unless REUSE=1 keeps it; with REUSE=1 a training interrupted
# after a checkpoint (OPTIONS="--checkpoint-every N") continues from its newest one.
train() {
  local name=$1 seed=$2 resume=()
  shift 2
  case $(reuse_plan "$OUT/$name.h5" "$OUT/$name.log") in keep) return 0 ;; resume) resume=(--resume) ;; esac
  "$BIN/attn-caption" train --data "$OUT/strips.h5" --model "$OUT/$name.h5" "${resume[@]}" --encoder "$ENCODER" \
    --epochs "$EPOCHS" --lr 2e-3 --seed "$seed" --threads "$THREADS" $OPTIONS "$@" >>"$OUT/$name.log" 2>&1
  tail -n 1 "$OUT/$name.log"
}

echo "== training: soft attention (seeds $SEEDS), without coordinates (seeds $NOCOORDS_SEEDS), without attention (seeds $ABLATION_SEEDS); $PARALLEL at once"
jobs_list=()
for s in $SEEDS; do jobs_list+=("soft_s$s $s --coords --alpha-c $ALPHA_C"); done
for s in $NOCOORDS_SEEDS; do jobs_list+=("nocoords_s$s $s --alpha-c $ALPHA_C"); done
for s in $ABLATION_SEEDS; do jobs_list+=("mean_s$s $s --attention mean"); done
running=0
for job in "${jobs_list[@]}"; do
  # shellcheck disable=SC2086
  train $job &
  running=$((running + 1))
  if [ "$running" -ge "$PARALLEL" ]; then wait -n; running=$((running - 1)); fi
done
wait

echo "== evaluation on test (1-5 digits) and on 3-digit strips; captions with attention"
models=()
for s in $SEEDS; do models+=("soft_s$s"); done
for s in $NOCOORDS_SEEDS; do models+=("nocoords_s$s"); done
for s in $ABLATION_SEEDS; do models+=("mean_s$s"); done
: >"$OUT/eval.txt"
for m in "${models[@]}"; do
  for set in strips strips3; do
    line=$("$BIN/attn-caption" eval --model "$OUT/$m.h5" --data "$OUT/$set.h5" --threads "$THREADS" --quiet)
    echo "$m $set $line" | tee -a "$OUT/eval.txt"
  done
  "$BIN/attn-caption" caption --model "$OUT/$m.h5" --data "$OUT/strips.h5" --out "$OUT/caps_$m.h5" \
    --threads "$THREADS" --quiet
done

first=$(echo "$SEEDS" | awk '{print $1}')
for i in 0 1 2 3; do
  "$BIN/attn-plot" overlay "$OUT/caps_soft_s$first.h5" --index "$i" --image /images --attention /attention \
    --word-ids /predictions --word-vocab /vocab/tgt --out "$OUT/looked_$i.png" --quiet
done

"$PYTHON" "$(dirname "$0")/table.py" "$OUT" "${models[@]}" | tee "$OUT/table.md"
echo "caption-mnist: $((SECONDS - start)) s wall time; results in $OUT"
