// Package bench generates the workloads that gcsm is measured on, and will
// run the harness that measures it.
//
// The generators are deterministic for a seed, so that a figure can be
// reproduced and two configurations compared on the same input:
//
//   - RMAT streams power-law graphs with Zipf-skewed vertex labels, the
//     synthetic graphs of docs/benchmarks.md, without holding the graph in memory.
//   - SplitStream turns a static edge list into an initial graph and an
//     update stream, following the CSM literature's protocol.
//   - Transfers produces a labeled money-transfer stream with planted rings
//     and fan-ins, for demonstrations that must find matches.
//   - Shapes and RandomWalkQuery give the benchmark queries as Cypher-style
//     patterns.
//
// The engine harness opens the engines under comparison (OpenEngines), times
// them side by side (RunEngines) and prints their table (WriteEngineTable);
// RunStatic and ReportStatic do the same for the static matcher, query by
// query against known answers. The service's harness, which drives a whole
// service through Kafka, is bench/servicebench.
package bench
