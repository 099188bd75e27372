#!/usr/bin/env bash
# Pre-train, then fine-tune (GPT, BERT) on the bAbI 1k tasks: a small Transformer pre-trained as
# a masked LM (encoder, BERT) and as a language model (decoder, GPT) on the unlabelled stories and
# questions of the bAbI 10k training sets (or on Multi30k's English captions), then fine-tuned as
# a classifier on the 18 single-word answer tasks of the 1k set at once, against the same two
# architectures trained from scratch on the same 1k questions; per-task test error beside the
# memory network's (experiments/memnet-babi). The learning rate and the epoch are chosen on the
# validation split, never on test.
# Chains: attn-data babi-cls -> attn-transformer train --arch lm|mlm -> attn-transformer finetune
# (--from-scratch for the baselines) -> attn-transformer classify -> table.py.
#
# Usage: experiments/finetune-babi/run.sh [BUILD_DIR]
# Environment (defaults in brackets):
#   SEEDS ["1 2 3"; fine-tuning seeds, the first also chooses the learning rate]
#   LRS ["1e-3"; a grid to choose from, e.g. "3e-4 1e-3 2e-3": 1e-3 won every grid measured]
#   INITS ["scratch-mlm mlm scratch-lm lm"; only the bodies these need are pre-trained]
#   EPOCHS [20; fine-tuning epochs, the best on validation kept], PRE_EPOCHS [10]
#   MASK [answers: selective masking, the MLM masks only the words that are class names of the
#     fine-tuning set (people, places, objects, colours, animals: 22% of the story tokens), each
#     with probability MASK_PROB [0.5, chosen on validation from 0.3, 0.5 and 0.8]; random:
#     BERT's 15% of all tokens]
#   PRE_CORPUS [babi: the 10k stories; multi30k: the English captions of Multi30k, in
#     M30K_DIR [../shared/data/multi30k beside the project]]
#   PARALLEL [2; runs at once], THREADS [1 per run], MEMORY [50; statements of a story read]
#   DATA_DIR [../shared/data/babi beside the project], REUSE [0; 1 keeps finished runs and
#     continues an interrupted pre-training], PYTHON [/usr/bin/python3, with h5py]
#   MODEL [the body's options, below], RESULTS [results/finetune-babi]
# Results: $RESULTS/ — data/en.h5 (fine-tuning set), data/pre.h5 (pre-training text),
# pretrain/{lm,mlm}.h5, ft/<init>/lr<LR>.seed<k>.h5 (+ one checkpoint per epoch, log),
# ft/<init>/selection.txt, ft/<init>/seed<k>.test.h5 (test predictions of the chosen epoch),
# table.md.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=$(cd "${1:-$ROOT/build}" && pwd)
BIN=$BUILD/apps
SEEDS=${SEEDS:-1 2 3}
LRS=${LRS:-1e-3}
INITS=${INITS:-scratch-mlm mlm scratch-lm lm}
EPOCHS=${EPOCHS:-20}
PRE_EPOCHS=${PRE_EPOCHS:-10}
PARALLEL=${PARALLEL:-2}
THREADS=${THREADS:-1}
MEMORY=${MEMORY:-50}
DATA_DIR=${DATA_DIR:-$ROOT/../shared/data/babi}
PYTHON=${PYTHON:-/usr/bin/python3}
PRE_CORPUS=${PRE_CORPUS:-babi}
M30K_DIR=${M30K_DIR:-$ROOT/../shared/data/multi30k}
MASK=${MASK:-answers}
MASK_PROB=${MASK_PROB:-0.5}
mkdir -p "${RESULTS:=$ROOT/results/finetune-babi}"
OUT=$(cd "$RESULTS" && pwd)
# The model: small enough for 2 busy cores (about 100k weights); the same for every init.
MODEL=${MODEL:---d-model 64 --heads 4 --d-ff 256 --layers 2 --dropout 0.1}
# Fine-tuning batches of similar lengths, about this many tokens (some 35 questions).
MAX_TOKENS=2048
# shellcheck source=experiments/lib/finetune.sh
source "$ROOT/experiments/lib/finetune.sh"
ft_check_tools finetune-babi
[ -d "$DATA_DIR/en" ] && [ -d "$DATA_DIR/en-10k" ] || { echo "finetune-babi: no bAbI en and en-10k in $DATA_DIR (set DATA_DIR)" >&2; exit 1; }
[ "$PRE_CORPUS" != multi30k ] || [ -f "$M30K_DIR/train.en.gz" ] || { echo "finetune-babi: no train.en.gz in $M30K_DIR (set M30K_DIR)" >&2; exit 1; }
start=$SECONDS
mkdir -p "$OUT/data" "$OUT/pretrain" "$OUT/ft"

echo "== data (attn-data babi-cls; pre-training text: $PRE_CORPUS)"
# Fine-tuning: the 1k questions of the 18 single-word tasks (8 and 19 answer with lists), 10% of
# each task's training questions held out as /valid; the memory network's questions and splits.
babi_cls() { "$BIN/attn-data" babi-cls --task all --memory-size "$MEMORY" --data-dir "$DATA_DIR" --quiet "$@"; }
case $PRE_CORPUS in
  babi)
    babi_cls --set en --out "$OUT/data/en.h5"
    # Pre-training text: the stories and questions of the 10k training files (task 3 has none
    # here), in the fine-tuning vocabulary. Only its /train and /valid are read, and never its
    # labels: the mlm reads /src and the segments, the lm "story [SEP] question". The 10k test
    # files are the 1k ones, and they are not read.
    babi_cls --set en-10k --vocab-from "$OUT/data/en.h5" --out "$OUT/data/pre.h5"
    PRE_OPTIONS= ;;
  multi30k)
    # Pre-training text: the 29,000 English training captions of Multi30k, general English about
    # pictures, with the last 1,000 held out. One vocabulary holds them and every bAbI word, so
    # that neither text loses words to <unk>; the bAbI questions are encoded in it.
    babi_cls --set en --out "$OUT/data/babi-words.h5"
    { zcat "$M30K_DIR/train.en.gz"; "$PYTHON" "$FT_HELP" words "$OUT/data/babi-words.h5" | paste -sd ' '; } \
      >"$OUT/data/joint.txt"
    "$BIN/attn-data" text --in "$OUT/data/joint.txt" --lowercase --out "$OUT/data/joint.h5" --quiet
    babi_cls --set en --vocab-from "$OUT/data/joint.h5" --out "$OUT/data/en.h5"
    "$BIN/attn-data" text --in "$M30K_DIR/train.en.gz" --lowercase --valid-n 1000 --vocab-from "$OUT/data/joint.h5" \
      --out "$OUT/data/pre.h5" --quiet
    # Captions are short: room for the longest question's story (the positions of the body), and
    # batches of some 25 captions, so that an epoch is about 1,100 steps (the stories' is 1,859)
    # and the 1,000 warm-up steps are the first of 11,000, not all of them.
    PRE_OPTIONS="--max-positions 512 --max-tokens 512" ;;
  *) echo "finetune-babi: PRE_CORPUS must be babi or multi30k, got '$PRE_CORPUS'" >&2; exit 2 ;;
esac

case $MASK in
  random) MLM_OPTIONS= ;;
  # The class names only (their words, never which question they answer): every prediction of
  # the MLM is then an entity that the story may or may not determine ("John dropped the ...").
  answers) "$PYTHON" "$FT_HELP" labels "$OUT/data/en.h5" >"$OUT/data/answer-words.txt"
           MLM_OPTIONS="--mask-words $OUT/data/answer-words.txt --mask-prob $MASK_PROB" ;;
  *) echo "finetune-babi: MASK must be random or answers, got '$MASK'" >&2; exit 2 ;;
esac

# Only the bodies INITS fine-tune (a from-scratch init reads its pre-trained model's shapes).
archs=$(for init in $INITS; do ft_arch "$init"; done | sort -u)
echo "== pre-training (attn-transformer train --arch $(echo "$archs" | paste -sd ,); $PRE_EPOCHS epochs)"
printf '%s\n' "$archs" | xargs -P "$PARALLEL" -I{} bash -c "ft_pretrain {} $OUT/data/pre.h5"
# finetune INIT LR SEED: one fine-tuning run on the 1k questions.
finetune() { ft_run "$OUT/data/en.h5" "$OUT/ft/$1" "$@" "$EPOCHS"; }
export -f finetune
export EPOCHS

seeds=($SEEDS)
first=${seeds[0]}
echo "== learning rate, chosen on /valid with seed $first: $LRS"
for init in $INITS; do for lr in $LRS; do echo "$init $lr $first"; done; done |
  xargs -r -P "$PARALLEL" -n 3 bash -c 'finetune "$0" "$1" "$2"'
# The learning rate of the least validation error at any epoch (the epoch is chosen the same way
# below), per init.
declare -A chosen
for init in $INITS; do
  # shellcheck disable=SC2086
  chosen[$init]=$(ft_choose_lr "$OUT/ft/$init" "$first" $LRS)
  echo "$init: lr ${chosen[$init]} ($(tr '\n' ';' <"$OUT/ft/$init/selection.txt" | sed "s|$OUT/ft/$init/||g"))"
done

echo "== the other seeds at the chosen learning rates: ${seeds[*]:1}"
for init in $INITS; do for seed in "${seeds[@]:1}"; do echo "$init ${chosen[$init]} $seed"; done; done |
  xargs -r -P "$PARALLEL" -n 3 bash -c 'finetune "$0" "$1" "$2"'

echo "== test predictions of every run's epoch of least validation error"
for init in $INITS; do
  for seed in "${seeds[@]}"; do ft_classify "$OUT/data/en.h5" "$OUT/ft/$init" "$init" "${chosen[$init]}" "$seed"; done
done | tee "$OUT/ft/chosen.txt"

echo "== table"
"$PYTHON" "$ROOT/experiments/finetune-babi/table.py" table "$OUT" --data "$OUT/data/en.h5" --inits "$INITS" --seeds "$SEEDS" |
  tee "$OUT/table.md"
echo "finetune-babi: $((SECONDS - start)) s wall time"
