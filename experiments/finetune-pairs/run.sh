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
HELP=$ROOT/experiments/finetune-babi/table.py   # its `steps` and `select` verbs
MAX_TOKENS=2048
MODEL="--d-model 64 --heads 4 --d-ff 256 --layers 2 --dropout 0.1"
export OMP_WAIT_POLICY=PASSIVE
for tool in attn-data attn-transformer; do
  [ -x "$BIN/$tool" ] || { echo "finetune-pairs: $BIN/$tool is missing; build first (make -f Makefile.scripts build)" >&2; exit 1; }
done
[ -f "$DATA_DIR/train.de.gz" ] || { echo "finetune-pairs: no Multi30k files in $DATA_DIR (set DATA_DIR)" >&2; exit 1; }
"$PYTHON" -c 'import h5py' 2>/dev/null || { echo "finetune-pairs: $PYTHON cannot import h5py (make -f Makefile.scripts deps)" >&2; exit 1; }
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
pretrain() {
  local arch=$1
  if [ "${REUSE:-0}" = 1 ] && [ -f "$OUT/pretrain/$arch.h5" ]; then return; fi
  local t0=$SECONDS
  # shellcheck disable=SC2086
  "$BIN/attn-transformer" train --arch "$arch" --data "$OUT/data/mono.h5" --model "$OUT/pretrain/$arch.h5" \
    $MODEL --epochs "$PRE_EPOCHS" --warmup 1000 --seed 1 --threads "$THREADS" --quiet >"$OUT/pretrain/$arch.log"
  echo "pretrain $arch: $(tail -n 1 "$OUT/pretrain/$arch.log") [$((SECONDS - t0)) s]"
}
# finetune SIZE INIT LR SEED: one run, a checkpoint after every epoch.
finetune() {
  local size=$1 init=$2 lr=$3 seed=$4
  local dir=$OUT/$size/$init opts="" epochs=$EPOCHS_FULL arch=mlm
  local model=$dir/lr$lr.seed$seed.h5
  [ "$size" = small ] && epochs=$EPOCHS_SMALL
  if [ "${REUSE:-0}" = 1 ] && [ -f "$model" ]; then return; fi
  case $init in
    scratch-mlm) opts="--init $OUT/pretrain/mlm.h5 --from-scratch" ;;
    mlm) opts="--init $OUT/pretrain/mlm.h5" ;;
    scratch-lm) opts="--init $OUT/pretrain/lm.h5 --from-scratch"; arch=lm ;;
    lm) opts="--init $OUT/pretrain/lm.h5"; arch=lm ;;
    *) echo "finetune-pairs: unknown init '$init'" >&2; exit 1 ;;
  esac
  local steps t0=$SECONDS
  steps=$("$PYTHON" "$HELP" steps "$OUT/data/$size.h5" "$arch" "$MAX_TOKENS")
  mkdir -p "$dir"
  rm -f "$dir/lr$lr.seed$seed".step*.h5
  # shellcheck disable=SC2086
  "$BIN/attn-transformer" finetune $opts --data "$OUT/data/$size.h5" --model "$model" --lr "$lr" --epochs "$epochs" \
    --max-tokens "$MAX_TOKENS" --checkpoint-every "$steps" --keep-checkpoints "$epochs" --seed "$seed" \
    --threads "$THREADS" --quiet >"$dir/lr$lr.seed$seed.log"
  echo "finetune $size $init lr $lr seed $seed: $(tail -n 1 "$dir/lr$lr.seed$seed.log" | sed 's/ -> .*//') [$((SECONDS - t0)) s]"
}
export -f pretrain finetune
export BIN OUT MODEL PRE_EPOCHS EPOCHS_FULL EPOCHS_SMALL THREADS REUSE PYTHON HELP MAX_TOKENS
printf '%s\n' mlm lm | xargs -P "$PARALLEL" -I{} bash -c 'pretrain {}'

seeds=($SEEDS)
first=${seeds[0]}
echo "== learning rate, chosen on val with seed $first: $LRS"
for size in $SIZES; do for init in $INITS; do for lr in $LRS; do echo "$size $init $lr $first"; done; done; done |
  xargs -r -P "$PARALLEL" -n 4 bash -c 'finetune "$0" "$1" "$2" "$3"'
declare -A chosen
for size in $SIZES; do
  for init in $INITS; do
    # shellcheck disable=SC2046
    "$PYTHON" "$HELP" select $(for lr in $LRS; do echo "$OUT/$size/$init/lr$lr.seed$first.h5"; done) >"$OUT/$size/$init/selection.txt"
    chosen[$size.$init]=$(sort -k3,3g -s "$OUT/$size/$init/selection.txt" | head -n 1 | sed -E 's|.*/lr([^ ]*)\.seed[0-9]+\.h5 .*|\1|')
  done
done

echo "== the other seeds at the chosen learning rates: ${seeds[*]:1}"
for size in $SIZES; do for init in $INITS; do for seed in "${seeds[@]:1}"; do echo "$size $init ${chosen[$size.$init]} $seed"; done; done; done |
  xargs -r -P "$PARALLEL" -n 4 bash -c 'finetune "$0" "$1" "$2" "$3"'

echo "== test accuracy of every run's epoch of least validation error"
for size in $SIZES; do
  for init in $INITS; do
    arch=mlm
    [ "${init#scratch-}" = lm ] && arch=lm
    steps=$("$PYTHON" "$HELP" steps "$OUT/data/$size.h5" "$arch" "$MAX_TOKENS")
    for seed in "${seeds[@]}"; do
      model=$OUT/$size/$init/lr${chosen[$size.$init]}.seed$seed.h5
      read -r _ epoch verr < <("$PYTHON" "$HELP" select "$model")
      ckpt=$(printf '%s.step%09d.h5' "${model%.h5}" $((epoch * steps)))
      [ -f "$ckpt" ] || ckpt=$model   # the last epoch: the model itself
      "$BIN/attn-transformer" classify --model "$ckpt" --data "$OUT/data/$size.h5" --split test \
        --out "$OUT/$size/$init/seed$seed.test.h5" --threads "$THREADS" --quiet
      echo "$size $init seed $seed: lr ${chosen[$size.$init]}, epoch $epoch (valid error $verr)"
    done
  done
done | tee "$OUT/chosen.txt"

echo "== table"
"$PYTHON" "$ROOT/experiments/finetune-pairs/table.py" "$OUT" --sizes "$SIZES" --inits "$INITS" --seeds "$SEEDS" | tee "$OUT/table.md"
echo "finetune-pairs: $((SECONDS - start)) s wall time"
