#!/usr/bin/env bash
# Seed corpora for the harnesses of tests/fuzz, made by the project's own tools (the regular
# build): small data sets, one-step models of every family, tool outputs, text, bAbI, IDX and
# --config files. A harness whose first byte picks a reader gets that byte in front of each seed.
# Usage: tests/fuzz/seeds.sh BUILD_DIR CORPUS_DIR [DATA_DIR]
set -euo pipefail
BIN=$(cd "$1" && pwd)/apps
CORPUS=$2
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
DATA=${3:-$ROOT/../shared/data}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$CORPUS"/{hdf5_image,data_sets,model_files,outputs,text_importers,config}
q=--quiet

# seed HARNESS NAME SELECTOR FILE: FILE as a seed of HARNESS, behind the byte SELECTOR (- : none).
seed() {
  if [ "$3" = - ]; then cp "$4" "$CORPUS/$1/$2"; else { printf "\\x$(printf %02x "$3")"; cat "$4"; } >"$CORPUS/$1/$2"; fi
}

cd "$work"
# Data sets, a few examples each.
"$BIN/attn-data" reverse --n 12 --valid-n 4 --test-n 4 --out rev.h5 $q >/dev/null
"$BIN/attn-data" copy --n 6 --valid-n 2 --test-n 2 --max-len 4 --out copy.h5 $q >/dev/null
printf '%s\n' 'a man rides a horse .' 'two dogs play .' 'a girl reads a book .' 'people walk in a park .' \
  'a cat sleeps .' 'the sun is up .' 'a boy eats .' 'the dog runs .' >en.txt
printf '%s\n' 'ein mann reitet ein pferd .' 'zwei hunde spielen .' 'ein mädchen liest ein buch .' \
  'leute gehen in einem park .' 'eine katze schläft .' 'die sonne ist auf .' 'ein junge isst .' \
  'der hund rennt .' >de.txt
"$BIN/attn-data" pairs --src-file de.txt --tgt-file en.txt --valid-n 2 --test-n 2 --out pairs.h5 $q >/dev/null
"$BIN/attn-data" text --in en.txt --valid-n 1 --vocab-from pairs.h5 --out text.h5 $q >/dev/null
"$BIN/attn-data" parallel --src-file de.txt --tgt-file en.txt --valid-n 1 --test-n 1 --out par.h5 $q 2>/dev/null ||
  cp rev.h5 par.h5
mkdir -p babi/en
if [ -d "$DATA/babi/en" ]; then
  for f in "$DATA"/babi/en/qa1_*; do head -n 40 "$f" >"babi/en/$(basename "$f")"; done
  "$BIN/attn-data" babi --task 1 --data-dir babi --out qa.h5 $q >/dev/null
  seed data_sets qa 2 qa.h5
  seed text_importers babi 2 "babi/en/$(ls babi/en | head -n 1)"
fi
if [ -f "$DATA/mnist/t10k-images-idx3-ubyte.gz" ] || [ -f "$DATA/mnist/t10k-images-idx3-ubyte" ]; then
  "$BIN/attn-data" mnist-strips --data-dir "$DATA/mnist" --n 4 --valid-n 2 --test-n 2 --max-digits 2 --width 64 \
    --out strips.h5 $q >/dev/null
  seed data_sets strips 3 strips.h5
fi
seed data_sets reverse 0 rev.h5
seed data_sets text 0 text.h5
seed data_sets copy 1 copy.h5
seed data_sets pairs 4 pairs.h5
# Splits cut down by h5py as a filter script leaves them (issue 51): an empty /train, a one-row one
# and one-step rows (tests/conformance/cut_split.py; skipped without h5py).
cut() { "${PYTHON:-/usr/bin/python3}" "$ROOT/tests/conformance/cut_split.py" "$@" 2>/dev/null; }
for s in "reverse 0 rev" "copy 1 copy" "pairs 4 pairs"; do
  set -- $s
  cut "$3.h5" "$3-empty.h5" train --rows 0 && seed data_sets "$1-empty-train" "$2" "$3-empty.h5"
  cut "$3.h5" "$3-one.h5" train --rows 1 && seed data_sets "$1-one-row" "$2" "$3-one.h5"
  cut "$3.h5" "$3-step.h5" train --one-step && seed data_sets "$1-one-step" "$2" "$3-step.h5"
done

# One-step models of every family of cmake/Families.cmake, in its order (the first byte of a
# fuzz_model_files input picks the family by that index), each on its conformance recipe
# (tests/families/<family>/recipe.txt); and a fine-tuned classifier, the transformer family's
# other kind.
T="--steps 1 $q --threads 1"
families=$(sed -n 's/^set(ATTN_FAMILIES \(.*\))$/\1/p' "$ROOT/cmake/Families.cmake")
recipe() { sed -n "s/^$2: //p" "$ROOT/tests/families/$1/recipe.txt"; }
k=0
for f in $families; do
  needs=$(recipe "$f" needs)
  if [ -z "$needs" ] || [ -d "$DATA/$needs" ]; then
    data=$(recipe "$f" data)
    eval "\"\$BIN/attn-data\" ${data//\{shared\}/\"\$DATA\"} --out $f.data.h5 $q" >/dev/null
    eval "\"\$BIN/attn-$f\" train --data $f.data.h5 --model $f.h5 $(recipe "$f" train) $T"
    seed model_files "$f" "$k" "$f.h5"
  fi
  [ "$f" = transformer ] && transformer_index=$k
  k=$((k + 1))
done
"$BIN/attn-transformer" train --arch lm --data text.h5 --model lm.h5 --d-model 8 --heads 2 --d-ff 16 --layers 1 $T
"$BIN/attn-transformer" finetune --init lm.h5 --data pairs.h5 --model cls.h5 $T
seed model_files classifier "$transformer_index" cls.h5

# Outputs read back down a pipeline.
"$BIN/attn-transformer" translate --model transformer.h5 --data transformer.data.h5 --out tr.h5 --dump-attention $q \
  --threads 1
"$BIN/attn-ntm" run --model ntm.h5 --data ntm.data.h5 --out run.h5 $q --threads 1
seed outputs hypotheses 0 tr.h5
seed outputs references 1 rev.h5
seed outputs attention 2 tr.h5
seed outputs weightings 2 run.h5
for f in rev transformer tr run; do seed hdf5_image "$f" - "$f.h5"; done

# Text, as attn-data imports it.
seed text_importers lines 0 en.txt
gzip -c en.txt >en.txt.gz
seed text_importers gzip 0 en.txt.gz
cat de.txt en.txt >pair.txt
seed text_importers pair 1 pair.txt
# IDX: two 3 x 3 images and two labels, as MNIST's files are laid out.
printf '\x00\x00\x08\x03\x00\x00\x00\x02\x00\x00\x00\x03\x00\x00\x00\x03\x00\x10\x20\x30\x40\x50\x60\x70\x80\x90\xa0\xb0\xc0\xd0\xe0\xf0\xff\x01' >img.idx
printf '\x00\x00\x08\x01\x00\x00\x00\x02\x07\x02' >lbl.idx
seed text_importers idx-images 3 img.idx
seed text_importers idx-labels 4 lbl.idx

# --config files.
printf 'epochs = 3\nlr = 0.01\nname = run one\n# a comment\nflag = true\n' >a.ini
printf '[section]\nseed = 7\nthreads = 1\nbatch-size = 16\nratio = 1e-3\n' >b.ini
seed config plain - a.ini
seed config section - b.ini
echo "seeds: $(find "$CORPUS" -type f | wc -l) files in $CORPUS"
