#!/usr/bin/env bash
# Neural Turing machine on the copy task (8 bits, LSTM controller 100, memory 128 x 20, one read
# and one write head), attnlab vs the same model in PyTorch side by side: training sequences/s
# and ms per sequence at batch 1 and 32, 1 and 2 threads, with the ratio to PyTorch's best.
# See README.md in this folder.
# Usage: experiments/perf/ntm/run.sh [BUILD_DIR]
# Environment: PYTHON, ROUNDS, STEPS, THREADS, WAIT_IDLE, BLAS_CORE: see ../common.sh (NOMMAP is not used:
#              the NTM's tensors are far below glibc's mmap threshold)
#              BATCHES     batch sizes (default "1 32")
#              SEQUENCES   sequences per timed repetition, a multiple of every batch (default 64)
#              NTMSTYLE    1 (default): also time torch-ntmstyle (pytorch-ntm's code shape); 0 skips it
# Writes results/perf/ntm/raw.txt (every line), check.txt (the same-model check), data.h5 (the
# sequences and initial weights both sides train from) and table.txt.
set -euo pipefail

BUILD=${1:-build}
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/../common.sh"
BATCHES=${BATCHES:-1 32}
SEQUENCES=${SEQUENCES:-64}
NTMSTYLE=${NTMSTYLE:-1}
EXE=$BUILD/bench/perf_ntm
perf_start ntm "$EXE"

# The sequences and initial weights both sides use, and the check that the twin is the same
# model: one forward and backward from those weights on 4 sequences, then 20 training steps.
data=$OUT/data.h5
"$EXE" --export "$data" --sequences "$SEQUENCES" --batch 4 --check-steps 20 | tee "$OUT/check.txt"
OMP_WAIT_POLICY=PASSIVE "$PYTHON" "$HERE/torch_ntm.py" --check "$data" | tee -a "$OUT/check.txt"
"$PYTHON" - "$OUT/check.txt" <<'EOF'
import sys
rows = [dict(kv.split("=", 1) for kv in line.split()[1:]) for line in open(sys.argv[1]) if line.startswith("check ")]
bad = [r for r in rows if "loss_rel_diff" in r and (r["params"] != "62260" or float(r["loss_rel_diff"]) > 1e-5
                                                    or float(r["grad_max_rel_diff"]) > 1e-3)]
bad += [r for r in rows if r.get("optimizer") == "graves" and float(r["param_max_rel_diff"]) > 1e-3]
if bad or not rows:
    sys.exit(f"perf/ntm: the PyTorch twin does not match attnlab's model: {bad or 'no check lines'}")
EOF

torch_run() { OMP_WAIT_POLICY=PASSIVE "$PYTHON" "$HERE/torch_ntm.py" --data "$data" --steps "$STEPS" \
  --sequences "$SEQUENCES" "$@"; }
for round in $(seq "$ROUNDS"); do
  for b in $BATCHES; do
    for n in $THREADS; do
      echo "perf/ntm: round $round, batch $b, $n thread(s), load $(load)" >&2
      wait_idle
      OMP_WAIT_POLICY=PASSIVE "$EXE" --batch "$b" --threads "$n" --steps "$STEPS" --sequences "$SEQUENCES" |
        tee -a "$raw"
      torch_run --impl torch --batch "$b" --threads "$n" | tee -a "$raw"
      if [ "$NTMSTYLE" = 1 ]; then torch_run --impl torch-ntmstyle --batch "$b" --threads "$n" | tee -a "$raw"; fi
    done
  done
done
end_load=$(load)
echo "# load average at end: $end_load" >>"$raw"

# The parameter counts must agree (the table prints them too).
"$PYTHON" - "$raw" <<'EOF'
import sys
counts = {dict(kv.split("=", 1) for kv in l.split())["params"] for l in open(sys.argv[1]) if l.startswith("impl=")}
if len(counts) != 1:
    sys.exit(f"perf/ntm: parameter counts differ between the implementations: {sorted(counts)}")
EOF
"$PYTHON" "$HERE/../table.py" "$raw" --title "NTM copy task" --ref PyTorch=torch,torch-ntmstyle |
  tee "$OUT/table.txt"
echo "load average at start and end: $start_load / $end_load" | tee -a "$OUT/table.txt"
