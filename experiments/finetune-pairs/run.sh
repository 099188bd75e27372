#!/usr/bin/env bash
# BERT's and GPT's sentence-pair task on real text: "is B the English translation of the German
# sentence A?" on Multi30k (attn-data pairs: every line pair once with its translation, once with
# another line's), by a small Transformer fine-tuned after pre-training as a masked LM (encoder,
# BERT) or a language model (decoder, GPT) on the monolingual training sentences, against the same
# two architectures trained from scratch; with all 29,000 training pairs and with the first
# SMALL_LINES of them. Learning rate and epoch chosen on Multi30k val, accuracy on test_2016_flickr.
# Chains: attn-data pairs, text -> attn-transformer train --arch mlm|lm -> attn-transformer
# finetune (--from-scratch for the baselines) -> attn-transformer classify -> table.py.
#
# Usage: experiments/finetune-pairs/run.sh [BUILD_DIR]
# Environment (defaults in brackets): SEEDS ["1 2 3"; fine-tuning seeds, the first also chooses the
# learning rate], LRS ["3e-4 1e-3"], INITS ["scratch-mlm mlm scratch-lm lm"], SIZES ["full small"],
# SMALL_LINES [2900; 10% of the training pairs], EPOCHS_FULL [3], EPOCHS_SMALL [15], PRE_EPOCHS [4],
# PARALLEL [2], THREADS [1], DATA_DIR [../shared/data/multi30k beside the project], REUSE [0],
# PYTHON [/usr/bin/python3, with h5py].
# Results: results/finetune-pairs/ — data/{full,small}.h5 (pairs), data/mono.h5 (pre-training text),
# pretrain/{mlm,lm}.h5, <size>/<init>/lr<LR>.seed<k>.h5 (+ a checkpoint per epoch), <size>/<init>/
# seed<k>.test.h5, table.md.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=$(cd "${1:-$ROOT/build}" && pwd)
BIN=$BUILD/apps
SEEDS=${SEEDS:-1 2 3}
LRS=${LRS:-3e-4 1e-3}
INITS=${INITS:-scratch-mlm mlm scratch-lm lm}
SIZES=${SIZES:-full small}
SMALL_LINES=${SMALL_LINES:-2900}
EPOCHS_FULL=${EPOCHS_FULL:-3}
EPOCHS_SMALL=${EPOCHS_SMALL:-15}
PRE_EPOCHS=${PRE_EPOCHS:-4}
PARALLEL=${PARALLEL:-2}
THREADS=${THREADS:-1}
DATA_DIR=${DATA_DIR:-$ROOT/../shared/data/multi30k}
PYTHON=${PYTHON:-/usr/bin/python3}
OUT=$ROOT/results/finetune-pairs
MAX_TOKENS=2048
MODEL="--d-model 64 --heads 4 --d-ff 256 --layers 2 --dropout 0.1"
# shellcheck source=experiments/lib/finetune.sh
source "$ROOT/experiments/lib/finetune.sh"
ft_check_tools finetune-pairs
[ -f "$DATA_DIR/train.de.gz" ] || { echo "finetune-pairs: no Multi30k files in $DATA_DIR (set DATA_DIR)" >&2; exit 1; }
start=$SECONDS
mkdir -p "$OUT/data" "$OUT/pretrain"

echo "== data (attn-data pairs, text)"
# full: Multi30k's train, val, test_2016_flickr, de | en, lower-cased, tokens seen twice in train.
"$BIN/attn-data" pairs --multi30k "$DATA_DIR" --src de --tgt en --lowercase --out "$OUT/data/full.h5" --quiet
# small: the first SMALL_LINES training pairs, the same val and test lines (held out as the last
# 1,014 + 1,000 lines of the files given), in full's vocabulary.
tmp=$OUT/data/tmp
mkdir -p "$tmp"
for l in de en; do
  { zcat "$DATA_DIR/train.$l.gz" | sed -n "1,${SMALL_LINES}p"; zcat "$DATA_DIR/val.$l.gz" "$DATA_DIR/test_2016_flickr.$l.gz"; } >"$tmp/small.$l"
done
"$BIN/attn-data" pairs --src-file "$tmp/small.de" --tgt-file "$tmp/small.en" --valid-n "$(zcat "$DATA_DIR/val.de.gz" | wc -l)" \
  --test-n "$(zcat "$DATA_DIR/test_2016_flickr.de.gz" | wc -l)" --lowercase --vocab-from "$OUT/data/full.h5" \
  --out "$OUT/data/small.h5" --quiet
# Pre-training text: the German and the English training sentences, each its own sequence (no
# pair is ever shown together), interleaved so that the 1,000 held-out lines mix both languages.
paste -d '\n' <(zcat "$DATA_DIR/train.de.gz") <(zcat "$DATA_DIR/train.en.gz") >"$tmp/mono.txt"
"$BIN/attn-data" text --in "$tmp/mono.txt" --lowercase --vocab-from "$OUT/data/full.h5" --valid-n 1000 \
  --out "$OUT/data/mono.h5" --quiet
rm -rf "$tmp"

echo "== pre-training (attn-transformer train --arch mlm, lm; $PRE_EPOCHS epochs)"
printf '%s\n' mlm lm | xargs -P "$PARALLEL" -I{} bash -c "ft_pretrain {} $OUT/data/mono.h5"
# finetune SIZE INIT LR SEED: one run on SIZE's pairs.
finetune() {
  local epochs=$EPOCHS_FULL
  [ "$1" = small ] && epochs=$EPOCHS_SMALL
  ft_run "$OUT/data/$1.h5" "$OUT/$1/$2" "$2" "$3" "$4" "$epochs"
}
export -f finetune
export EPOCHS_FULL EPOCHS_SMALL

seeds=($SEEDS)
first=${seeds[0]}
echo "== learning rate, chosen on val with seed $first: $LRS"
for size in $SIZES; do for init in $INITS; do for lr in $LRS; do echo "$size $init $lr $first"; done; done; done |
  xargs -r -P "$PARALLEL" -n 4 bash -c 'finetune "$0" "$1" "$2" "$3"'
declare -A chosen
for size in $SIZES; do
  for init in $INITS; do
    # shellcheck disable=SC2086
    chosen[$size.$init]=$(ft_choose_lr "$OUT/$size/$init" "$first" $LRS)
  done
done

echo "== the other seeds at the chosen learning rates: ${seeds[*]:1}"
for size in $SIZES; do for init in $INITS; do for seed in "${seeds[@]:1}"; do echo "$size $init ${chosen[$size.$init]} $seed"; done; done; done |
  xargs -r -P "$PARALLEL" -n 4 bash -c 'finetune "$0" "$1" "$2" "$3"'

echo "== test accuracy of every run's epoch of least validation error"
for size in $SIZES; do
  for init in $INITS; do
    for seed in "${seeds[@]}"; do
      ft_classify "$OUT/data/$size.h5" "$OUT/$size/$init" "$init" "${chosen[$size.$init]}" "$seed"
    done
  done
done | tee "$OUT/chosen.txt"

echo "== table"
"$PYTHON" "$ROOT/experiments/finetune-pairs/table.py" "$OUT" --sizes "$SIZES" --inits "$INITS" --seeds "$SEEDS" | tee "$OUT/table.md"
echo "finetune-pairs: $((SECONDS - start)) s wall time"
