#!/usr/bin/env bash
# What doubly stochastic attention changes (Xu et al. 2015, sec. 4.2.1; issue 15): the captioner on
# scenes of two coloured shapes ("a red circle above a blue square") with the penalty's lambda = 0
# and lambda = 1 side by side, for every seed: test sequence accuracy, BLEU-1..4 and attention
# correctness (the colour and shape words' attention peak in their object's box), and the
# attention's spread (its entropy, and how much of the image the caption's attention covers).
# Chains: attn-data shapes -> attn-caption train -> eval / caption -> attn-plot overlay.
# Every model has --coords: "above" and "left of" are about places, which a convolutional
# encoder's annotations alone do not carry (experiments/caption-mnist measures what they change).
#
# Usage: experiments/caption-shapes/run.sh [BUILD_DIR]
# Environment (defaults in brackets): SEEDS ["1 2 3"], LAMBDAS ["0 1"], N [10000 training scenes],
# EPOCHS [20], ENCODER [conv32x3,pool2,conv64x3,pool2], OPTIONS [extra train options], THREADS [1],
# PARALLEL [2], REUSE [0; 1 keeps trained models and continues interrupted ones from their newest
# checkpoint], PYTHON [/usr/bin/python3, with h5py], RESULTS [results/caption-shapes].
# Results: $RESULTS — shapes.h5; l<lambda>_s<seed>.h5 and .log; caps_*.h5; table.md;
# looked_l<lambda>.png.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=$(cd "${1:-$ROOT/build}" && pwd)
BIN=$BUILD/apps
SEEDS=${SEEDS:-1 2 3}
LAMBDAS=${LAMBDAS:-0 1}
N=${N:-10000}
EPOCHS=${EPOCHS:-20}
ENCODER=${ENCODER:-conv32x3,pool2,conv64x3,pool2}
OPTIONS=${OPTIONS:-}
THREADS=${THREADS:-1}
PARALLEL=${PARALLEL:-2}
REUSE=${REUSE:-0}
PYTHON=${PYTHON:-/usr/bin/python3}
OUT=${RESULTS:-$ROOT/results/caption-shapes}
export OMP_WAIT_POLICY=PASSIVE
# shellcheck source=experiments/lib/reuse.sh
source "$ROOT/experiments/lib/reuse.sh"
for tool in attn-data attn-caption attn-plot; do
  [ -x "$BIN/$tool" ] || { echo "caption-shapes: $BIN/$tool is missing; build first (make -f Makefile.scripts build)" >&2; exit 1; }
done
"$PYTHON" -c 'import h5py' 2>/dev/null || { echo "caption-shapes: $PYTHON cannot import h5py (make -f Makefile.scripts deps)" >&2; exit 1; }
mkdir -p "$OUT"
start=$SECONDS

echo "== data: $N training scenes (48 x 48), 1000 valid, 1000 test"
"$BIN/attn-data" shapes --n "$N" --valid-n 1000 --test-n 1000 --seed 1 --out "$OUT/shapes.h5" --quiet

# train NAME SEED LAMBDA: NAME.h5, unless REUSE=1 keeps it; with REUSE=1 a training interrupted
# after a checkpoint (OPTIONS="--checkpoint-every N") continues from its newest one.
train() {
  local resume=()
  case $(reuse_plan "$OUT/$1.h5" "$OUT/$1.log") in keep) return 0 ;; resume) resume=(--resume) ;; esac
  # shellcheck disable=SC2086
  "$BIN/attn-caption" train --data "$OUT/shapes.h5" --model "$OUT/$1.h5" "${resume[@]}" --encoder "$ENCODER" \
    --epochs "$EPOCHS" --lr 2e-3 --seed "$2" --alpha-c "$3" --coords --threads "$THREADS" $OPTIONS >>"$OUT/$1.log" 2>&1
  tail -n 1 "$OUT/$1.log"
}

echo "== training: lambda in {$LAMBDAS} x seeds {$SEEDS}, $PARALLEL at once"
models=()
running=0
for l in $LAMBDAS; do
  for s in $SEEDS; do
    models+=("l${l}_s$s")
    train "l${l}_s$s" "$s" "$l" &
    running=$((running + 1))
    if [ "$running" -ge "$PARALLEL" ]; then wait -n; running=$((running - 1)); fi
  done
done
wait

echo "== evaluation on test"
: >"$OUT/eval.txt"
for m in "${models[@]}"; do
  line=$("$BIN/attn-caption" eval --model "$OUT/$m.h5" --data "$OUT/shapes.h5" --threads "$THREADS" --quiet)
  echo "$m $line" | tee -a "$OUT/eval.txt"
  "$BIN/attn-caption" caption --model "$OUT/$m.h5" --data "$OUT/shapes.h5" --out "$OUT/caps_$m.h5" \
    --threads "$THREADS" --quiet
done
first=$(echo "$SEEDS" | awk '{print $1}')
for l in $LAMBDAS; do
  "$BIN/attn-plot" overlay "$OUT/caps_l${l}_s$first.h5" --index 0 --image /images --attention /attention \
    --word-ids /predictions --word-vocab /vocab/tgt --out "$OUT/looked_l$l.png" --quiet
done

"$PYTHON" "$(dirname "$0")/table.py" "$OUT" "${models[@]}" | tee "$OUT/table.md"
echo "caption-shapes: $((SECONDS - start)) s wall time; results in $OUT"
