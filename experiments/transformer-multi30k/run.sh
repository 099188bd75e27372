#!/usr/bin/env bash
# German -> English translation on Multi30k (task 1, Elliott et al. 2016) with a small
# Transformer: train on train, select on valid, report BLEU on test_2016_flickr with the wall
# time and the training tokens/s. The settings are those of README.md in this folder.
#
# Usage: experiments/transformer-multi30k/run.sh [BUILD_DIR]
# Environment: THREADS (default 2), EPOCHS (default 30), BEAM (default 4),
#              ATTN_DATA_DIR (default ../shared/data; the files are in its multi30k/);
#              for a smoke test of the script: STEPS (stop after so many steps) and
#              CHECKPOINT_EVERY (default 500 steps; the last 5 checkpoints are averaged).
# Results: results/transformer-multi30k/ — data.h5, model.h5 (+ its last checkpoints),
# averaged.h5, valid/test predictions, summary.md, loss.png, attention.png.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=$(cd "${1:-$ROOT/build}" && pwd)
BIN=$BUILD/apps
THREADS=${THREADS:-2}
EPOCHS=${EPOCHS:-30}
BEAM=${BEAM:-4}
STEPS=${STEPS:-0}
CHECKPOINT_EVERY=${CHECKPOINT_EVERY:-500}
DATA_DIR=${ATTN_DATA_DIR:-$ROOT/../shared/data}/multi30k
OUT=$ROOT/results/transformer-multi30k
mkdir -p "$OUT"

for tool in attn-data attn-transformer attn-bleu; do
  [ -x "$BIN/$tool" ] || { echo "transformer-multi30k: $BIN/$tool is missing; build first (make -f Makefile.scripts build)" >&2; exit 1; }
done
[ -f "$DATA_DIR/train.de.gz" ] || { echo "transformer-multi30k: no Multi30k files in $DATA_DIR (set ATTN_DATA_DIR)" >&2; exit 1; }

bleu_of() {   # attn-bleu's score line -> the number after "BLEU = "
  sed -n 's/^BLEU = \([0-9.]*\),.*/\1/p'
}

echo "== data: Multi30k de -> en, lower-cased, tokens seen twice in train"
"$BIN/attn-data" multi30k --data-dir "$DATA_DIR" --src de --tgt en --lowercase --min-freq 2 \
  --out "$OUT/data.h5" --quiet

echo "== train: 3+3 layers, d_model 256, 8 heads, d_ff 512, $EPOCHS epochs, $THREADS threads"
start=$(date +%s)
"$BIN/attn-transformer" train --data "$OUT/data.h5" --model "$OUT/model.h5" \
  --d-model 256 --heads 8 --d-ff 512 --layers 3 --dropout 0.1 --label-smoothing 0.1 \
  --tie-embeddings output --max-tokens 2048 --epochs "$EPOCHS" --steps "$STEPS" --lr 0.001 --warmup 2000 --clip 1 \
  --checkpoint-every "$CHECKPOINT_EVERY" --keep-checkpoints 5 --seed 1 --threads "$THREADS" \
  | tee "$OUT/train.log"
train_wall=$(( $(date +%s) - start ))

echo "== average the last 5 checkpoints (Vaswani et al. 2017, sec. 6.1)"
mapfile -t ckpts < <(ls "$OUT"/model.step*.h5 | tail -n 5)
"$BIN/attn-transformer" average --inputs "${ckpts[@]}" --out "$OUT/averaged.h5" --quiet

echo "== select on valid: final model or the average, beam $BEAM"
best=; best_bleu=-1
for m in model averaged; do
  "$BIN/attn-transformer" translate --model "$OUT/$m.h5" --data "$OUT/data.h5" --split valid \
    --beam "$BEAM" --threads "$THREADS" --out "$OUT/valid.$m.h5" --quiet
  b=$("$BIN/attn-bleu" --hyp "$OUT/valid.$m.h5" --ref "$OUT/data.h5" --split valid --quiet | bleu_of)
  echo "valid BLEU ($m): $b"
  if awk -v a="$b" -v b="$best_bleu" 'BEGIN { exit !(a > b) }'; then best=$m; best_bleu=$b; fi
done

echo "== test_2016_flickr with the $best model"
start=$(date +%s)
"$BIN/attn-transformer" translate --model "$OUT/$best.h5" --data "$OUT/data.h5" --split test \
  --beam "$BEAM" --dump-attention --threads "$THREADS" --out "$OUT/test.h5" --quiet
decode_wall=$(( $(date +%s) - start ))
"$BIN/attn-bleu" --hyp "$OUT/test.h5" --ref "$OUT/data.h5" --split test --quiet | tee "$OUT/test.bleu"
test_bleu=$(bleu_of < "$OUT/test.bleu")

rate=$(sed -n 's/.*, \([0-9]*\) tokens\/s).*/\1/p' "$OUT/train.log" | tail -n 1)
train_seconds=$(sed -n 's/.* in \([0-9.]*\) s of training.*/\1/p' "$OUT/train.log" | tail -n 1)
{
  echo "# Transformer, Multi30k de -> en"
  echo
  echo "| setting | value |"
  echo "|---|---|"
  echo "| model | 3+3 layers, d_model 256, 8 heads, d_ff 512, dropout 0.1, tied output |"
  echo "| training | $EPOCHS epochs, batches of 2048 tokens, Adam lr 1e-3 (warm-up 2000, inverse sqrt), label smoothing 0.1 |"
  echo "| threads | $THREADS |"
  echo "| training wall time | ${train_wall} s (${train_seconds} s in training steps) |"
  echo "| training throughput | ${rate} target tokens/s |"
  echo "| selected on valid | $best (valid BLEU $best_bleu, beam $BEAM) |"
  echo "| test_2016_flickr BLEU | **$test_bleu** (beam $BEAM, decoded in ${decode_wall} s) |"
} > "$OUT/summary.md"
cat "$OUT/summary.md"

if [ -x "$BIN/attn-plot" ]; then
  "$BIN/attn-plot" curve "$OUT/model.h5" --series /metrics/train_loss --series /metrics/valid_loss \
    --label train --label valid --x-title epoch --y-title "loss (label-smoothed)" \
    --title "Transformer, Multi30k de-en" --out "$OUT/loss.png" --quiet
  "$BIN/attn-plot" heatmap "$OUT/test.h5" --dataset /attention/cross/layer2 --index 0 --head 0 \
    --x-ids /src --x-vocab /vocab/src --y-ids /predictions --y-vocab /vocab/tgt \
    --x-title German --y-title English --title "cross-attention, layer 3, head 1, test sentence 1" \
    --out "$OUT/attention.png" --quiet
  echo "pictures: $OUT/loss.png $OUT/attention.png"
fi
