#!/usr/bin/env bash
# Replays the 100 queries of csm_human_hybridflow one update at a time on the
# CPU, one gcsm process per query (as the peers are run, process start
# included), and prints each query's counts and the total wall time.
#
#   bench/peers.sh [DATASETS_DIR] [insertion|deletion]
#
# The deletion stream runs on data_full.graph; its negative counts equal the
# insertion stream's positive counts on data.graph.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
datasets=${1:-$root/../shared/datasets}
kind=${2:-insertion}
dir=$datasets/csm_human_hybridflow
[ -d "$dir" ] || { echo "no $dir" >&2; exit 1; }
data=$dir/data.graph
[ "$kind" = deletion ] && data=$dir/data_full.graph
bin=$(mktemp -d)/gcsm
trap 'rm -rf "$(dirname "$bin")"' EXIT
(cd "$root" && CGO_ENABLED=0 go build -o "$bin" ./cmd/gcsm)
start=$(date +%s.%N)
for i in $(seq 1 100); do
  "$bin" replay --device cpu -d "$data" -u "$dir/$kind.graph" -q "$dir/query_graph/Q_$i" --count-only --batch 1 --json 2>/dev/null | tail -n 1
done
end=$(date +%s.%N)
echo "total wall seconds for 100 queries ($kind): $(awk -v a="$start" -v b="$end" 'BEGIN{printf "%.2f", b-a}')"
