package service

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/gcsm/gcsm/ingest"
)

// metrics are the service's Prometheus series (docs/operations.md, "Metrics"); the package
// doc lists them with their meaning.
type metrics struct {
	updates      *prometheus.CounterVec // op, result
	rejects      *prometheus.CounterVec // reason
	matches      *prometheus.CounterVec // query, change
	limitHits    *prometheus.CounterVec // query, limit
	initialRuns  *prometheus.CounterVec // result
	queryBatches *prometheus.CounterVec // query, device
	batches      prometheus.Counter
	zeroCopy     prometheus.Counter
	batchSeconds *prometheus.HistogramVec // stage
	outputSteps  *prometheus.HistogramVec // step
	wait         *prometheus.HistogramVec // queue
	idle         prometheus.Counter
	checkpoint   prometheus.Histogram

	vertices, edges        prometheus.Gauge
	cacheBytes, cacheRatio prometheus.Gauge
	lag, checkpointAge     prometheus.Gauge
	queries                prometheus.Gauge
	shards                 prometheus.Gauge
	units                  prometheus.Counter
	// ready and brokerReachable are the watch's (watch.go).
	ready, brokerReachable prometheus.Gauge
	*deliveryMetrics
}

// stages of a batch, the values of batch_seconds' stage label. estimate and
// upload are the GPU cache's; they stay at zero on the CPU.
var stages = []string{"decode", "apply", "estimate", "upload", "match", "reorganize", "output", "commit"}

// Indices into stages.
const (
	stageDecode = iota
	stageApply
	_ // estimate
	_ // upload
	stageMatch
	stageReorganize
	stageOutput
)

// outputSteps are the values of output_step_seconds' step label.
var outputSteps = []string{"build", "log", "send", "acknowledge", "transaction"}

// rejectReasons are the values of rejects_total's reason label: ingest's
// decoding reasons and the service's own.
var rejectReasons = append(ingest.DecodeReasons(), "self_loop", "label_conflict", "transfer_moved", "late", "missing_time",
	"unknown_vertex", "unknown_transfer")

func newMetrics(reg prometheus.Registerer) *metrics {
	const ns = "gcsm"
	m := &metrics{
		updates: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "updates_total",
			Help: "Input updates by op (insert, delete, set, expire) and result (applied, noop, rejected)."}, []string{"op", "result"}),
		rejects: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "rejects_total",
			Help: "Input messages sent to the dead-letter topic, by reason."}, []string{"reason"}),
		matches: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "matches_total",
			Help: "Match deltas found, by query and change (appeared, disappeared); counted even when a limit keeps them from the output."}, []string{"query", "change"}),
		limitHits: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "query_limit_hits_total",
			Help: "Batches in which a query hit a limit (max_matches_per_batch or max_time) and events were withheld."}, []string{"query", "limit"}),
		initialRuns: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "initial_runs_total",
			Help: "Initial runs of new queries (initial: true) by result: complete, or why they were cut short (max_matches, max_time, max_memory, deleted, client_gone, stopping)."}, []string{"result"}),
		queryBatches: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "query_batches_total",
			Help: "Batches each query was matched in, by the device that ran it (cpu, gpu): under engine.device auto each query runs where it has been fastest."}, []string{"query", "device"}),
		batches: prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Name: "batches_total",
			Help: "Batches processed."}),
		zeroCopy: prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Name: "zero_copy_bytes_total",
			Help: "Bytes of neighbour lists the GPU read from host memory (an upper bound of PCIe traffic); zero on the CPU."}),
		batchSeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: ns, Name: "batch_seconds",
			Help:    "Time per batch in each stage.",
			Buckets: prometheus.ExponentialBuckets(0.0001, 2.5, 14)}, []string{"stage"}),
		outputSteps: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: ns, Name: "output_step_seconds",
			Help:    "The output stage's time per batch in each step: build (sorting the matches, building the events), send (encoding and handing the records to the producer; with a client that cannot pipeline, the whole delivery) and acknowledge (from the send to the acknowledgement, while later batches are sent).",
			Buckets: prometheus.ExponentialBuckets(0.0001, 2.5, 14)}, []string{"step"}),
		wait: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: ns, Name: "batch_wait_seconds",
			Help:    "Time a batch waited in a queue for the next stage: graph (decoded, for the graph stages) or output (matched, for delivery).",
			Buckets: prometheus.ExponentialBuckets(0.0001, 2.5, 14)}, []string{"queue"}),
		idle: prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Name: "run_loop_idle_seconds_total",
			Help: "Seconds the run loop (the graph stages) had nothing to do, from its first batch on: under a backlog, the time the decoding stage (reading, decoding, interning) held the engine back."}),
		checkpoint: prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: ns, Name: "checkpoint_seconds",
			Help: "Time to write a checkpoint.", Buckets: prometheus.ExponentialBuckets(0.001, 3, 12)}),
		vertices:      prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Name: "graph_vertices", Help: "Vertices in the graph."}),
		edges:         prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Name: "graph_edges", Help: "Edges in the graph."}),
		cacheBytes:    prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Name: "gpu_cache_bytes", Help: "Bytes of neighbour lists held in GPU memory; zero on the CPU."}),
		cacheRatio:    prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Name: "gpu_cache_hit_ratio", Help: "Share of list reads served from GPU memory in the last batch; zero on the CPU."}),
		lag:           prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Name: "consumer_lag", Help: "Input records behind the partitions' ends, sampled from the brokers every second and at each batch's end; 0 on a standby."}),
		checkpointAge: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Name: "checkpoint_age_seconds", Help: "Seconds since the last checkpoint was written or loaded, sampled every second."}),
		queries:       prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Name: "queries", Help: "Standing queries."}),
		shards:        prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Name: "cluster_shards", Help: "Shards this cluster member owns; zero alone."}),
		units: prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Name: "units_total",
			Help: "Work units (update edges with their delta terms) matched; a cluster member matches only its shards'."}),
		ready: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Name: "ready",
			Help: "1 while /readyz answers 200; 0 while it fails (stalled, broker unreachable, output undeliverable, input went backwards) or the service starts."}),
		brokerReachable: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Name: "broker_reachable",
			Help: "1 while the input's offsets can be read from the brokers; 0 after 5s of failed requests."}),
	}
	reg.MustRegister(m.updates, m.rejects, m.matches, m.limitHits, m.initialRuns, m.queryBatches, m.batches, m.zeroCopy, m.batchSeconds, m.outputSteps, m.wait, m.idle, m.checkpoint,
		m.vertices, m.edges, m.cacheBytes, m.cacheRatio, m.lag, m.checkpointAge, m.queries, m.shards, m.units, m.ready, m.brokerReachable,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	m.registerDelivery(reg)
	// Series that exist from the start, so a dashboard shows zeros rather
	// than "no data" before the first batch.
	for _, s := range stages {
		m.batchSeconds.WithLabelValues(s)
	}
	for _, st := range outputSteps {
		m.outputSteps.WithLabelValues(st)
	}
	for _, q := range []string{"graph", "output"} {
		m.wait.WithLabelValues(q)
	}
	for _, r := range rejectReasons {
		m.rejects.WithLabelValues(r)
	}
	for _, op := range []string{"insert", "delete", "set", "expire"} {
		m.updates.WithLabelValues(op, "applied")
	}
	m.updates.WithLabelValues("any", "noop")
	m.updates.WithLabelValues("any", "rejected")
	return m
}
