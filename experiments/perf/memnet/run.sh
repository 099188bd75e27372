#!/usr/bin/env bash
# End-to-end memory network (MemN2N: position and temporal encoding, adjacent tying, 3 hops) on
# bAbI, attnlab vs the same model in PyTorch side by side: training questions/s on task 1 of the
# 1k set (E = 20) and on the joint 1k set (all 20 tasks, E = 50), at 1 and 2 threads, with the
# ratio to PyTorch's best. See README.md in this folder.
# Usage: experiments/perf/memnet/run.sh [BUILD_DIR]
# Environment: PYTHON, ROUNDS, STEPS, THREADS, NOMMAP, WAIT_IDLE, BLAS_CORE: see ../common.sh
#              DATA_DIR    bAbI's folder (default ../shared/data/babi beside the project, as
#                          experiments/memnet-babi; its en/ is the 1k set)
#              BATCHES     batch sizes (default "32 128": 32 is attn-memnet's and the paper's)
#              QUESTIONS   questions per timed repetition, a multiple of every batch (default 1024)
# Writes results/perf/memnet/raw.txt (every line), check.txt (the same-model check), task1.h5 and
# joint.h5 (the data sets), task1.export.h5 and joint.export.h5 (the pools and initial weights
# both sides train from) and table.txt.
set -euo pipefail

BUILD=${1:-build}
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/../common.sh"
DATA_DIR=${DATA_DIR:-$HERE/../../../../shared/data/babi}
BATCHES=${BATCHES:-32 128}
QUESTIONS=${QUESTIONS:-1024}
EXE=$BUILD/bench/perf_memnet
perf_start memnet "$EXE"

# The two data sets and their embedding widths (the paper's d: 20 on one task, 50 joint).
declare -A TASK=([task1]=1 [joint]=all) WIDTH=([task1]=20 [joint]=50)
SETS="task1 joint"
for s in $SETS; do
  [ -f "$OUT/$s.h5" ] || "$BUILD/apps/attn-data" babi --task "${TASK[$s]}" --set en --data-dir "$DATA_DIR" \
    --out "$OUT/$s.h5" 2>/dev/null
done

# The pools (the QUESTIONS of every measurement) and initial weights both sides use, and the check that the twin is the same model:
# one forward and backward from those weights on the pool's first 32 questions, then 20 training
# steps.
: >"$OUT/check.txt"
for s in $SETS; do
  "$EXE" --data "$OUT/$s.h5" --embedding-size "${WIDTH[$s]}" --questions "$QUESTIONS" --batch 32 \
    --export "$OUT/$s.export.h5" --check-steps 20 | sed "s/^/$s /" | tee -a "$OUT/check.txt"
  OMP_WAIT_POLICY=PASSIVE "$PYTHON" "$HERE/torch_memnet.py" --data "$OUT/$s.h5" --export "$OUT/$s.export.h5" \
    --check | sed "s/^check /check set=$s /" | tee -a "$OUT/check.txt"
done
"$PYTHON" - "$OUT/check.txt" <<'EOF'
import sys
rows = [dict(kv.split("=", 1) for kv in line.split()[1:]) for line in open(sys.argv[1]) if line.startswith("check ")]
bad = [r for r in rows if "loss_rel_diff" in r and (float(r["loss_rel_diff"]) > 1e-5 or float(r["grad_max_rel_diff"]) > 1e-3)]
bad += [r for r in rows if "param_max_rel_diff" in r and float(r["param_max_rel_diff"]) > 1e-3]
if bad or len(rows) != 4:
    sys.exit(f"perf/memnet: the PyTorch twin does not match attnlab's model: {bad or 'check lines missing'}")
EOF

torch_run() {   # torch_run SET BATCH THREADS ARGS...
  OMP_WAIT_POLICY=PASSIVE "$PYTHON" "$HERE/torch_memnet.py" --data "$OUT/$1.h5" --export "$OUT/$1.export.h5" \
    --tag "$1" --batch "$2" --threads "$3" --steps "$STEPS" --questions "$QUESTIONS" "${@:4}"
}
for round in $(seq "$ROUNDS"); do
  for s in $SETS; do
    for b in $BATCHES; do
      for n in $THREADS; do
        echo "perf/memnet: round $round, $s, batch $b, $n thread(s), load $(load)" >&2
        wait_idle
        OMP_WAIT_POLICY=PASSIVE "$EXE" --data "$OUT/$s.h5" --embedding-size "${WIDTH[$s]}" --tag "$s" \
          --batch "$b" --threads "$n" --steps "$STEPS" --questions "$QUESTIONS" | tee -a "$raw"
        torch_run "$s" "$b" "$n" | tee -a "$raw"
        if [ "$NOMMAP" = 1 ]; then
          GLIBC_TUNABLES=$NOMMAP_TUNABLES torch_run "$s" "$b" "$n" --label torch-nommap | tee -a "$raw"
        fi
      done
    done
  done
done
end_load=$(load)
echo "# load average at end: $end_load" >>"$raw"

# The parameter counts must agree on each data set (the table prints them too).
"$PYTHON" - "$raw" <<'EOF'
import sys
from collections import defaultdict
counts = defaultdict(set)
for line in open(sys.argv[1]):
    if line.startswith("impl="):
        r = dict(kv.split("=", 1) for kv in line.split())
        counts[r["mode"].split("-")[1]].add(r["params"])
bad = {s: sorted(c) for s, c in counts.items() if len(c) != 1}
if bad:
    sys.exit(f"perf/memnet: parameter counts differ between the implementations: {bad}")
EOF
"$PYTHON" "$HERE/../table.py" "$raw" --title "MemN2N bAbI 1k" --ref PyTorch=torch,torch-nommap --ref stock=torch | tee "$OUT/table.txt"
echo "load average at start and end: $start_load / $end_load" | tee -a "$OUT/table.txt"
