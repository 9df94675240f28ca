package service

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"os"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/gcsm/gcsm/ingest"
	"github.com/gcsm/gcsm/internal/kafkaconn"
	"go.yaml.in/yaml/v3"
)

// Config is gcsm run's configuration: the YAML file's shape, with the
// defaults of DefaultConfig. Flags of cmd/gcsm override single fields.
type Config struct {
	// Brokers of the Kafka cluster; empty starts the embedded broker.
	Brokers []string `yaml:"brokers"`
	// TLS and SASL secure every connection to Brokers: the input, the
	// output, the batch log, the coordination topics and the dead letters.
	TLS      kafkaconn.TLSConfig  `yaml:"tls"`
	SASL     kafkaconn.SASLConfig `yaml:"sasl"`
	Embedded EmbeddedConfig       `yaml:"embedded"`
	Input    InputConfig          `yaml:"input"`
	Output   OutputConfig         `yaml:"output"`
	Batch    BatchConfig          `yaml:"batch"`
	Graph    GraphConfig          `yaml:"graph"`
	Window   WindowConfig         `yaml:"window"`
	State    StateConfig          `yaml:"state"`
	HTTP     HTTPConfig           `yaml:"http"`
	Health   HealthConfig         `yaml:"health"`
	Engine   EngineConfig         `yaml:"engine"`
	Log      LogConfig            `yaml:"log"`
	Cluster  ClusterConfig        `yaml:"cluster"`
	Initial  InitialConfig        `yaml:"initial"`
	Queries  []QueryConfig        `yaml:"queries"`
}

// InitialConfig bounds the run that finds a new query's initial matches
// (initial: true), which enumerates the whole graph beside the stream
// (initial.go). A 12-clique on a dense graph of 400 accounts had grown the
// process to 10 GB in 46 s without these bounds.
type InitialConfig struct {
	// MaxMatches caps the initial matches reported, where the query sets
	// no max_matches_per_batch. Default 100,000: about 50 MB of events, and
	// past that the initial set is a dump, not an alert.
	MaxMatches int64 `yaml:"max_matches"`
	// MaxTime caps the run's enumeration, where the query sets no
	// max_time. Default 30s: the run takes a core from the stream, so it
	// lasts no longer than a client waits for its answer.
	MaxTime time.Duration `yaml:"max_time"`
	// MaxMemory caps what the run holds: its copy of the graph and the
	// matches it keeps, whatever the query's limits. Default 256MiB.
	MaxMemory ByteSize `yaml:"max_memory"`
}

// ClusterConfig makes the service one member of several that share one
// stream (cluster.go): each member applies every update and matches only
// the work units of the shards the coordination group gives it.
type ClusterConfig struct {
	// Shards is S, the number of shards a batch's work units are split
	// into, fixed for the life of a deployment; 0 (the default) runs alone,
	// with input.group's active/standby group. 64 leaves room for 64 members.
	Shards int `yaml:"shards"`
	// Group is the members' consumer group on Topic; "" means
	// input.group + "-members".
	Group string `yaml:"group"`
	// Topic is the coordination topic, with Shards partitions: a member
	// owns the shards whose partitions it is assigned, and commits on each
	// the next batch it will emit. "" means input.topic + ".shards".
	Topic string `yaml:"topic"`
	// CutsTopic (1 partition) holds the batch boundaries every member
	// follows. "" means input.topic + ".cuts".
	CutsTopic string `yaml:"cuts_topic"`
}

// EmbeddedConfig is the in-process broker started when Brokers is empty.
type EmbeddedConfig struct {
	Listen     string `yaml:"listen"`     // host:port the broker serves on
	Partitions int    `yaml:"partitions"` // partitions of each topic it creates
	// Retention drops a partition's records older than this (by their
	// timestamps), so the log on disk does not grow without end; 0 keeps
	// records forever. Default 1h: far longer than a restart takes.
	Retention time.Duration `yaml:"retention"`
	// RetentionBytes caps each partition's log; the oldest records go
	// first; 0 means no cap. Default 1 GiB. The disk holds up to one more
	// segment of RetentionBytes/8 (at most 100 MiB) per partition.
	RetentionBytes ByteSize `yaml:"retention_bytes"`
}

type InputConfig struct {
	Topic           string `yaml:"topic"`
	Group           string `yaml:"group"`
	Format          string `yaml:"format"` // auto, json or csm
	MaxMessageBytes int    `yaml:"max_message_bytes"`
	// MaxIDBytes is the longest vertex id, edge id or label an event may
	// carry (ingest.Decoder.MaxIDBytes); longer ones are dead letters, since
	// every alert repeats them and one over the output's message limit
	// could never be written.
	MaxIDBytes int `yaml:"max_id_bytes"`
	// SessionTimeout is how long the group waits for a silent member before
	// a standby takes over.
	SessionTimeout time.Duration `yaml:"session_timeout"`
	// TSUnit is what a numeric "ts" counts since the epoch: s, ms, us or
	// ns (ingest.TimeUnit). Default ms, the unit of AppendEvent and of
	// Kafka's own timestamps.
	TSUnit string `yaml:"ts_unit"`
}

type OutputConfig struct {
	Topic           string `yaml:"topic"`
	DeadLetterTopic string `yaml:"dead_letter_topic"` // "" counts bad input without keeping it
	// BatchesTopic is the batch log of a service alone (batchlog.go);
	// "" is output.topic + ".batches".
	BatchesTopic string `yaml:"batches_topic"`
	// Client is the Kafka producer library, franz-go: kafka-go was removed
	// (docs/operations.md says why), and the key stays so that older
	// configuration files still load.
	Client string `yaml:"client"`
	// Compression of the produced batches: none, gzip, snappy, lz4 or zstd.
	Compression string `yaml:"compression"`
	// Delivery is exactly-once (the default) or at-least-once (delivery.go,
	// txn.go). Exactly once, each batch's alerts, dead letters, batch-log
	// record and input offsets commit in one Kafka transaction, and a
	// read_committed consumer sees every alert once, crashes or not.
	Delivery string `yaml:"delivery"`
	// TransactionalID names the service's transactions; "" is "gcsm-"
	// plus input.group. The members of one input group share it, so that
	// the member that becomes active fences the one it replaces. Two
	// deployments writing the same output with the same group must not.
	TransactionalID string `yaml:"transactional_id"`
}

// Delivery modes of OutputConfig.Delivery.
const (
	ExactlyOnce = "exactly-once"
	AtLeastOnce = "at-least-once"
)

type BatchConfig struct {
	Size   int           `yaml:"size"`   // updates per batch at most
	Linger time.Duration `yaml:"linger"` // how long a partial batch waits for more input
}

type GraphConfig struct {
	// Directed is true by default, as events name a src and a dst. With
	// false, edges have no direction, a new query that draws an arrow is
	// refused, and CSM messages' "e u v" is the unordered pair. A state
	// directory keeps the direction it was made with.
	Directed           bool   `yaml:"directed"`
	DefaultEdgeLabel   string `yaml:"default_edge_label"`
	DefaultVertexLabel string `yaml:"default_vertex_label"`
}

type WindowConfig struct {
	Size     time.Duration `yaml:"size"` // 0: no window, edges live until deleted
	Lateness time.Duration `yaml:"lateness"`
}

type StateConfig struct {
	Dir             string        `yaml:"dir"`
	CheckpointEvery time.Duration `yaml:"checkpoint_every"`
	Keep            int           `yaml:"keep"`
	// AcceptInputLoss starts the service, with a warning, where the start
	// would otherwise be refused because the input lost records the state
	// needs: a topic recreated behind the checkpoint's position, or records
	// before the log start that no checkpoint holds (inputcheck.go).
	AcceptInputLoss bool `yaml:"accept_input_loss"`
}

// HealthConfig tunes when /readyz fails (watch.go).
type HealthConfig struct {
	// StallAfter is how long input may wait with no batch completed, or a
	// matched batch wait for its acknowledgement, before the service
	// reports itself stalled. Default 60s: a batch normally completes in
	// well under a second, and a busy GC or a GPU warm-up takes seconds.
	StallAfter time.Duration `yaml:"stall_after"`
}

type HTTPConfig struct {
	Listen string `yaml:"listen"` // "" disables the HTTP server
	// Token, when set, is the bearer token the query API requires.
	Token string `yaml:"token"`
	// Pprof serves Go's profiles on /debug/pprof/. Profiles show the
	// process's internals and cost CPU, so it is off by default and allowed
	// only on a loopback listen address.
	Pprof bool `yaml:"pprof"`
	// MaxQueries caps the standing queries a POST /queries may bring the
	// service to, as each one is matched on every batch. Default 1000.
	MaxQueries int `yaml:"max_queries"`
	// MaxPatternBytes, MaxPatternVertices and MaxPatternEdges cap a pattern
	// posted to the API. Defaults 16KiB, 16 and 128: a 12-clique (66 edges)
	// passes; the engine's own limit is 32 vertices (query.MaxVertices).
	MaxPatternBytes    int `yaml:"max_pattern_bytes"`
	MaxPatternVertices int `yaml:"max_pattern_vertices"`
	MaxPatternEdges    int `yaml:"max_pattern_edges"`
}

type EngineConfig struct {
	Device    string `yaml:"device"` // auto, cpu or gpu; read by cmd/gcsm
	GPUs      int    `yaml:"gpus"`   // GPUs 0 to N-1 share each batch by shard; 0 or 1: one; read by cmd/gcsm
	Workers   int    `yaml:"workers"`
	Semantics string `yaml:"semantics"` // instances (each subgraph once) or embeddings
}

type LogConfig struct {
	Level  string `yaml:"level"`
	Format string `yaml:"format"` // json or console; read by cmd/gcsm
}

// QueryConfig is one standing query, from the file or the HTTP API.
type QueryConfig struct {
	Name    string `yaml:"name" json:"name"`
	Pattern string `yaml:"pattern" json:"pattern"` // Cypher-style or CSM text
	// Initial emits the query's matches in the graph at registration before
	// its deltas.
	Initial bool `yaml:"initial" json:"initial"`
	// MaxMatchesPerBatch caps the events one batch emits for the query; 0
	// means no cap. Past the cap the CPU engine abandons the query for the
	// rest of the batch (the GPU's matches are counted, not kept), and the
	// cap is reported. Which of a batch's matches are emitted when a cap is
	// hit is unspecified, and the metrics then count only those found.
	MaxMatchesPerBatch int64 `yaml:"max_matches_per_batch" json:"max_matches_per_batch,omitempty"`
	// MaxTime caps the time from the start of a batch's matching after
	// which the query's matches are no longer kept or emitted. The CPU
	// engine then abandons the query for the rest of the batch; the GPU
	// finishes its launches.
	MaxTime time.Duration `yaml:"max_time" json:"max_time,omitempty"`
}

// DefaultConfig is the configuration with no file: an embedded broker on
// 127.0.0.1:9092 and state under ./gcsm-state.
func DefaultConfig() Config {
	return Config{
		Embedded: EmbeddedConfig{Listen: "127.0.0.1:9092", Partitions: 1, Retention: time.Hour, RetentionBytes: 1 << 30},
		Input:    InputConfig{Topic: "edges", Group: "gcsm", Format: "auto", MaxMessageBytes: 1 << 20, MaxIDBytes: 1 << 10, SessionTimeout: 10 * time.Second, TSUnit: "ms"},
		Output:   OutputConfig{Topic: "matches", DeadLetterTopic: "edges.dlq", Client: "franz-go", Compression: "none", Delivery: ExactlyOnce},
		Batch:    BatchConfig{Size: 4096, Linger: 50 * time.Millisecond},
		Graph:    GraphConfig{Directed: true, DefaultEdgeLabel: "0", DefaultVertexLabel: "0"},
		State:    StateConfig{Dir: "gcsm-state", CheckpointEvery: 30 * time.Second, Keep: 3},
		HTTP: HTTPConfig{Listen: "127.0.0.1:8080", MaxQueries: 1000,
			MaxPatternBytes: 16 << 10, MaxPatternVertices: 16, MaxPatternEdges: 128},
		Health:  HealthConfig{StallAfter: time.Minute},
		Initial: InitialConfig{MaxMatches: 100_000, MaxTime: 30 * time.Second, MaxMemory: 256 << 20},
		Engine:  EngineConfig{Device: "auto", Semantics: "instances"},
		Log:     LogConfig{Level: "info", Format: "console"},
	}
}

// LoadConfig reads a YAML file over DefaultConfig. Unknown keys are errors,
// so a misspelt setting is not silently ignored.
func LoadConfig(path string) (Config, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return DefaultConfig(), err
	}
	return parseConfig(path, b)
}

// parseConfig is LoadConfig of the file path holding b.
func parseConfig(path string, b []byte) (Config, error) {
	cfg := DefaultConfig()
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&cfg); err != nil && !errors.Is(err, io.EOF) {
		return cfg, fmt.Errorf("%s: %w", path, err)
	}
	if err := cfg.Validate(); err != nil {
		return cfg, fmt.Errorf("%s: %w", path, err)
	}
	return cfg, nil
}

// Validate checks the settings that would otherwise fail later, or worse,
// silently.
func (c *Config) Validate() error {
	var errs []string
	bad := func(format string, a ...any) { errs = append(errs, fmt.Sprintf(format, a...)) }
	c.validateInputOutput(bad)
	c.validateEngine(bad)
	c.validateCluster(bad)
	c.validateBrokers(bad)
	c.validateHTTP(bad)
	c.validateQueries(bad)
	if len(errs) > 0 {
		return errors.New("invalid configuration: " + strings.Join(errs, "; "))
	}
	return nil
}

// validateInputOutput checks the input and output sections: the topics, the
// input's group and format, the output's client, compression and delivery.
func (c *Config) validateInputOutput(bad func(string, ...any)) {
	if c.Input.Topic == "" || c.Output.Topic == "" {
		bad("input.topic and output.topic are required")
	}
	if c.Input.Topic == c.Output.Topic || c.Input.Topic == c.Output.DeadLetterTopic {
		bad("input.topic %q must differ from the output topics", c.Input.Topic)
	}
	if bt := c.batchesTopic(); bt == c.Input.Topic || bt == c.Output.Topic || bt == c.Output.DeadLetterTopic {
		bad("output.batches_topic %q must differ from the input, output and dead letter topics", bt)
	}
	switch c.Output.Client {
	case "franz-go":
	case "kafka-go":
		bad("output.client kafka-go: removed; franz-go is gcsm's one Kafka client (delete the key)")
	default:
		bad("output.client %q: want franz-go", c.Output.Client)
	}
	switch c.Output.Compression {
	case "none", "gzip", "snappy", "lz4", "zstd":
	default:
		bad("output.compression %q: want none, gzip, snappy, lz4 or zstd", c.Output.Compression)
	}
	switch c.Output.Delivery {
	case ExactlyOnce, AtLeastOnce:
	default:
		bad("output.delivery %q: want %s or %s", c.Output.Delivery, ExactlyOnce, AtLeastOnce)
	}
	if c.Input.Group == "" {
		bad("input.group is required")
	}
	switch c.Input.Format {
	case "auto", "json", "csm":
	default:
		bad("input.format %q: want auto, json or csm", c.Input.Format)
	}
	if c.Input.MaxMessageBytes < 1 {
		bad("input.max_message_bytes must be positive")
	}
	if c.Input.MaxIDBytes < 1 {
		bad("input.max_id_bytes must be positive")
	}
	if _, err := ingest.ParseTimeUnit(c.Input.TSUnit); err != nil {
		bad("input.ts_unit: %v", err)
	}
}

// validateEngine checks batching, the state directory, health, the graph's
// default labels and the matcher's settings.
func (c *Config) validateEngine(bad func(string, ...any)) {
	if c.Batch.Size < 1 {
		bad("batch.size must be at least 1, got %d", c.Batch.Size)
	}
	if c.Batch.Linger < 0 || c.Window.Size < 0 || c.Window.Lateness < 0 || c.State.CheckpointEvery < 0 {
		bad("durations must not be negative")
	}
	if c.State.Dir == "" {
		bad("state.dir is required")
	}
	if c.Health.StallAfter < time.Second {
		bad("health.stall_after %v: want at least 1s (the health sampler's period)", c.Health.StallAfter)
	}
	if c.State.Keep < 1 {
		bad("state.keep must be at least 1, got %d", c.State.Keep)
	}
	if c.Graph.DefaultEdgeLabel == "" || c.Graph.DefaultVertexLabel == "" {
		bad("graph.default_edge_label and graph.default_vertex_label must not be empty")
	}
	switch c.Engine.Semantics {
	case "instances", "embeddings":
	default:
		bad("engine.semantics %q: want instances or embeddings", c.Engine.Semantics)
	}
	if c.Engine.GPUs < 0 || c.Engine.GPUs > 64 {
		bad("engine.gpus %d: want 1 to 64 (0 means 1)", c.Engine.GPUs)
	}
	if c.Engine.Workers < 0 {
		bad("engine.workers %d: want 0 (every core) or more", c.Engine.Workers)
	}
}

// validateBrokers checks that there are brokers to reach, how connections
// to them are secured, and the embedded broker's settings.
func (c *Config) validateBrokers(bad func(string, ...any)) {
	if len(c.Brokers) == 0 && c.Embedded.Listen == "" {
		bad("no brokers and no embedded.listen")
	}
	if len(c.Brokers) == 0 && (c.TLS.On() || c.SASL.Mechanism != "") {
		bad("tls and sasl secure the connections to brokers, and none are set: the embedded broker serves plaintext on loopback (gcsm broker --tls-cert/--sasl serves a secured one)")
	}
	if err := c.SASL.Validate(); err != nil {
		bad("%v", err)
	}
	if c.Embedded.Partitions < 1 {
		bad("embedded.partitions must be at least 1")
	}
	if c.Embedded.Retention < 0 || (c.Embedded.Retention > 0 && c.Embedded.Retention < time.Second) {
		bad("embedded.retention %v: want 0 (keep forever) or at least 1s", c.Embedded.Retention)
	}
	if c.Embedded.RetentionBytes < 0 || (c.Embedded.RetentionBytes > 0 && c.Embedded.RetentionBytes < minRetentionBytes) {
		bad("embedded.retention_bytes %d: want 0 (no cap) or at least %d (1MiB)", c.Embedded.RetentionBytes, minRetentionBytes)
	}
}

// validateHTTP checks the HTTP API's limits and those of a new query's
// initial matching.
func (c *Config) validateHTTP(bad func(string, ...any)) {
	if c.HTTP.Pprof {
		if err := loopback(c.HTTP.Listen); err != nil {
			bad("http.pprof: %v", err)
		}
	}
	if c.HTTP.MaxQueries < 1 || c.HTTP.MaxPatternBytes < 1 || c.HTTP.MaxPatternVertices < 1 || c.HTTP.MaxPatternEdges < 1 {
		bad("http.max_queries, http.max_pattern_bytes, http.max_pattern_vertices and http.max_pattern_edges must be at least 1")
	}
	if c.Initial.MaxMatches < 1 || c.Initial.MaxTime <= 0 || c.Initial.MaxMemory < minInitialMemory {
		bad("initial.max_matches and initial.max_time must be positive, and initial.max_memory at least %d (1MiB)", minInitialMemory)
	}
}

// validateQueries checks each configured query, and that no two share a
// name.
func (c *Config) validateQueries(bad func(string, ...any)) {
	names := map[string]bool{}
	for i, q := range c.Queries {
		if err := q.validate(); err != nil {
			bad("queries[%d]: %v", i, err)
		}
		if names[q.Name] {
			bad("queries[%d]: a second query named %q", i, q.Name)
		}
		names[q.Name] = true
	}
}

// validateCluster checks the cluster section and what cluster mode
// cannot do.
func (c *Config) validateCluster(bad func(string, ...any)) {
	cl := &c.Cluster
	if cl.Shards < 0 || cl.Shards > maxShards {
		bad("cluster.shards %d: want 0 (no cluster) to %d", cl.Shards, maxShards)
	}
	if cl.Shards == 0 {
		if cl.Group != "" || cl.Topic != "" || cl.CutsTopic != "" {
			bad("cluster.group, cluster.topic and cluster.cuts_topic need cluster.shards")
		}
		return
	}
	group, topic, cuts := c.clusterNames()
	if group == c.Input.Group {
		bad("cluster.group %q must differ from input.group", group)
	}
	if topic == cuts {
		bad("cluster.topic and cluster.cuts_topic are both %q", topic)
	}
	for _, t := range []string{topic, cuts} {
		if t == c.Input.Topic || t == c.Output.Topic || t == c.Output.DeadLetterTopic {
			bad("cluster topic %q must differ from the input and output topics", t)
		}
	}
	if c.State.Keep < 2 {
		// A member that gains a shard may have to replay from a checkpoint
		// older than the shard's last emitted batch.
		bad("state.keep %d: cluster.shards needs at least 2", c.State.Keep)
	}
	if c.State.AcceptInputLoss {
		bad("state.accept_input_loss is not available with cluster.shards (members must apply the same input)")
	}
	for i, q := range c.Queries {
		if q.Initial {
			bad("queries[%d]: initial is not available with cluster.shards (every member would emit every initial match)", i)
		}
	}
}

// maxShards bounds cluster.shards: each shard is a partition of the
// coordination topic that every rebalance hands out.
const maxShards = 4096

// batchesTopic is the batch log's topic, its default applied.
func (c *Config) batchesTopic() string {
	if c.Output.BatchesTopic != "" {
		return c.Output.BatchesTopic
	}
	return c.Output.Topic + ".batches"
}

// transactionalID is the service's transactional id, its default applied.
func (c *Config) transactionalID() string {
	if c.Output.TransactionalID != "" {
		return c.Output.TransactionalID
	}
	return "gcsm-" + c.Input.Group
}

// clusterNames are the cluster's group and topics, defaults applied.
func (c *Config) clusterNames() (group, topic, cuts string) {
	group, topic, cuts = c.Cluster.Group, c.Cluster.Topic, c.Cluster.CutsTopic
	if group == "" {
		group = c.Input.Group + "-members"
	}
	if topic == "" {
		topic = c.Input.Topic + ".shards"
	}
	if cuts == "" {
		cuts = c.Input.Topic + ".cuts"
	}
	return group, topic, cuts
}

func (q *QueryConfig) validate() error {
	switch {
	case q.Name == "":
		return errors.New("a query needs a name")
	case len(q.Name) > maxQueryName:
		return fmt.Errorf("query name of %d bytes: at most %d", len(q.Name), maxQueryName)
	case !printable(q.Name):
		return fmt.Errorf("query name %q: printable UTF-8 only (it is a metric label and names the query in logs)", q.Name)
	case strings.ContainsAny(q.Name, "/ \t\n"):
		return fmt.Errorf("query name %q: no slashes or spaces (it starts every output key)", q.Name)
	case q.Pattern == "":
		return fmt.Errorf("query %q has no pattern", q.Name)
	case q.MaxMatchesPerBatch < 0 || q.MaxTime < 0:
		return fmt.Errorf("query %q: limits must not be negative", q.Name)
	}
	return nil
}

// maxQueryName caps a query's name, which starts every output key and
// labels the query's metric series.
const maxQueryName = 256

// printable says whether s is valid UTF-8 of printable characters.
func printable(s string) bool {
	if !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if !unicode.IsPrint(r) {
			return false
		}
	}
	return true
}

// loopback checks that addr (host:port) can only be reached from this
// machine.
func loopback(addr string) error {
	if addr == "" {
		return errors.New("needs http.listen")
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("http.listen %q: %w", addr, err)
	}
	if host == "localhost" {
		return nil
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return nil
	}
	return fmt.Errorf("profiles are served only on a loopback address, and http.listen %q is not one (use 127.0.0.1:PORT)", addr)
}

// minInitialMemory is the smallest initial.max_memory: below it no graph
// worth a query could be copied.
const minInitialMemory = 1 << 20

// minRetentionBytes is the smallest retention_bytes: below it a partition
// would keep little more than one produce batch.
const minRetentionBytes = 1 << 20

// ByteSize is a size in bytes that YAML may write as a number or with a
// binary unit: 1073741824, 1GiB, 512MiB, 64KiB.
type ByteSize int64

// UnmarshalYAML reads a plain integer or a number with KiB, MiB, GiB or TiB.
func (b *ByteSize) UnmarshalYAML(n *yaml.Node) error {
	v, err := parseByteSize(n.Value)
	if err != nil {
		return fmt.Errorf("line %d: %w", n.Line, err)
	}
	*b = v
	return nil
}

// Set parses a flag's value as UnmarshalYAML does.
func (b *ByteSize) Set(s string) error {
	v, err := parseByteSize(s)
	if err != nil {
		return err
	}
	*b = v
	return nil
}

// String writes the size in bytes.
func (b *ByteSize) String() string { return strconv.FormatInt(int64(*b), 10) }

// parseByteSize parses a byte count: digits, optionally followed by KiB,
// MiB, GiB or TiB (powers of 1024; "B" alone is allowed too).
func parseByteSize(s string) (ByteSize, error) {
	t := strings.TrimSpace(s)
	mult := int64(1)
	for i, u := range []string{"KiB", "MiB", "GiB", "TiB"} {
		if rest, ok := strings.CutSuffix(t, u); ok {
			t, mult = strings.TrimSpace(rest), int64(1)<<(10*(i+1))
			break
		}
	}
	if mult == 1 {
		t = strings.TrimSpace(strings.TrimSuffix(t, "B"))
	}
	n, err := strconv.ParseInt(t, 10, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("size %q: want a whole number of bytes, optionally with KiB, MiB, GiB or TiB", s)
	}
	if n > math.MaxInt64/mult {
		return 0, fmt.Errorf("size %q is too large", s)
	}
	return ByteSize(n * mult), nil
}
