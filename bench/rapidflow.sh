#!/usr/bin/env bash
# rapidflow.sh runs gcsm beside RapidFlow on a CSM suite, query by query,
# and prints a TSV row per query and a summary. It is a tool for people, not
# for CI: the figures are only as good as the machine is quiet.
#
#   bench/rapidflow.sh SUITE_DIR RAPIDFLOW_BIN [--workers N] [--stream FILE]
#       [--data FILE] [--queries 'Q_1 Q_2 ...'] [--timeout S] [--gcsm BIN]
#
# SUITE_DIR holds data.graph, a stream (stream.graph, as `gcsm bench suite`
# writes it, or else insertion.graph, as the human suite has) and
# query_graph/Q_*. --data and --stream name other files (relative to
# SUITE_DIR or absolute): the human suite's deletion check is
#   --data data_full.graph --stream deletion.graph
# --queries picks query files of query_graph by name; --workers is gcsm's
# (default 1); --timeout bounds each run of either in seconds (default 3600);
# --gcsm runs a gcsm binary built elsewhere (a machine without Go) instead
# of building this checkout's.
#
# Each query runs RapidFlow, then gcsm, as whole processes (loading
# included in the wall times), one after the other so that both see the
# same machine:
#   RapidFlow.out -d DATA -q QUERY -u STREAM -num MAX -time_limit S
#   gcsm replay -d DATA -u STREAM -q QUERY --device cpu --workers N --batch 1 --count-only --json
# Columns: query, RapidFlow wall s, its "Query time", its "Result count",
# gcsm wall s, gcsm matching s (the JSON summary's seconds), gcsm's count,
# and whether the counts are equal. RapidFlow's Result count adds up the
# matches found for every update, those an insertion makes and those a
# deletion removes alike (streaming_engine.cpp: both branches add to
# result_count_), so gcsm's count is positive + negative. A run past the
# timeout counts as "timeout" and is left out of the equality.
set -euo pipefail

die() { echo "rapidflow.sh: $*" >&2; exit 2; }

[ $# -ge 2 ] || die "usage: bench/rapidflow.sh SUITE_DIR RAPIDFLOW_BIN [--workers N] [--stream FILE] [--data FILE] [--queries 'Q_1 Q_2 ...'] [--timeout S]"
suite=$1 rf=$2
shift 2
workers=1 stream= data= queries= timeout=3600 gcsm=
while [ $# -gt 0 ]; do
	[ $# -ge 2 ] || die "$1 needs a value"
	case $1 in
	--workers) workers=$2 ;;
	--stream) stream=$2 ;;
	--data) data=$2 ;;
	--queries) queries=$2 ;;
	--timeout) timeout=$2 ;;
	--gcsm) gcsm=$2 ;;
	*) die "unknown flag $1" ;;
	esac
	shift 2
done
[[ $workers =~ ^[1-9][0-9]*$ ]] || die "--workers $workers: want a count of 1 or more"
[[ $timeout =~ ^[1-9][0-9]*$ ]] || die "--timeout $timeout: want whole seconds, 1 or more"
[ -d "$suite" ] || die "$suite is not a directory"
[ -f "$rf" ] || die "RapidFlow binary $rf not found (build RapidFlow first: cmake and make in its checkout give build/streaming/RapidFlow.out)"
[ -x "$rf" ] || die "RapidFlow binary $rf is not executable"

# in_suite resolves a file relative to SUITE_DIR unless it is absolute.
in_suite() { case $1 in /*) echo "$1" ;; *) echo "$suite/$1" ;; esac; }
data=$(in_suite "${data:-data.graph}")
if [ -z "$stream" ]; then
	stream=stream.graph
	[ -f "$suite/$stream" ] || stream=insertion.graph
fi
stream=$(in_suite "$stream")
[ -f "$data" ] || die "data graph $data not found"
[ -f "$stream" ] || die "stream $stream not found (give --stream FILE)"
if [ -z "$queries" ]; then
	# Q_1, Q_2, ..., Q_10 in numeric order.
	queries=$(cd "$suite/query_graph" && ls | sort -t_ -k2,2n | tr '\n' ' ')
fi
[ -n "$queries" ] || die "no queries in $suite/query_graph"
for q in $queries; do
	[ -f "$suite/query_graph/$q" ] || die "query $suite/query_graph/$q not found"
done

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
repo=$(cd "$(dirname "$0")/.." && pwd)
if [ -n "$gcsm" ]; then
	[ -x "$gcsm" ] || die "gcsm binary $gcsm not found or not executable"
	cp "$gcsm" "$tmp/gcsm"
else
	(cd "$repo" && CGO_ENABLED=0 go build -o "$tmp/gcsm" ./cmd/gcsm) || die "cannot build gcsm in $repo"
fi

now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.3f", b - a }'; }

printf 'query\trf_wall_s\trf_query_s\trf_count\tgcsm_wall_s\tgcsm_match_s\tgcsm_count\tequal\n'
rows=$tmp/rows
: >"$rows"
for q in $queries; do
	qf=$suite/query_graph/$q
	t0=$(now)
	# RapidFlow stops itself at -time_limit; the outer timeout is for a
	# run that hangs in loading.
	rc=0
	timeout $((timeout + 60)) "$rf" -d "$data" -q "$qf" -u "$stream" -num MAX -time_limit "$timeout" >"$tmp/rf.out" 2>&1 || rc=$?
	rf_wall=$(since "$t0")
	rf_time=$(awk -F': ' '/^Query time \(seconds\)/ { print $2 }' "$tmp/rf.out")
	rf_count=$(awk -F': ' '/^Result count/ { print $2 }' "$tmp/rf.out")
	if [ $rc -ne 0 ] || [ -z "$rf_time" ] || [ -z "$rf_count" ]; then
		echo "rapidflow.sh: RapidFlow failed on $q (exit $rc); its output ends:" >&2
		tail -5 "$tmp/rf.out" >&2
		rf_time=${rf_time:-NA} rf_count=failed
	elif grep -q '^Time out' "$tmp/rf.out"; then
		rf_count=timeout
	fi

	t0=$(now)
	rc=0
	timeout "$timeout" "$tmp/gcsm" replay -d "$data" -u "$stream" -q "$qf" --device cpu --workers "$workers" \
		--batch 1 --count-only --json --progress=false >"$tmp/gcsm.out" 2>"$tmp/gcsm.err" || rc=$?
	g_wall=$(since "$t0")
	if [ $rc -eq 124 ]; then
		g_time=NA g_count=timeout
	elif [ $rc -ne 0 ]; then
		echo "rapidflow.sh: gcsm failed on $q (exit $rc):" >&2
		tail -5 "$tmp/gcsm.err" >&2
		g_time=NA g_count=failed
	else
		# The summary is the last line: {"queries":[{"name":..,"positive":P,"negative":N}],...,"seconds":S}
		read -r g_time g_count < <(tail -1 "$tmp/gcsm.out" | awk '{
			match($0, /"positive":[0-9]+/); p = substr($0, RSTART + 11, RLENGTH - 11)
			match($0, /"negative":[0-9]+/); n = substr($0, RSTART + 11, RLENGTH - 11)
			match($0, /"seconds":[0-9.e+-]+}$/); s = substr($0, RSTART + 10, RLENGTH - 11)
			printf "%.6f %.0f\n", s, p + n }')
	fi

	equal=no
	case "$rf_count/$g_count" in
	*timeout* | *failed*) equal=NA ;;
	*) [ "$rf_count" = "$g_count" ] && equal=yes ;;
	esac
	printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$q" "$rf_wall" "$rf_time" "$rf_count" "$g_wall" "$g_time" "$g_count" "$equal" | tee -a "$rows"
done

# The summary: sums of the numeric columns (a timed-out or failed count
# adds nothing), gcsm's time over RapidFlow's, and the queries where gcsm
# took over twice RapidFlow's query time on a query that took RapidFlow
# over 10 ms.
awk -F'\t' '
function num(x) { return x ~ /^[0-9.]+$/ ? x + 0 : 0 }
{
	n++; rw += num($2); rq += num($3); rc += num($4); gw += num($5); gm += num($6); gc += num($7)
	if ($8 == "yes") eq++
	if ($8 == "no") ne = ne " " $1
	if ($8 == "NA") na = na " " $1
	if (num($3) > 0.01 && num($6) > 2 * num($3)) slow = slow sprintf(" %s(%.2fx)", $1, num($6) / num($3))
}
END {
	printf "# sums\t%.3f\t%.3f\t%.0f\t%.3f\t%.3f\t%.0f\t%d/%d equal\n", rw, rq, rc, gw, gm, gc, eq, n
	printf "# gcsm/RapidFlow wall: %.3f   matching (gcsm seconds / RapidFlow query time): %.3f\n", (rw ? gw / rw : 0), (rq ? gm / rq : 0)
	printf "# counts differ:%s\n", (ne == "" ? " none" : ne)
	printf "# timed out or failed (their times are in the sums, so the ratios lean):%s\n", (na == "" ? " none" : na)
	printf "# gcsm over 2x RapidFlow query time where RapidFlow took over 10 ms:%s\n", (slow == "" ? " none" : slow)
}' "$rows"
