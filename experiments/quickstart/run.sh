#!/usr/bin/env bash
# The quickstart (make -f Makefile.scripts quickstart): a Transformer learns to reverse
# sequences in seconds, end to end through the tools. Usage: experiments/quickstart/run.sh [BUILD_DIR]
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
exec "$ROOT/experiments/transformer-reverse/run.sh" "${1:-$ROOT/build}"
