#!/usr/bin/env bash
# docs/benchmarks.md's table of the cache placements out of GPU memory, for a
# machine with an NVIDIA GPU, in one command (one graph build): gcsm,
# degree and zero-copy with one executor per shape, on a 2^27-edge R-MAT
# graph with a cache budget of 5% of its lists; the 5-cycle up to batches
# of 512, whose batches of 2,048 take minutes through zero-copy. Then the
# cache's top-1%/5% coverage of the 4-cycle and the diamond.
#
#   bench/gpu-cache.sh GCSM_BINARY OUT_DIR
#
# Build the binary elsewhere with CGO_ENABLED=0 go build ./cmd/gcsm. On the
# H100 the two commands the table was last assembled from took 5.8 and 4.0
# minutes, each with its own graph build, and the coverage about 2. SCALE
# (default 23) sets the graph's size, for a quick look at a small one.
set -euo pipefail
gcsm=${1:?GCSM_BINARY}
out=${2:?OUT_DIR}
common=(--scale "${SCALE:-23}" --labels 32 --label-skew 1.1 --gpu-cache-fraction 0.05 --warm-each-size --executor-per-shape --each-batch)

"$gcsm" bench "${common[@]}" --per-size 3 --engines gcsm,degree,zero-copy \
  --shapes 4-cycle,diamond,house,5-cycle --shape-max-batch 5-cycle=512 --batches 64,512,2048 \
  --svg "$out/cache.svg" >"$out/cache.txt" 2>"$out/cache.log"
"$gcsm" bench "${common[@]}" --per-size 2 --coverage --engines gcsm \
  --shapes 4-cycle,diamond --batches 64,512,2048 >"$out/coverage.txt" 2>"$out/coverage.log"
cat "$out/cache.txt" "$out/coverage.txt"
