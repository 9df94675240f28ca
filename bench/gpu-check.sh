#!/usr/bin/env bash
# The GPU engine's test entry point, for a machine with an NVIDIA GPU:
# the kernels package's GPU-vs-CPU tests, then the peer suites through the
# CLI on the GPU (device, zero-copy, and the gcsm, degree and unified placements)
# against the expected answers and the CPU.
#
#   bench/gpu-check.sh BIN_DIR DATASETS_DIR
#
# BIN_DIR holds gcsm and kernels.test, built elsewhere with
#   CGO_ENABLED=0 go build -o BIN_DIR/gcsm ./cmd/gcsm
#   CGO_ENABLED=0 go test -c -o BIN_DIR/kernels.test ./kernels
set -uo pipefail
bin=${1:?BIN_DIR}
data=${2:?DATASETS_DIR}
fail=0
say() { printf '%s\n' "$*"; }

say "== kernels: GPU versus CPU on seeded random graphs and streams"
(cd "$(dirname "$0")/../kernels" && "$bin/kernels.test" -test.run 'GPU|Encode|Cache|KHop|GraphDesc|Overflow' -test.v -test.timeout 240s 2>&1 | grep --line-buffered -v '^=== RUN') || fail=1

json() { tail -n 1; }
for pl in device zero-copy gcsm degree unified; do
  say "== csm_eucore_generated, 30 queries, GPU $pl, batch 1024 and 1"
  d=$data/csm_eucore_generated
  qs=""; for i in $(seq 1 30); do qs="$qs -q $d/query_graph/Q_$i"; done
  for b in 1024 1; do
    timeout 120 "$bin/gcsm" replay --device gpu --gpu-placement $pl -d $d/data.graph -u $d/insertion.graph $qs --count-only --batch $b --json 2>/dev/null | json > /tmp/eu.json
    python3 - "$d/expected_insert.txt" /tmp/eu.json "$pl batch $b" <<'PY' || fail=1
import json, sys
exp = dict(l.strip().split(':') for l in open(sys.argv[1]) if ':' in l)
r = json.load(open(sys.argv[2]))
bad = [q['name'] for q in r['queries'] if str(q['positive']) != exp[q['name']] or q['negative'] != 0]
print(f"  {sys.argv[3]}: {len(r['queries'])-len(bad)}/{len(r['queries'])} equal, {r['seconds']:.3f}s", "MISMATCH " + str(bad) if bad else "")
sys.exit(1 if bad else 0)
PY
  done

  say "== csm_human_hybridflow, 100 queries, GPU $pl against CPU, batch 4314 (insertion) and deletion mirror"
  h=$data/csm_human_hybridflow
  qs=""; for i in $(seq 1 100); do qs="$qs -q $h/query_graph/Q_$i"; done
  timeout 120 "$bin/gcsm" replay --device gpu --gpu-placement $pl -d $h/data.graph -u $h/insertion.graph $qs --count-only --batch 4314 --json 2>/dev/null | json > /tmp/hg.json
  timeout 120 "$bin/gcsm" replay --device cpu -d $h/data.graph -u $h/insertion.graph $qs --count-only --batch 4314 --json 2>/dev/null | json > /tmp/hc.json
  timeout 120 "$bin/gcsm" replay --device gpu --gpu-placement $pl -d $h/data_full.graph -u $h/deletion.graph $qs --count-only --batch 4314 --json 2>/dev/null | json > /tmp/hd.json
  python3 - /tmp/hg.json /tmp/hc.json /tmp/hd.json <<'PY' || fail=1
import json, sys
g, c, d = (json.load(open(f)) for f in sys.argv[1:4])
bad = [a['name'] for a, b, e in zip(g['queries'], c['queries'], d['queries']) if a != b or e['negative'] != a['positive']]
print(f"  GPU {g['seconds']:.3f}s, CPU {c['seconds']:.3f}s, deletion {d['seconds']:.3f}s; {100-len(bad)}/100 equal", "MISMATCH " + str(bad[:10]) if bad else "")
sys.exit(1 if bad else 0)
PY
done

say "== static HPRD, 200 queries, GPU against expected_output.res"
s=$data/static_hprd_subgraphmatching
qs=""; for i in $(seq 1 200); do qs="$qs -q $s/query_graph/query_dense_16_$i.graph"; done
timeout 120 "$bin/gcsm" match --device gpu -d $s/data_graph/HPRD.graph $qs --count-only --json 2>/dev/null | json > /tmp/hprd.json
python3 - $s/expected_output.res /tmp/hprd.json <<'PY' || fail=1
import json, sys
exp = dict(l.strip().split(':') for l in open(sys.argv[1]) if ':' in l)
r = json.load(open(sys.argv[2]))
bad = [q['name'] for q in r['queries'] if str(q['matches']) != exp[q['name']]]
print(f"  {len(r['queries'])-len(bad)}/{len(r['queries'])} equal, {r['seconds']:.3f}s", "MISMATCH " + str(bad[:10]) if bad else "")
sys.exit(1 if bad else 0)
PY
[ $fail = 0 ] && say "== all GPU checks passed" || say "== SOME GPU CHECKS FAILED"
exit $fail
