#!/usr/bin/env bash
# German -> English translation on Multi30k (task 1, Elliott et al. 2016) with the RNN
# encoder-decoder of attn-seq2seq, one model per attention variant: none (Cho et al. 2014),
# concat (Bahdanau et al. 2015), general, dot and local-p (Luong et al. 2015). Each model is
# trained on train one epoch at a time (--resume); after every epoch the greedy BLEU on valid
# picks the best epoch so far (best.h5). The best epoch is then scored with beam search on valid
# and on test_2016_flickr. Settings and their reasons: README.md in this folder.
#
# Usage: experiments/seq2seq-multi30k/run.sh [BUILD_DIR]
# Environment (defaults in brackets):
#   VARIANTS   variants to train, in order ["none concat general dot local-p"]
#   EPOCHS     epochs per model [8]
#   PARALLEL   models trained at once [1]; 2 on two cores trains two variants side by side
#   THREADS    threads per model [2, or 1 when PARALLEL > 1]
#   BEAM       beam width for valid and test [5]
#   EMBED, HIDDEN, DEC_HIDDEN   embedding, encoder state per direction, decoder state [256 256 256]
#              (dot needs the decoder as wide as the memory: it gets 2 x HIDDEN)
#   DROPOUT [0.3]  MAX_TOKENS [2048]  WINDOW (local-p's D) [10]
#   MAX_LEN    drop training pairs longer than this (0: keep all) [0]; for quick trials
#   SENTENCE   the test sentence of the alignment picture [1]
#   REUSE      1: a variant that already has its result (<variant>/row.md) is not trained again,
#              so that a run stopped half-way, or one that adds variants, completes the table [0]
#   ATTN_DATA_DIR  the shared data folder (../shared/data); the files are in its multi30k/
# Results: results/seq2seq-multi30k/ — data.h5, table.md, alignment.png, valid_loss.png, and per
# variant <variant>/: model.h5 (last epoch, with its loss curves), best.h5, train.log,
# valid_bleu.txt (greedy valid BLEU per epoch), valid.h5 and test.h5 (beam predictions, test
# with the alignment of every sentence), test.bleu, row.md.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=$(cd "${1:-$ROOT/build}" && pwd)
BIN=$BUILD/apps
VARIANTS=${VARIANTS:-"none concat general dot local-p"}
EPOCHS=${EPOCHS:-8}
PARALLEL=${PARALLEL:-1}
if [ "$PARALLEL" -gt 1 ]; then THREADS=${THREADS:-1}; else THREADS=${THREADS:-2}; fi
BEAM=${BEAM:-5}
EMBED=${EMBED:-256}
HIDDEN=${HIDDEN:-256}
DEC_HIDDEN=${DEC_HIDDEN:-256}
DROPOUT=${DROPOUT:-0.3}
MAX_TOKENS=${MAX_TOKENS:-2048}
WINDOW=${WINDOW:-10}
MAX_LEN=${MAX_LEN:-0}
SENTENCE=${SENTENCE:-1}
REUSE=${REUSE:-0}
DATA_DIR=${ATTN_DATA_DIR:-$ROOT/../shared/data}/multi30k
OUT=$ROOT/results/seq2seq-multi30k
DATA=$OUT/data.h5
export OMP_WAIT_POLICY=PASSIVE   # two jobs on two cores: idle OpenMP threads must not spin
mkdir -p "$OUT"

for tool in attn-data attn-seq2seq attn-bleu; do
  [ -x "$BIN/$tool" ] || { echo "seq2seq-multi30k: $BIN/$tool is missing; build first (make -f Makefile.scripts build)" >&2; exit 1; }
done
[ -f "$DATA_DIR/train.de.gz" ] || { echo "seq2seq-multi30k: no Multi30k files in $DATA_DIR (set ATTN_DATA_DIR)" >&2; exit 1; }

# The model options of each variant. Luong's variants attend with s_t and feed the attentional
# state forward (input feeding); local-p is Luong's best local model (general score, D = 10).
variant_options() {
  case $1 in
    none)    echo "--attention none --dec-hidden $DEC_HIDDEN" ;;
    concat)  echo "--attention concat --attention-style bahdanau --dec-hidden $DEC_HIDDEN" ;;
    general) echo "--attention general --attention-style luong --dec-hidden $DEC_HIDDEN" ;;
    dot)     echo "--attention dot --attention-style luong --dec-hidden $((2 * HIDDEN))" ;;
    local-p) echo "--attention general --attention-style luong --dec-hidden $DEC_HIDDEN --local predictive --attention-window $WINDOW" ;;
    *) echo "seq2seq-multi30k: unknown variant '$1' (none, concat, general, dot, local-p)" >&2; return 1 ;;
  esac
}
for v in $VARIANTS; do variant_options "$v" > /dev/null; done   # refuse a typo before any work

bleu_of() {   # attn-bleu's score line -> the number after "BLEU = "
  sed -n 's/^BLEU = \([0-9.]*\),.*/\1/p'
}
greater_or_equal() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a >= b) }'; }
now() { date +%s.%N; }

# Parameters of a model file: the element counts of its /params datasets (attn-data info).
param_count() {
  "$BIN/attn-data" info --data "$1" | awk '$1 ~ /^\/params\// {
      shape = $0; sub(/.*\[/, "", shape); sub(/\].*/, "", shape)
      n = split(shape, dims, /, */); p = 1; for (i = 1; i <= n; ++i) p *= dims[i]; total += p }
    END { printf "%.2fM", total / 1e6 }'
}

echo "== data: Multi30k de -> en, lower-cased, tokens seen twice in train"
max_len=()
[ "$MAX_LEN" -gt 0 ] && max_len=(--max-len "$MAX_LEN")
"$BIN/attn-data" multi30k --data-dir "$DATA_DIR" --src de --tgt en --lowercase --min-freq 2 "${max_len[@]}" \
  --out "$DATA" --quiet

# Trains one variant epoch by epoch, keeps the epoch with the best greedy valid BLEU, and scores
# it with beam search on valid and test. Writes <variant>/row.md, a row of the table.
train_variant() {
  local v=$1 dir=$OUT/$1
  local -a opts
  read -r -a opts <<< "$(variant_options "$v")"
  rm -rf "$dir" && mkdir -p "$dir"
  local best_bleu=-1 best_epoch=0 wall=0 e start b
  for e in $(seq 1 "$EPOCHS"); do
    local -a resume=()
    [ "$e" -gt 1 ] && resume=(--resume "$dir/model.h5")
    start=$(now)
    "$BIN/attn-seq2seq" train --data "$DATA" --model "$dir/model.h5" "${opts[@]}" \
      --bidirectional --cell gru --embed-dim "$EMBED" --hidden "$HIDDEN" --dropout "$DROPOUT" \
      --label-smoothing 0.1 --max-tokens "$MAX_TOKENS" --lr 0.001 --clip 1 --epochs "$e" "${resume[@]}" \
      --seed 1 --threads "$THREADS" --quiet >> "$dir/train.log"
    wall=$(awk -v w="$wall" -v s="$start" -v n="$(now)" 'BEGIN { printf "%.1f", w + n - s }')
    "$BIN/attn-seq2seq" translate --model "$dir/model.h5" --data "$DATA" --split valid \
      --threads "$THREADS" --out "$dir/valid.greedy.h5" --quiet > /dev/null
    b=$("$BIN/attn-bleu" --hyp "$dir/valid.greedy.h5" --ref "$DATA" --split valid --quiet | bleu_of)
    echo "$e $b" >> "$dir/valid_bleu.txt"
    echo "$v: epoch $e: valid BLEU $b (greedy); $(sed -n 's/.*, \([0-9]*\) tokens\/s).*/\1/p' "$dir/train.log" | tail -n 1) tokens/s"
    if greater_or_equal "$b" "$best_bleu"; then best_bleu=$b; best_epoch=$e; cp "$dir/model.h5" "$dir/best.h5"; fi
  done
  rm -f "$dir/valid.greedy.h5"

  "$BIN/attn-seq2seq" translate --model "$dir/best.h5" --data "$DATA" --split valid --beam "$BEAM" \
    --threads "$THREADS" --out "$dir/valid.h5" --quiet > /dev/null
  local valid_bleu test_bleu rate
  valid_bleu=$("$BIN/attn-bleu" --hyp "$dir/valid.h5" --ref "$DATA" --split valid --quiet | bleu_of)
  "$BIN/attn-seq2seq" translate --model "$dir/best.h5" --data "$DATA" --split test --beam "$BEAM" \
    --threads "$THREADS" --out "$dir/test.h5" --quiet > /dev/null
  "$BIN/attn-bleu" --hyp "$dir/test.h5" --ref "$DATA" --split test --quiet > "$dir/test.bleu"
  test_bleu=$(bleu_of < "$dir/test.bleu")
  rate=$(sed -n 's/.*, \([0-9]*\) tokens\/s).*/\1/p' "$dir/train.log" | tail -n 1)
  echo "| $v | $(param_count "$dir/best.h5") | $best_epoch / $EPOCHS | $(awk -v w="$wall" 'BEGIN { printf "%.1f min", w / 60 }') | $rate | $valid_bleu | **$test_bleu** |" > "$dir/row.md"
  echo "$v: best epoch $best_epoch; beam $BEAM: valid BLEU $valid_bleu, test BLEU $test_bleu"
}

echo "== train: $VARIANTS; $EPOCHS epochs, $PARALLEL at a time, $THREADS threads each"
for v in $VARIANTS; do
  if [ "$REUSE" = 1 ] && [ -f "$OUT/$v/row.md" ]; then
    echo "$v: reusing the result in $OUT/$v (REUSE=1)"
    continue
  fi
  if [ "$PARALLEL" -gt 1 ]; then
    while [ "$(jobs -rp | wc -l)" -ge "$PARALLEL" ]; do wait -n || true; done
    train_variant "$v" 2>&1 | sed -u "s/^/[$v] /" &
  else
    train_variant "$v"
  fi
done
wait
failed=
for v in $VARIANTS; do [ -f "$OUT/$v/row.md" ] || failed="$failed $v"; done
[ -z "$failed" ] || { echo "seq2seq-multi30k: no result for:$failed (see results/seq2seq-multi30k/<variant>/)" >&2; exit 1; }

{
  echo "# RNN encoder-decoder, Multi30k de -> en (test_2016_flickr)"
  echo
  echo "Bidirectional GRU encoder (embedding $EMBED, $HIDDEN per direction), GRU decoder ($DEC_HIDDEN; dot: $((2 * HIDDEN))),"
  echo "dropout $DROPOUT, label smoothing 0.1, Adam 1e-3, batches of $MAX_TOKENS tokens, $THREADS threads per model"
  echo "($PARALLEL at a time); best epoch by greedy valid BLEU, then beam $BEAM. BLEU: lower-cased, tokenised."
  echo
  echo "| variant | params | best epoch | train wall time | tokens/s | valid BLEU | test BLEU |"
  echo "|---|---|---|---|---|---|---|"
  for v in $VARIANTS; do cat "$OUT/$v/row.md"; done
} > "$OUT/table.md"
cat "$OUT/table.md"

if [ -x "$BIN/attn-plot" ]; then
  series=() labels=()
  for v in $VARIANTS; do series+=(--series "$OUT/$v/model.h5::/metrics/valid_loss"); labels+=(--label "$v"); done
  "$BIN/attn-plot" curve "${series[@]}" "${labels[@]}" --x-title "epoch (0: the first)" --y-title "valid loss (label-smoothed)" \
    --title "RNN encoder-decoder, Multi30k de-en" --markers --out "$OUT/valid_loss.png" --quiet
  case " $VARIANTS " in
    *" concat "*)
      "$BIN/attn-plot" heatmap "$OUT/concat/test.h5" --dataset /attention/alignment --index "$SENTENCE" \
        --x-ids /src --x-vocab /vocab/src --y-ids /predictions --y-vocab /vocab/tgt \
        --x-title German --y-title "English (generated)" --colormap gray \
        --title "concat (Bahdanau) alignment, test sentence $SENTENCE" --out "$OUT/alignment.png" --quiet
      ;;
  esac
fi
