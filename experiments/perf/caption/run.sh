#!/usr/bin/env bash
# The Show-Attend-and-Tell captioner (issue 15, "Speed"), attnlab vs the same model in PyTorch
# side by side: training images/s on 1 x 32 x 160 digit strips at batch 32, at 1 and 2 threads,
# with the ratio to PyTorch's best (stock; with the tuned allocator, torch-nommap; and that with
# the encoder in channels-last layout, torch-nommap-cl), attnlab's fraction of the sgemm-bound
# limit, and the parts of attnlab's step (the encoder's convolutions, the LSTM's recurrence)
# timed alone against the sgemm limit of their shapes. See README.md in this folder.
# Usage: experiments/perf/caption/run.sh [BUILD_DIR]
# Environment: PYTHON, ROUNDS, STEPS, THREADS, NOMMAP, WAIT_IDLE, BLAS_CORE: see ../common.sh
#              IMAGES   images per timed repetition, a multiple of 32 (default 256)
#              DATA     a data set of attn-data mnist-strips to take the pool from (its /train);
#                       default: strips perf_caption makes (same size, same caption lengths)
# Writes results/perf/caption/raw.txt (every line), check.txt (the same-model check),
# export.h5 (the pool and initial weights both sides train from), parts.txt and table.txt.
set -euo pipefail

BUILD=${1:-build}
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/../common.sh"
IMAGES=${IMAGES:-256}
DATA=${DATA:-}
EXE=$BUILD/bench/perf_caption
perf_start caption "$EXE"
data_args=()
[ -z "$DATA" ] || data_args=(--data "$DATA")

# The pool and initial weights both sides use, and the check that the twin is the same model:
# one forward and backward from those weights on the pool's first 32 images, then 20 training
# steps (clipping and Adam included).
"$EXE" "${data_args[@]}" --images "$IMAGES" --batch 32 --export "$OUT/export.h5" --check-steps 20 | tee "$OUT/check.txt"
for layout in "" --channels-last; do   # both layouts of the twin must be the same model
  OMP_WAIT_POLICY=PASSIVE "$PYTHON" "$HERE/torch_caption.py" --export "$OUT/export.h5" --check $layout | tee -a "$OUT/check.txt"
done
"$PYTHON" - "$OUT/check.txt" <<'EOF'
import sys
rows = [dict(kv.split("=", 1) for kv in line.split()[1:]) for line in open(sys.argv[1]) if line.startswith("check ")]
bad = [r for r in rows if "loss_rel_diff" in r and (float(r["loss_rel_diff"]) > 1e-5 or float(r["grad_max_rel_diff"]) > 1e-3)]
bad += [r for r in rows if "param_max_rel_diff" in r and float(r["param_max_rel_diff"]) > 1e-3]
if bad or len(rows) != 4:
    sys.exit(f"perf/caption: the PyTorch twin does not match attnlab's model: {bad or 'check lines missing'}")
EOF

torch_run() { OMP_WAIT_POLICY=PASSIVE "$PYTHON" "$HERE/torch_caption.py" --export "$OUT/export.h5" --steps "$STEPS" --images "$IMAGES" "$@"; }
for round in $(seq "$ROUNDS"); do
  for n in $THREADS; do
    echo "perf/caption: round $round, $n thread(s), load $(load)" >&2
    wait_idle
    # attnlab as its tools run (libgomp's default wait: spin briefly, then sleep); PyTorch with
    # PASSIVE, its best (README.md, "Thread settings").
    env -u OMP_WAIT_POLICY "$EXE" "${data_args[@]}" --threads "$n" --steps "$STEPS" --images "$IMAGES" --parts 1 |
      tee -a "$raw"
    torch_run --threads "$n" | tee -a "$raw"
    if [ "$NOMMAP" = 1 ]; then
      GLIBC_TUNABLES=$NOMMAP_TUNABLES torch_run --threads "$n" --label torch-nommap | tee -a "$raw"
      GLIBC_TUNABLES=$NOMMAP_TUNABLES torch_run --threads "$n" --channels-last --label torch-nommap-cl | tee -a "$raw"
    fi
  done
done
end_load=$(load)
grep '^part=' "$raw" >"$OUT/parts.txt"
echo "# load average at end: $end_load" >>"$raw"

# The parameter counts must agree (the table prints them too).
"$PYTHON" - "$raw" <<'EOF'
import sys
counts = {dict(kv.split("=", 1) for kv in l.split())["params"] for l in open(sys.argv[1]) if l.startswith("impl=")}
if len(counts) != 1:
    sys.exit(f"perf/caption: parameter counts differ between the implementations: {sorted(counts)}")
EOF
"$PYTHON" "$HERE/../table.py" "$raw" --title "Captioner (Show, Attend and Tell) 1x32x160, batch 32" \
  --ref PyTorch=torch,torch-nommap,torch-nommap-cl --ref stock=torch | tee "$OUT/table.txt"
"$PYTHON" "$HERE/parts.py" "$OUT/parts.txt" | tee -a "$OUT/table.txt"
echo "load average at start and end: $start_load / $end_load" | tee -a "$OUT/table.txt"
