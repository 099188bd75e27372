#!/usr/bin/env bash
# Reproduces the per-layer complexity table of Vaswani et al. (2017, Table 1) from
# measurements of the library's own layers: self-attention (full, restricted, multi-head),
# LSTM, GRU, contiguous and dilated convolution. Writes results/complexity/:
#   complexity.h5   every measurement (attn-complexity measure --out)
#   table.md        the table with fitted exponents and the attention/RNN crossovers
#   *.png           log-log charts against n (when attn-plot is built)
# Usage: experiments/complexity/run.sh [BUILD_DIR] [extra attn-complexity options, e.g. --quick]
# Takes a few minutes on 2 cores.
set -euo pipefail

BUILD=${1:-build}
shift || true
BIN="$BUILD/apps"
OUT=results/complexity
mkdir -p "$OUT"

if [ ! -x "$BIN/attn-complexity" ]; then
  echo "complexity: $BIN/attn-complexity not found; build first (make -f Makefile.scripts build)" >&2
  exit 1
fi

"$BIN/attn-complexity" measure --out "$OUT/complexity.h5" "$@" | tee "$OUT/table.md"

if [ ! -x "$BIN/attn-plot" ]; then
  echo "complexity: $BIN/attn-plot not built; skipping the charts" >&2
  exit 0
fi

LAYERS="self_attention restricted_attention multi_head_attention lstm gru conv dilated_conv"

# chart FILE Y_TITLE GROUP METRIC: one curve per layer of /GROUP/METRIC/<layer> against /GROUP/<x>.
chart() {
  local file=$1 ytitle=$2 group=$3 metric=$4 x
  x=${group%_sweep}
  local args=()
  for layer in $LAYERS; do
    args+=(--series "/$group/$x:/$group/$metric/$layer" --label "$layer")
  done
  "$BIN/attn-plot" curve "$OUT/complexity.h5" "${args[@]}" --log-x --log-y --markers \
    --x-title "$x" --y-title "$ytitle" --title "$ytitle against $x" --out "$OUT/$file" --quiet
}

chart flops_vs_n.png "multiply-adds (forward)" n_sweep flops_forward
chart flops_vs_d.png "multiply-adds (forward)" d_sweep flops_forward
chart time_vs_n.png "seconds (forward + backward)" n_sweep seconds_total
chart memory_vs_n.png "activation bytes" n_sweep activation_bytes
chart sequential_vs_n.png "sequential operations (forward)" n_sweep sequential_forward

args=()
for layer in $LAYERS; do args+=(--series "/path/n:/path/length/$layer" --label "$layer"); done
"$BIN/attn-plot" curve "$OUT/complexity.h5" "${args[@]}" --log-x --log-y --markers \
  --x-title n --y-title "maximum path length (sequential steps)" --title "path from position 1 to n" \
  --out "$OUT/path_vs_n.png" --quiet

echo "complexity: table and charts in $OUT/"
