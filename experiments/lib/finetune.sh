# Shared by experiments/finetune-*/run.sh (sourced, not run): pre-training a small Transformer as
# a masked LM and as an LM, fine-tuning it (or the same body from scratch) with a checkpoint per
# epoch, choosing the learning rate and the epoch on validation, and classifying test with the
# chosen checkpoint. Each run.sh sets BIN, OUT, MODEL, MAX_TOKENS, PRE_EPOCHS, THREADS, PYTHON
# (and REUSE=1 to keep finished runs), makes its data, and calls these.

FT_HELP=$ROOT/experiments/lib/finetune.py   # its `steps` and `select` verbs
# shellcheck source=experiments/lib/reuse.sh
source "$ROOT/experiments/lib/reuse.sh"
export OMP_WAIT_POLICY=PASSIVE

# ft_check_tools NAME: the tools and h5py are there, or exit naming the experiment.
ft_check_tools() {
  for tool in attn-data attn-transformer; do
    [ -x "$BIN/$tool" ] || { echo "$1: $BIN/$tool is missing; build first (make -f Makefile.scripts build)" >&2; exit 1; }
  done
  "$PYTHON" -c 'import h5py' 2>/dev/null || { echo "$1: $PYTHON cannot import h5py (make -f Makefile.scripts deps)" >&2; exit 1; }
}

# ft_pretrain ARCH DATA: $OUT/pretrain/ARCH.h5, trained on DATA for PRE_EPOCHS epochs with the
# extra options PRE_OPTIONS (and, for an mlm, MLM_OPTIONS: its masking), a checkpoint every 1,000
# steps: with REUSE=1 an interrupted pre-training continues from its newest checkpoint, to the
# same bits as an uninterrupted one.
ft_pretrain() {
  local arch=$1 data=$2 t0=$SECONDS model=$OUT/pretrain/$1.h5 log=$OUT/pretrain/$1.log resume=()
  local extra=${PRE_OPTIONS:-}
  if [ "$arch" = mlm ]; then extra="$extra ${MLM_OPTIONS:-}"; fi
  case $(reuse_plan "$model" "$log") in keep) return ;; resume) resume=(--resume) ;; esac
  # shellcheck disable=SC2086
  "$BIN/attn-transformer" train --arch "$arch" --data "$data" --model "$model" "${resume[@]}" \
    $MODEL $extra --epochs "$PRE_EPOCHS" --warmup 1000 --seed 1 --threads "$THREADS" \
    --checkpoint-every 1000 --quiet >>"$log"
  echo "pretrain $arch: $(tail -n 1 "$log") [$((SECONDS - t0)) s]"
}

# ft_arch INIT: the body's architecture (mlm or lm) of an init.
ft_arch() {
  case $1 in scratch-lm | lm | lm-aux) echo lm ;; *) echo mlm ;; esac
}

# ft_steps DATA INIT: optimizer steps per epoch (the same every epoch): the checkpoint period.
ft_steps() {
  "$PYTHON" "$FT_HELP" steps "$1" "$(ft_arch "$2")" "$MAX_TOKENS"
}

# ft_run DATA DIR INIT LR SEED EPOCHS: DIR/lr<LR>.seed<SEED>.h5 and a checkpoint per epoch.
ft_run() {
  local data=$1 dir=$2 init=$3 lr=$4 seed=$5 epochs=$6 opts t0=$SECONDS
  local model=$dir/lr$lr.seed$seed.h5
  if [ "${REUSE:-0}" = 1 ] && [ -f "$model" ]; then return; fi
  case $init in
    scratch-mlm | scratch-lm) opts="--init $OUT/pretrain/$(ft_arch "$init").h5 --from-scratch" ;;
    mlm | lm) opts="--init $OUT/pretrain/$init.h5" ;;
    lm-aux) opts="--init $OUT/pretrain/lm.h5 --aux-lm 0.5" ;;
    *) echo "$OUT: unknown init '$init'" >&2; exit 1 ;;
  esac
  mkdir -p "$dir"
  rm -f "$dir/lr$lr.seed$seed".step*.h5
  # shellcheck disable=SC2086
  "$BIN/attn-transformer" finetune $opts --data "$data" --model "$model" --lr "$lr" --epochs "$epochs" \
    --max-tokens "$MAX_TOKENS" --checkpoint-every "$(ft_steps "$data" "$init")" --keep-checkpoints "$epochs" \
    --seed "$seed" --threads "$THREADS" --quiet >"$dir/lr$lr.seed$seed.log"
  echo "finetune $dir lr $lr seed $seed: $(tail -n 1 "$dir/lr$lr.seed$seed.log" | sed 's/ -> .*//') [$((SECONDS - t0)) s]" |
    sed "s|$OUT/||"
}

# ft_choose_lr DIR SEED LR...: the learning rate of the least validation error at any epoch among
# DIR's runs of SEED (the list in DIR/selection.txt).
ft_choose_lr() {
  local dir=$1 seed=$2
  shift 2
  # shellcheck disable=SC2046
  "$PYTHON" "$FT_HELP" select $(for lr in "$@"; do echo "$dir/lr$lr.seed$seed.h5"; done) >"$dir/selection.txt"
  sort -k3,3g -s "$dir/selection.txt" | head -n 1 | sed -E 's|.*/lr([^ ]*)\.seed[0-9]+\.h5 .*|\1|'
}

# ft_classify DATA DIR INIT LR SEED: test predictions of the run's epoch of least validation error
# in DIR/seed<SEED>.test.h5.
ft_classify() {
  local data=$1 dir=$2 init=$3 lr=$4 seed=$5 epoch verr ckpt
  local model=$dir/lr$lr.seed$seed.h5
  read -r _ epoch verr < <("$PYTHON" "$FT_HELP" select "$model")
  ckpt=$(printf '%s.step%09d.h5' "${model%.h5}" $((epoch * $(ft_steps "$data" "$init"))))
  [ -f "$ckpt" ] || ckpt=$model   # the last epoch: the model itself
  "$BIN/attn-transformer" classify --model "$ckpt" --data "$data" --split test \
    --out "$dir/seed$seed.test.h5" --threads "$THREADS" --quiet
  echo "${dir#"$OUT"/} seed $seed: lr $lr, epoch $epoch (valid error $verr)"
}

export -f ft_pretrain ft_arch ft_steps ft_run
export ROOT BIN OUT MODEL PRE_OPTIONS MLM_OPTIONS MAX_TOKENS PRE_EPOCHS THREADS REUSE PYTHON FT_HELP
