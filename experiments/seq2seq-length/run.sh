#!/usr/bin/env bash
# BLEU by source-sentence length with and without attention: the shape of Bahdanau, Cho &
# Bengio (2015), Figure 2, where the encoder-decoder without attention (RNNencdec) degrades as
# sentences grow and the attention model (RNNsearch) holds. The models are the `none` and
# `concat` models of experiments/seq2seq-multi30k (trained through that script when absent,
# with its environment: EPOCHS, THREADS, ...). Multi30k sentences are short, so the evaluation
# set is test_2016_flickr and the validation set together (2,014 sentences), which gives the
# long-sentence buckets a few dozen sentences each. Chains: attn-data parallel (test + valid as
# one split, with the vocabularies of the training data) -> attn-seq2seq translate (beam) ->
# attn-bleu --buckets -> attn-plot curve.
#
# Usage: experiments/seq2seq-length/run.sh [BUILD_DIR]
# Environment (defaults in brackets):
#   BUCKETS   inclusive upper bounds of the source-length buckets; longer sources form one more
#             bucket ["8,10,12,14,16,18,20,23"]
#   SETS      which Multi30k files to score ["test_2016_flickr val"]
#   BEAM [5]  THREADS [2]  ATTN_DATA_DIR (the shared data folder; the files are in its multi30k/)
# Results: results/seq2seq-length/ — eval.h5 (the evaluation set), <variant>.pred.h5,
# <variant>.bleu.h5 (attn-bleu --out), <variant>.bleu.txt, table.md, bleu_by_length.png.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=$(cd "${1:-$ROOT/build}" && pwd)
BIN=$BUILD/apps
BUCKETS=${BUCKETS:-8,10,12,14,16,18,20,23}
SETS=${SETS:-"test_2016_flickr val"}
BEAM=${BEAM:-5}
THREADS=${THREADS:-2}
DATA_DIR=${ATTN_DATA_DIR:-$ROOT/../shared/data}/multi30k
MODELS=$ROOT/results/seq2seq-multi30k
OUT=$ROOT/results/seq2seq-length
export OMP_WAIT_POLICY=PASSIVE
mkdir -p "$OUT"

for tool in attn-data attn-seq2seq attn-bleu; do
  [ -x "$BIN/$tool" ] || { echo "seq2seq-length: $BIN/$tool is missing; build first (make -f Makefile.scripts build)" >&2; exit 1; }
done
[ -f "$DATA_DIR/train.de.gz" ] || { echo "seq2seq-length: no Multi30k files in $DATA_DIR (set ATTN_DATA_DIR)" >&2; exit 1; }

if [ ! -f "$MODELS/none/best.h5" ] || [ ! -f "$MODELS/concat/best.h5" ]; then
  echo "== the none and concat models are missing: training them with experiments/seq2seq-multi30k"
  VARIANTS="none concat" "$ROOT/experiments/seq2seq-multi30k/run.sh" "$BUILD"
fi

echo "== evaluation set: $SETS as one split, vocabularies of the Multi30k training data"
for lang in de en; do
  for set in $SETS; do
    [ -f "$DATA_DIR/$set.$lang.gz" ] || { echo "seq2seq-length: no $DATA_DIR/$set.$lang.gz" >&2; exit 1; }
    gzip -dc "$DATA_DIR/$set.$lang.gz"
  done > "$OUT/eval.$lang"
done
# The training data, tokeniser, --min-freq and --max-len of the models' data set, so the
# vocabularies are the models' (attn-seq2seq translate checks that they are).
setting() { "$BIN/attn-data" info --data "$MODELS/data.h5" | awk -v k="$1" '$1 == k && $2 == "=" { print $3 }'; }
"$BIN/attn-data" parallel --src-file "$DATA_DIR/train.de.gz" --tgt-file "$DATA_DIR/train.en.gz" --valid-n 0 \
  --test-src-file "$OUT/eval.de" --test-tgt-file "$OUT/eval.en" --lowercase --min-freq "$(setting min_freq)" \
  --max-len "$(setting max_len)" --out "$OUT/eval.h5" --quiet
rm -f "$OUT/eval.de" "$OUT/eval.en"

bleu_of() {   # attn-bleu's score line -> the number after "BLEU = "
  sed -n 's/^BLEU = \([0-9.]*\),.*/\1/p'
}

for v in none concat; do
  echo "== $v: translate (beam $BEAM) and score by source length"
  "$BIN/attn-seq2seq" translate --model "$MODELS/$v/best.h5" --data "$OUT/eval.h5" --split test --beam "$BEAM" \
    --threads "$THREADS" --out "$OUT/$v.pred.h5" --quiet > /dev/null
  "$BIN/attn-bleu" --hyp "$OUT/$v.pred.h5" --ref "$OUT/eval.h5" --split test --buckets "$BUCKETS" \
    --out "$OUT/$v.bleu.h5" --quiet | tee "$OUT/$v.bleu.txt"
done

# The two bucket tables side by side: rows 3.. of attn-bleu's output are the buckets.
{
  echo "# BLEU by source length, Multi30k de -> en ($SETS; beam $BEAM)"
  echo
  echo "| source length | sentences | no attention (none) | attention (concat) |"
  echo "|---|---|---|---|"
  paste <(tail -n +3 "$OUT/none.bleu.txt") <(tail -n +3 "$OUT/concat.bleu.txt") |
    awk '{ printf "| %s | %s | %s | %s |\n", $1, $2, $3, $9 }'
  echo "| all | $(awk 'NR > 2 { n += $2 } END { print n }' "$OUT/none.bleu.txt") | $(bleu_of < "$OUT/none.bleu.txt") | $(bleu_of < "$OUT/concat.bleu.txt") |"
} > "$OUT/table.md"
cat "$OUT/table.md"

if [ -x "$BIN/attn-plot" ]; then
  "$BIN/attn-plot" curve --series "$OUT/none.bleu.h5::/by_length/upper:/by_length/bleu" \
    --series "$OUT/concat.bleu.h5::/by_length/upper:/by_length/bleu" \
    --label "no attention (RNNencdec)" --label "attention (RNNsearch, concat)" --markers \
    --x-title "source sentence length (bucket's longest, tokens)" --y-title "BLEU" \
    --title "Multi30k de-en: BLEU by source length (cf. Bahdanau et al. 2015, Fig. 2)" \
    --out "$OUT/bleu_by_length.png" --quiet
fi
