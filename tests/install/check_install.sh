#!/usr/bin/env bash
# Installs the build into a temporary prefix, then configures, builds and runs a separate
# project that does find_package(attnlab) and links attnlab::attn.
# Usage: check_install.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build=$1 src=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cmake --install "$build" --prefix "$work/prefix" > "$work/install.log"
for exe in "$build"/apps/attn-*; do   # every tool the build made (attn-data, attn-seq2seq, ...)
  tool=$(basename "$exe")
  test -x "$work/prefix/bin/$tool" || { echo "$tool was not installed"; exit 1; }
done
cmake -S "$src/tests/install/consumer" -B "$work/consumer" -DCMAKE_PREFIX_PATH="$work/prefix" > "$work/configure.log" ||
  { cat "$work/configure.log"; exit 1; }
cmake --build "$work/consumer" > "$work/build.log" || { cat "$work/build.log"; exit 1; }
out=$(LD_LIBRARY_PATH="$work/prefix/lib:${LD_LIBRARY_PATH:-}" "$work/consumer/consumer")
[ "$out" = "0.84147" ] || { echo "consumer printed '$out', expected 0.84147"; exit 1; }
echo "find_package(attnlab) consumer built and ran: $out"
