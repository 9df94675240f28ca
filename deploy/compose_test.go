package deploy

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/compose-spec/compose-go/v2/cli"
	"github.com/compose-spec/compose-go/v2/loader"
	"github.com/compose-spec/compose-go/v2/types"
	"go.yaml.in/yaml/v3"
)

// The metrics of DESIGN.md §9, without the gcsm_ prefix.
var (
	counters = []string{
		"updates_total", "rejects_total", "matches_total", "batches_total", "zero_copy_bytes_total",
	}
	histograms = []string{"batch_seconds", "checkpoint_seconds"}
	gauges     = []string{
		"graph_vertices", "graph_edges", "gpu_cache_bytes", "gpu_cache_hit_ratio", "consumer_lag",
		"checkpoint_age_seconds", "queries",
	}
)

const metricPrefix = "gcsm_"

// The services of docker-compose.yml and the paths that tie the files together.
const (
	composeFile      = "docker-compose.yml"
	gcsmConfigSource = "deploy/gcsm.yaml"
	gcsmConfigTarget = "/etc/gcsm/gcsm.yaml"
	gcsmStateDir     = "/var/lib/gcsm"
	promConfigSource = "deploy/prometheus.yml"
	dashboardFile    = "deploy/grafana/dashboards/gcsm.json"
	datasourcesFile  = "deploy/grafana/provisioning/datasources/prometheus.yml"
	dashProviderFile = "deploy/grafana/provisioning/dashboards/gcsm.yml"
)

// root is the repository root, absolute.
func root(t *testing.T) string {
	t.Helper()
	r, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func repoPath(t *testing.T, rel string) string {
	return filepath.Join(root(t), filepath.FromSlash(rel))
}

func readFile(t *testing.T, rel string) []byte {
	t.Helper()
	b, err := os.ReadFile(repoPath(t, rel))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// loadProject loads docker-compose.yml as docker compose would: schema
// validation, interpolation (with an empty environment, so defaults apply),
// normalization, consistency checks, and paths resolved against the
// repository root. None of it needs a Docker engine.
func loadProject(t *testing.T) *types.Project {
	t.Helper()
	opts, err := cli.NewProjectOptions(
		[]string{repoPath(t, composeFile)},
		cli.WithWorkingDirectory(root(t)),
		cli.WithInterpolation(true),
		cli.WithNormalization(true),
		cli.WithConsistency(true),
		cli.WithResolvedPaths(true),
	)
	if err != nil {
		t.Fatal(err)
	}
	p, err := opts.LoadProject(context.Background())
	if err != nil {
		t.Fatalf("loading %s: %v", composeFile, err)
	}
	return p
}

func service(t *testing.T, p *types.Project, name string) types.ServiceConfig {
	t.Helper()
	s, err := p.GetService(name)
	if err != nil {
		t.Fatalf("%s: %v", composeFile, err)
	}
	return s
}

func env(s types.ServiceConfig, key string) string {
	if v, ok := s.Environment[key]; ok && v != nil {
		return *v
	}
	return ""
}

// bindSource returns the host path that service s bind-mounts at target.
func bindSource(s types.ServiceConfig, target string) (string, bool) {
	for _, v := range s.Volumes {
		if v.Type == types.VolumeTypeBind && v.Target == target {
			return v.Source, true
		}
	}
	return "", false
}

// hostPath maps a path inside service s's container to the host through its
// bind mounts, the deepest mount first.
func hostPath(s types.ServiceConfig, inside string) (string, bool) {
	best, bestLen := "", -1
	for _, v := range s.Volumes {
		if v.Type != types.VolumeTypeBind {
			continue
		}
		if inside == v.Target || strings.HasPrefix(inside, strings.TrimSuffix(v.Target, "/")+"/") {
			if len(v.Target) > bestLen {
				best = filepath.Join(v.Source, filepath.FromSlash(strings.TrimPrefix(inside, v.Target)))
				bestLen = len(v.Target)
			}
		}
	}
	return best, bestLen >= 0
}

func TestComposeServices(t *testing.T) {
	p := loadProject(t)
	for _, name := range []string{"kafka", "gcsm", "prometheus", "grafana"} {
		if _, err := p.GetService(name); err != nil {
			t.Errorf("%s: service %s: %v", composeFile, name, err)
		}
	}
	for name, s := range p.Services {
		if s.Image == "" && s.Build == nil {
			t.Errorf("service %s has neither image nor build", name)
		}
		for _, v := range s.Volumes {
			if v.Type == types.VolumeTypeVolume {
				if _, ok := p.Volumes[v.Source]; !ok {
					t.Errorf("service %s mounts volume %q, which is not declared", name, v.Source)
				}
			}
		}
	}
}

func TestComposeKafka(t *testing.T) {
	p := loadProject(t)
	k := service(t, p, "kafka")

	repo, tag, _ := strings.Cut(k.Image, ":")
	if repo != "apache/kafka" {
		t.Errorf("kafka image %q: want apache/kafka", k.Image)
	} else if !versionAtLeast(tag, 3, 9, 0) {
		t.Errorf("kafka image %q: want apache/kafka 3.9.0 or later (KRaft-only images with the docker run script)", k.Image)
	}

	hc := k.HealthCheck
	if hc == nil || hc.Disable || len(hc.Test) == 0 {
		t.Errorf("kafka has no healthcheck; gcsm waits for service_healthy")
	} else if test := strings.Join(hc.Test, " "); !strings.Contains(test, "/opt/kafka/bin/kafka-broker-api-versions.sh") {
		t.Errorf("kafka healthcheck %q does not run kafka-broker-api-versions.sh", test)
	}

	roles := strings.Split(env(k, "KAFKA_PROCESS_ROLES"), ",")
	if !slices.Contains(roles, "controller") || !slices.Contains(roles, "broker") {
		t.Errorf("KAFKA_PROCESS_ROLES = %q: want broker,controller (KRaft, one combined node)", env(k, "KAFKA_PROCESS_ROLES"))
	}
	id := env(k, "KAFKA_NODE_ID")
	if _, err := strconv.Atoi(id); err != nil {
		t.Errorf("KAFKA_NODE_ID = %q: want a number", id)
	}
	listeners := strings.Split(env(k, "KAFKA_LISTENERS"), ",")
	for _, l := range []string{"PLAINTEXT://:9092", "CONTROLLER://:9093"} {
		if !slices.Contains(listeners, l) {
			t.Errorf("KAFKA_LISTENERS = %q: missing %s", env(k, "KAFKA_LISTENERS"), l)
		}
	}
	if got := env(k, "KAFKA_ADVERTISED_LISTENERS"); !slices.Contains(strings.Split(got, ","), "PLAINTEXT://kafka:9092") {
		t.Errorf("KAFKA_ADVERTISED_LISTENERS = %q: want PLAINTEXT://kafka:9092", got)
	}
	if got := env(k, "KAFKA_CONTROLLER_LISTENER_NAMES"); got != "CONTROLLER" {
		t.Errorf("KAFKA_CONTROLLER_LISTENER_NAMES = %q, want CONTROLLER", got)
	}
	if got := env(k, "KAFKA_CONTROLLER_QUORUM_VOTERS"); got != id+"@kafka:9093" {
		t.Errorf("KAFKA_CONTROLLER_QUORUM_VOTERS = %q, want %s@kafka:9093 (this node's controller listener)", got, id)
	}
	for key, want := range map[string]string{
		"KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR": "1",
		"KAFKA_AUTO_CREATE_TOPICS_ENABLE":        "true",
	} {
		if got := env(k, key); got != want {
			t.Errorf("%s = %q, want %q", key, got, want)
		}
	}
	if c := env(k, "CLUSTER_ID"); c != "" {
		if b, err := base64.RawURLEncoding.DecodeString(c); err != nil || len(b) != 16 {
			t.Errorf("CLUSTER_ID %q is not a base64url UUID (kafka-storage.sh format would refuse it)", c)
		}
	}
	// The log directory must be on the named volume, or the topics vanish
	// with the container.
	logDirs := env(k, "KAFKA_LOG_DIRS")
	onVolume := false
	for _, v := range k.Volumes {
		if v.Type == types.VolumeTypeVolume && v.Target == logDirs {
			onVolume = true
		}
	}
	if !onVolume {
		t.Errorf("KAFKA_LOG_DIRS = %q is not a named volume's mount point", logDirs)
	}
}

func TestComposeGcsm(t *testing.T) {
	p := loadProject(t)
	g := service(t, p, "gcsm")

	dep, ok := g.DependsOn["kafka"]
	if !ok {
		t.Errorf("gcsm does not depend on kafka")
	} else if dep.Condition != types.ServiceConditionHealthy {
		t.Errorf("gcsm depends on kafka with condition %q, want %s", dep.Condition, types.ServiceConditionHealthy)
	}

	if g.Build == nil {
		t.Errorf("gcsm is not built from the Dockerfile")
	} else {
		if g.Build.Context != root(t) {
			t.Errorf("gcsm build context %q, want the repository root %q", g.Build.Context, root(t))
		}
		df := g.Build.Dockerfile
		if !filepath.IsAbs(df) {
			df = filepath.Join(g.Build.Context, df)
		}
		if df != repoPath(t, "Dockerfile") {
			t.Errorf("gcsm Dockerfile %q, want %q", df, repoPath(t, "Dockerfile"))
		}
	}

	if g.Image != "" && g.PullPolicy != types.PullPolicyBuild {
		t.Errorf("gcsm names image %q with pull_policy %q: compose would look for it in a registry first; want pull_policy: build", g.Image, g.PullPolicy)
	}

	src, ok := bindSource(g, gcsmConfigTarget)
	if !ok {
		t.Fatalf("gcsm does not bind-mount its config at %s", gcsmConfigTarget)
	}
	if src != repoPath(t, gcsmConfigSource) {
		t.Errorf("gcsm config mount source %q, want %q", src, repoPath(t, gcsmConfigSource))
	}
	if st, err := os.Stat(src); err != nil || !st.Mode().IsRegular() {
		t.Errorf("gcsm config mount source %s is not a file: %v", src, err)
	}
	for _, v := range g.Volumes {
		if v.Target == gcsmConfigTarget && !v.ReadOnly {
			t.Errorf("gcsm config is mounted read-write; want read_only")
		}
	}

	state := false
	for _, v := range g.Volumes {
		if v.Target == gcsmStateDir && v.Type == types.VolumeTypeVolume {
			state = true
		}
	}
	if !state {
		t.Errorf("gcsm has no named volume at %s (its checkpoints)", gcsmStateDir)
	}

	if g.Restart != types.RestartPolicyUnlessStopped {
		t.Errorf("gcsm restart %q, want %s", g.Restart, types.RestartPolicyUnlessStopped)
	}
	if !publishes(g, 8080, "8080") {
		t.Errorf("gcsm does not publish 127.0.0.1:8080:8080 (ports %+v)", g.Ports)
	}

	// The container runs the config it is given: compose's command (when
	// set) is the Dockerfile's CMD, which names the mounted file.
	if len(g.Command) > 0 {
		if cfg := flagValue(g.Command, "--config"); cfg != gcsmConfigTarget {
			t.Errorf("gcsm command %q reads config %q, want %s", g.Command, cfg, gcsmConfigTarget)
		}
	}
}

func publishes(s types.ServiceConfig, target uint32, published string) bool {
	for _, port := range s.Ports {
		if port.Target == target && port.Published == published && port.HostIP == "127.0.0.1" {
			return true
		}
	}
	return false
}

func TestComposePortsBindLoopback(t *testing.T) {
	p := loadProject(t)
	for name, s := range p.Services {
		for _, port := range s.Ports {
			if port.Published != "" && port.HostIP != "127.0.0.1" {
				t.Errorf("service %s publishes %s:%s->%d on all interfaces; bind 127.0.0.1", name, port.HostIP, port.Published, port.Target)
			}
		}
	}
	for name, port := range map[string]uint32{"prometheus": 9090, "grafana": 3000} {
		s := service(t, p, name)
		if !publishes(s, port, strconv.Itoa(int(port))) {
			t.Errorf("%s does not publish 127.0.0.1:%d:%d", name, port, port)
		}
	}
}

// TestComposeBindMounts checks that every bind mount's source exists: a
// missing source is created by Docker as an empty directory, and the service
// then reads a directory where it wanted a file.
func TestComposeBindMounts(t *testing.T) {
	p := loadProject(t)
	deploy := repoPath(t, "deploy")
	for name, s := range p.Services {
		for _, v := range s.Volumes {
			if v.Type != types.VolumeTypeBind {
				continue
			}
			rel, err := filepath.Rel(deploy, v.Source)
			if err != nil || strings.HasPrefix(rel, "..") {
				t.Errorf("service %s bind-mounts %s, outside ./deploy", name, v.Source)
				continue
			}
			st, err := os.Stat(v.Source)
			if err != nil {
				t.Errorf("service %s bind-mounts %s: %v", name, v.Source, err)
				continue
			}
			if filepath.Ext(v.Target) != "" && !st.Mode().IsRegular() {
				t.Errorf("service %s mounts %s at %s: not a regular file", name, v.Source, v.Target)
			}
			if !v.ReadOnly {
				t.Errorf("service %s mounts %s read-write; configuration should be read_only", name, v.Source)
			}
		}
	}

	// The mounts that tie Prometheus and Grafana to their files.
	prom := service(t, p, "prometheus")
	if src, _ := bindSource(prom, "/etc/prometheus/prometheus.yml"); src != repoPath(t, promConfigSource) {
		t.Errorf("prometheus reads /etc/prometheus/prometheus.yml from %q, want %s", src, promConfigSource)
	}
	gr := service(t, p, "grafana")
	for inside, want := range map[string]string{
		"/etc/grafana/provisioning/datasources/prometheus.yml": datasourcesFile,
		"/etc/grafana/provisioning/dashboards/gcsm.yml":        dashProviderFile,
	} {
		if got, _ := hostPath(gr, inside); got != repoPath(t, want) {
			t.Errorf("grafana reads %s from %q, want %s", inside, got, want)
		}
	}
	if home := env(gr, "GF_DASHBOARDS_DEFAULT_HOME_DASHBOARD_PATH"); home != "" {
		if got, _ := hostPath(gr, home); got != repoPath(t, dashboardFile) {
			t.Errorf("grafana's home dashboard %s is %q on the host, want %s", home, got, dashboardFile)
		}
	}
}

// TestComposeGPUBlock uncomments the commented-out deploy block of the gcsm
// service and loads the result, so that the GPU instructions stay valid.
func TestComposeGPUBlock(t *testing.T) {
	raw := readFile(t, composeFile)
	text, ok := uncommentBlock(string(raw), "deploy:")
	if !ok {
		t.Fatalf("%s: no commented-out deploy: block (the NVIDIA GPU example)", composeFile)
	}
	p, err := loader.LoadWithContext(context.Background(), types.ConfigDetails{
		WorkingDir:  root(t),
		ConfigFiles: []types.ConfigFile{{Filename: repoPath(t, composeFile), Content: []byte(text)}},
		Environment: types.Mapping{},
	})
	if err != nil {
		t.Fatalf("%s with the GPU block uncommented: %v", composeFile, err)
	}
	g := service(t, p, "gcsm")
	if g.Deploy == nil || g.Deploy.Resources.Reservations == nil || len(g.Deploy.Resources.Reservations.Devices) == 0 {
		t.Fatalf("the uncommented block does not reserve a device for gcsm")
	}
	d := g.Deploy.Resources.Reservations.Devices[0]
	if d.Driver != "nvidia" || !slices.Contains(d.Capabilities, "gpu") {
		t.Errorf("the uncommented block reserves %+v, want driver nvidia with capability gpu", d)
	}
}

// uncommentBlock finds a line "# key" and removes "# " from it and from the
// deeper-indented commented lines after it.
func uncommentBlock(text, key string) (string, bool) {
	lines := strings.Split(text, "\n")
	for i, l := range lines {
		trimmed := strings.TrimLeft(l, " ")
		if trimmed != "# "+key {
			continue
		}
		indent := l[:len(l)-len(trimmed)]
		lines[i] = indent + key
		for j := i + 1; j < len(lines) && strings.HasPrefix(lines[j], indent+"#   "); j++ {
			lines[j] = indent + lines[j][len(indent)+2:]
		}
		return strings.Join(lines, "\n"), true
	}
	return text, false
}

// versionAtLeast reports whether tag (x.y.z, perhaps with a suffix) is at
// least major.minor.patch.
func versionAtLeast(tag string, major, minor, patch int) bool {
	m := regexp.MustCompile(`^(\d+)\.(\d+)\.(\d+)`).FindStringSubmatch(tag)
	if m == nil {
		return false
	}
	v := [3]int{}
	for i := range v {
		v[i], _ = strconv.Atoi(m[i+1])
	}
	want := [3]int{major, minor, patch}
	for i := range v {
		if v[i] != want[i] {
			return v[i] > want[i]
		}
	}
	return true
}

func flagValue(args []string, name string) string {
	for i, a := range args {
		if a == name && i+1 < len(args) {
			return args[i+1]
		}
		if v, ok := strings.CutPrefix(a, name+"="); ok {
			return v
		}
	}
	return ""
}

// --- deploy/prometheus.yml ---

type promConfig struct {
	Global        promScrape   `yaml:"global"`
	ScrapeConfigs []promScrape `yaml:"scrape_configs"`
}

type promScrape struct {
	JobName        string `yaml:"job_name"`
	ScrapeInterval string `yaml:"scrape_interval"`
	ScrapeTimeout  string `yaml:"scrape_timeout"`
	MetricsPath    string `yaml:"metrics_path"`
	Scheme         string `yaml:"scheme"`
	StaticConfigs  []struct {
		Targets []string `yaml:"targets"`
	} `yaml:"static_configs"`
}

// promDuration parses a Prometheus duration (1y2w3d4h5m6s7ms).
func promDuration(s string) (time.Duration, error) {
	m := regexp.MustCompile(`^(?:(\d+)y)?(?:(\d+)w)?(?:(\d+)d)?(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?(?:(\d+)ms)?$`).FindStringSubmatch(s)
	if s == "" || m == nil {
		return 0, fmt.Errorf("bad Prometheus duration %q", s)
	}
	units := []time.Duration{365 * 24 * time.Hour, 7 * 24 * time.Hour, 24 * time.Hour, time.Hour, time.Minute, time.Second, time.Millisecond}
	var d time.Duration
	for i, u := range units {
		if m[i+1] != "" {
			n, _ := strconv.Atoi(m[i+1])
			d += time.Duration(n) * u
		}
	}
	return d, nil
}

func TestPrometheusScrapesGcsm(t *testing.T) {
	var cfg promConfig
	if err := yaml.Unmarshal(readFile(t, promConfigSource), &cfg); err != nil {
		t.Fatalf("%s: %v", promConfigSource, err)
	}
	// Prometheus's defaults.
	interval, timeout := time.Minute, 10*time.Second
	if cfg.Global.ScrapeInterval != "" {
		d, err := promDuration(cfg.Global.ScrapeInterval)
		if err != nil {
			t.Fatal(err)
		}
		interval = d
	}
	if cfg.Global.ScrapeTimeout != "" {
		d, err := promDuration(cfg.Global.ScrapeTimeout)
		if err != nil {
			t.Fatal(err)
		}
		timeout = d
	}
	if timeout > interval {
		t.Errorf("global scrape_timeout %v exceeds scrape_interval %v", timeout, interval)
	}

	jobs := map[string]bool{}
	found := false
	for _, sc := range cfg.ScrapeConfigs {
		if sc.JobName == "" || jobs[sc.JobName] {
			t.Errorf("%s: job name %q empty or repeated", promConfigSource, sc.JobName)
		}
		jobs[sc.JobName] = true
		jobInterval := interval
		if sc.ScrapeInterval != "" {
			d, err := promDuration(sc.ScrapeInterval)
			if err != nil {
				t.Errorf("job %s: %v", sc.JobName, err)
			}
			jobInterval = d
		}
		if sc.ScrapeTimeout != "" {
			d, err := promDuration(sc.ScrapeTimeout)
			if err != nil {
				t.Errorf("job %s: %v", sc.JobName, err)
			}
			if d > jobInterval {
				t.Errorf("job %s: scrape_timeout %v exceeds scrape_interval %v (Prometheus refuses it)", sc.JobName, d, jobInterval)
			}
		}
		for _, st := range sc.StaticConfigs {
			if !slices.Contains(st.Targets, "gcsm:8080") {
				continue
			}
			found = true
			if path := sc.MetricsPath; path != "" && path != "/metrics" {
				t.Errorf("job %s scrapes gcsm:8080 at %q, want /metrics", sc.JobName, path)
			}
			if sc.Scheme != "" && sc.Scheme != "http" {
				t.Errorf("job %s scrapes gcsm with scheme %q, want http", sc.JobName, sc.Scheme)
			}
			if jobInterval != 5*time.Second {
				t.Errorf("job %s scrapes gcsm every %v, want 5s", sc.JobName, jobInterval)
			}
		}
	}
	if !found {
		t.Errorf("%s: no job scrapes gcsm:8080", promConfigSource)
	}

	// gcsm:8080 must be where gcsm listens: the compose service name and the
	// port of http.listen.
	cfgG := loadGcsmConfig(t)
	_, port, err := net.SplitHostPort(cfgG.HTTP.Listen)
	if err != nil || port != "8080" {
		t.Errorf("%s: http.listen %q does not listen on port 8080, which Prometheus scrapes", gcsmConfigSource, cfgG.HTTP.Listen)
	}
}

// --- Grafana ---

type dsRef struct {
	Type string `json:"type"`
	UID  string `json:"uid"`
}

type dashPanel struct {
	ID         int             `json:"id"`
	Type       string          `json:"type"`
	Title      string          `json:"title"`
	Datasource json.RawMessage `json:"datasource"`
	GridPos    *struct {
		H, W, X, Y int
	} `json:"gridPos"`
	Targets []struct {
		RefID      string          `json:"refId"`
		Expr       string          `json:"expr"`
		Datasource json.RawMessage `json:"datasource"`
	} `json:"targets"`
	Panels []dashPanel `json:"panels"`
}

type dashboard struct {
	UID           string      `json:"uid"`
	Title         string      `json:"title"`
	SchemaVersion int         `json:"schemaVersion"`
	Panels        []dashPanel `json:"panels"`
	Templating    struct {
		List []struct {
			Name       string          `json:"name"`
			Type       string          `json:"type"`
			Datasource json.RawMessage `json:"datasource"`
			Query      json.RawMessage `json:"query"`
		} `json:"list"`
	} `json:"templating"`
}

// provisionedDatasource returns the uid of the Prometheus datasource that
// Grafana's provisioning file declares, after checking it points at the
// compose Prometheus.
func provisionedDatasource(t *testing.T) string {
	t.Helper()
	var prov struct {
		APIVersion  int `yaml:"apiVersion"`
		Datasources []struct {
			Name string `yaml:"name"`
			UID  string `yaml:"uid"`
			Type string `yaml:"type"`
			URL  string `yaml:"url"`
		} `yaml:"datasources"`
	}
	if err := yaml.Unmarshal(readFile(t, datasourcesFile), &prov); err != nil {
		t.Fatalf("%s: %v", datasourcesFile, err)
	}
	if prov.APIVersion != 1 {
		t.Errorf("%s: apiVersion %d, want 1", datasourcesFile, prov.APIVersion)
	}
	uid := ""
	for _, ds := range prov.Datasources {
		if ds.Type != "prometheus" {
			continue
		}
		if uid != "" {
			t.Errorf("%s: more than one Prometheus datasource", datasourcesFile)
		}
		uid = ds.UID
		if ds.URL != "http://prometheus:9090" {
			t.Errorf("%s: Prometheus at %q, want http://prometheus:9090 (the compose service)", datasourcesFile, ds.URL)
		}
	}
	if uid == "" {
		t.Fatalf("%s: no Prometheus datasource with a uid", datasourcesFile)
	}
	return uid
}

func TestGrafanaDashboardProvider(t *testing.T) {
	var prov struct {
		APIVersion int `yaml:"apiVersion"`
		Providers  []struct {
			Name    string `yaml:"name"`
			Type    string `yaml:"type"`
			Options struct {
				Path string `yaml:"path"`
			} `yaml:"options"`
		} `yaml:"providers"`
	}
	if err := yaml.Unmarshal(readFile(t, dashProviderFile), &prov); err != nil {
		t.Fatalf("%s: %v", dashProviderFile, err)
	}
	if prov.APIVersion != 1 || len(prov.Providers) == 0 {
		t.Fatalf("%s: want apiVersion 1 and a provider", dashProviderFile)
	}
	// The provider's path, inside the grafana container, must hold gcsm.json.
	gr := service(t, loadProject(t), "grafana")
	for _, pv := range prov.Providers {
		if pv.Type != "file" {
			continue
		}
		dir, ok := hostPath(gr, pv.Options.Path)
		if !ok {
			t.Errorf("provider %s reads %s, which grafana does not mount", pv.Name, pv.Options.Path)
			continue
		}
		if _, err := os.Stat(filepath.Join(dir, filepath.Base(dashboardFile))); err != nil {
			t.Errorf("provider %s: %v", pv.Name, err)
		}
	}
}

func TestGrafanaDashboard(t *testing.T) {
	uid := provisionedDatasource(t)
	raw := readFile(t, dashboardFile)
	var d dashboard
	dec := json.NewDecoder(bytes.NewReader(raw))
	if err := dec.Decode(&d); err != nil {
		t.Fatalf("%s: %v", dashboardFile, err)
	}
	if dec.More() {
		t.Fatalf("%s: data after the dashboard object", dashboardFile)
	}
	if d.UID == "" || d.Title == "" || d.SchemaVersion == 0 {
		t.Errorf("%s: uid, title and schemaVersion must be set", dashboardFile)
	}

	checkDS := func(where string, msg json.RawMessage, required bool) {
		if len(msg) == 0 || string(msg) == "null" {
			if required {
				t.Errorf("%s: no datasource", where)
			}
			return
		}
		var ref dsRef
		if err := json.Unmarshal(msg, &ref); err != nil {
			t.Errorf("%s: datasource %s is not a {type, uid} reference", where, msg)
			return
		}
		if ref.Type != "prometheus" || ref.UID != uid {
			t.Errorf("%s: datasource %+v, want type prometheus and uid %q (from %s)", where, ref, uid, datasourcesFile)
		}
	}

	vars := map[string]bool{}
	for _, v := range d.Templating.List {
		vars[v.Name] = true
		if v.Type != "query" {
			continue
		}
		where := "variable $" + v.Name
		checkDS(where, v.Datasource, true)
		var q string
		if err := json.Unmarshal(v.Query, &q); err != nil {
			var obj struct{ Query string }
			if err := json.Unmarshal(v.Query, &obj); err != nil {
				t.Errorf("%s: query %s", where, v.Query)
			}
			q = obj.Query
		}
		// label_values(series, label) reads labels, with no rate() needed:
		// only the series name must be one of ours.
		m := regexp.MustCompile(`^\s*label_values\(\s*([A-Za-z_:][A-Za-z0-9_:]*)\s*(?:\{[^{}]*\})?\s*,\s*\w+\s*\)\s*$`).FindStringSubmatch(q)
		if m == nil {
			t.Errorf("%s: query %q is not label_values(gcsm_..., label)", where, q)
		} else if _, ok := seriesMetric(m[1]); !ok {
			t.Errorf("%s: %q reads %s, which is not in DESIGN.md §9's metric list", where, q, m[1])
		}
	}

	used := map[string]bool{}
	ids := map[int]bool{}
	var walk func(ps []dashPanel)
	walk = func(ps []dashPanel) {
		for _, p := range ps {
			where := fmt.Sprintf("panel %d %q", p.ID, p.Title)
			if p.ID == 0 || ids[p.ID] {
				t.Errorf("%s: id missing or repeated", where)
			}
			ids[p.ID] = true
			if g := p.GridPos; g == nil || g.W <= 0 || g.H <= 0 || g.X < 0 || g.X+g.W > 24 {
				t.Errorf("%s: gridPos %+v outside the 24-column grid", where, g)
			}
			walk(p.Panels)
			if p.Type == "row" {
				continue
			}
			checkDS(where, p.Datasource, true)
			if len(p.Targets) == 0 {
				t.Errorf("%s: no queries", where)
			}
			refs := map[string]bool{}
			for _, tg := range p.Targets {
				if tg.RefID == "" || refs[tg.RefID] {
					t.Errorf("%s: refId %q missing or repeated", where, tg.RefID)
				}
				refs[tg.RefID] = true
				checkDS(where, tg.Datasource, false)
				names, errs := exprMetrics(tg.Expr)
				for _, err := range errs {
					t.Errorf("%s: %v", where, err)
				}
				if len(names) == 0 {
					t.Errorf("%s: expression %q uses no gcsm metric", where, tg.Expr)
				}
				for _, n := range names {
					used[n] = true
				}
				for _, v := range regexp.MustCompile(`\$\{?(\w+)`).FindAllStringSubmatch(tg.Expr, -1) {
					if !strings.HasPrefix(v[1], "__") && !vars[v[1]] {
						t.Errorf("%s: %q uses $%s, which is not a dashboard variable", where, tg.Expr, v[1])
					}
				}
			}
		}
	}
	walk(d.Panels)

	for _, m := range slices.Concat(counters, histograms, gauges) {
		if !used[m] {
			t.Errorf("%s: no panel shows %s%s", dashboardFile, metricPrefix, m)
		}
	}
}

var (
	promString   = regexp.MustCompile("\"(?:[^\"\\\\]|\\\\.)*\"|'(?:[^'\\\\]|\\\\.)*'|`[^`]*`")
	promMatchers = regexp.MustCompile(`\{[^{}]*\}`)
	promRange    = regexp.MustCompile(`\[[^\[\]]*\]`)
	promGrouping = regexp.MustCompile(`\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^()]*\)`)
	promVariable = regexp.MustCompile(`\$\{?\w+\}?`)
	promIdent    = regexp.MustCompile(`[A-Za-z_:][A-Za-z0-9_:]*`)
	promKeywords = []string{
		"by", "without", "on", "ignoring", "group_left", "group_right", "and", "or", "unless", "bool",
		"offset", "inf", "nan", "atan2",
	}
	promRate     = regexp.MustCompile(`\b(?:rate|irate|increase)\(\s*$`)
	promQuantile = regexp.MustCompile(`histogram_quantile\(\s*[0-9.]+\s*,.*\bby\s*\(\s*(?:[\w\s]*,\s*)?le\b`)
)

// seriesMetric maps a series name to its metric in DESIGN.md §9 (without
// the prefix): a counter or gauge is itself, a histogram is read through its
// _bucket, _sum and _count series.
func seriesMetric(series string) (string, bool) {
	name, ok := strings.CutPrefix(series, metricPrefix)
	if !ok {
		return "", false
	}
	if slices.Contains(counters, name) || slices.Contains(gauges, name) {
		return name, true
	}
	for _, sfx := range []string{"_bucket", "_sum", "_count"} {
		if stem, ok := strings.CutSuffix(name, sfx); ok && slices.Contains(histograms, stem) {
			return stem, true
		}
	}
	return "", false
}

// exprMetrics returns the DESIGN metric names (without prefix and histogram
// suffix) that a PromQL expression selects, and an error for each selected
// series that is not one of them or is used the wrong way: a counter outside
// rate() or increase(), a gauge inside one, or histogram buckets outside
// histogram_quantile(..., sum by (le, ...) (...)).
func exprMetrics(expr string) (names []string, errs []error) {
	s := promString.ReplaceAllString(expr, `""`)
	s = promMatchers.ReplaceAllString(s, "")
	s = promRange.ReplaceAllString(s, "")
	s = promGrouping.ReplaceAllString(s, "")
	s = promVariable.ReplaceAllString(s, "")
	for _, loc := range promIdent.FindAllStringIndex(s, -1) {
		id := s[loc[0]:loc[1]]
		if loc[0] > 0 && strings.ContainsRune("0123456789.", rune(s[loc[0]-1])) {
			continue // a number's exponent or a duration's unit
		}
		if strings.HasPrefix(strings.TrimLeft(s[loc[1]:], " \t\n"), "(") || slices.Contains(promKeywords, strings.ToLower(id)) {
			continue // a function or an aggregation, or a keyword
		}
		name, ok := seriesMetric(id)
		if !ok {
			errs = append(errs, fmt.Errorf("%q selects %s, which is not in DESIGN.md §9's metric list", expr, id))
			continue
		}
		inRate := promRate.MatchString(s[:loc[0]])
		switch {
		case slices.Contains(counters, name):
			if !inRate {
				errs = append(errs, fmt.Errorf("%q: counter %s outside rate() or increase()", expr, id))
			}
		case slices.Contains(gauges, name):
			if inRate {
				errs = append(errs, fmt.Errorf("%q: gauge %s inside rate() or increase()", expr, id))
			}
		default: // a histogram's _bucket, _sum or _count
			if !inRate {
				errs = append(errs, fmt.Errorf("%q: histogram series %s outside rate() or increase()", expr, id))
			}
			if strings.HasSuffix(id, "_bucket") && !promQuantile.MatchString(expr) {
				errs = append(errs, fmt.Errorf("%q: %s outside histogram_quantile(q, sum by (le, ...) (...))", expr, id))
			}
		}
		if !slices.Contains(names, name) {
			names = append(names, name)
		}
	}
	return names, errs
}

// TestExprMetrics checks the checker on expressions it must refuse.
func TestExprMetrics(t *testing.T) {
	for _, tc := range []struct {
		expr  string
		names []string
		bad   bool
	}{
		{expr: `sum by (op, result) (rate(gcsm_updates_total{op="+"}[1m]))`, names: []string{"updates_total"}},
		{expr: `histogram_quantile(0.99, sum by (le, stage) (rate(gcsm_batch_seconds_bucket[$__rate_interval])))`, names: []string{"batch_seconds"}},
		{expr: `sum(rate(gcsm_checkpoint_seconds_sum[5m])) / sum(rate(gcsm_checkpoint_seconds_count[5m]))`, names: []string{"checkpoint_seconds"}},
		{expr: `max(gcsm_graph_edges) * 1e3`, names: []string{"graph_edges"}},
		{expr: `sum(gcsm_consumer_lag) offset 5m`, names: []string{"consumer_lag"}},
		{expr: `rate(gcsm_update_total[1m])`, bad: true},         // misspelt
		{expr: `gcsm_updates_total`, bad: true},                  // counter without rate
		{expr: `rate(gcsm_graph_edges[1m])`, bad: true},          // gauge in rate
		{expr: `up{job="gcsm"}`, bad: true},                      // not ours
		{expr: `rate(gcsm_batch_seconds_bucket[1m])`, bad: true}, // buckets without a quantile
		{expr: `histogram_quantile(0.5, sum by (stage) (rate(gcsm_batch_seconds_bucket[1m])))`, bad: true},
		{expr: `gcsm_batch_seconds`, bad: true},
	} {
		names, errs := exprMetrics(tc.expr)
		if tc.bad != (len(errs) > 0) {
			t.Errorf("exprMetrics(%q): errors %v, want bad=%v", tc.expr, errs, tc.bad)
		}
		if !tc.bad && !slices.Equal(names, tc.names) {
			t.Errorf("exprMetrics(%q) = %v, want %v", tc.expr, names, tc.names)
		}
	}
}

// --- deploy/gcsm.yaml ---

// configKeys is the schema of the gcsm configuration file: the keys of each
// section ("" is the top level). Every key must be present in the deployed
// file, and no other.
var configKeys = map[string][]string{
	"":       {"brokers", "input", "output", "batch", "graph", "window", "state", "http", "engine", "log", "queries"},
	"input":  {"topic", "group", "format", "max_message_bytes"},
	"output": {"topic", "dead_letter_topic"},
	"batch":  {"size", "linger"},
	"graph":  {"directed", "default_edge_label", "default_vertex_label"},
	"window": {"size", "lateness"},
	"state":  {"dir", "checkpoint_every", "keep"},
	"http":   {"listen", "token"},
	"engine": {"device", "workers", "semantics"},
	"log":    {"level", "format"},
}

var queryKeys = []string{"name", "pattern", "initial", "max_matches_per_batch", "max_time"}

type gcsmConfig struct {
	Brokers []string `yaml:"brokers"`
	Input   struct {
		Topic, Group, Format string
		MaxMessageBytes      int `yaml:"max_message_bytes"`
	} `yaml:"input"`
	Output struct {
		Topic           string
		DeadLetterTopic string `yaml:"dead_letter_topic"`
	} `yaml:"output"`
	Batch struct {
		Size   int
		Linger string
	} `yaml:"batch"`
	Graph struct {
		Directed           bool
		DefaultEdgeLabel   string `yaml:"default_edge_label"`
		DefaultVertexLabel string `yaml:"default_vertex_label"`
	} `yaml:"graph"`
	Window struct{ Size, Lateness string } `yaml:"window"`
	State  struct {
		Dir             string
		CheckpointEvery string `yaml:"checkpoint_every"`
		Keep            int
	} `yaml:"state"`
	HTTP   struct{ Listen, Token string } `yaml:"http"`
	Engine struct {
		Device    string
		Workers   int
		Semantics string
	} `yaml:"engine"`
	Log     struct{ Level, Format string } `yaml:"log"`
	Queries []struct {
		Name               string
		Pattern            string
		Initial            bool
		MaxMatchesPerBatch int    `yaml:"max_matches_per_batch"`
		MaxTime            string `yaml:"max_time"`
	} `yaml:"queries"`
}

func loadGcsmConfig(t *testing.T) gcsmConfig {
	t.Helper()
	var cfg gcsmConfig
	dec := yaml.NewDecoder(bytes.NewReader(readFile(t, gcsmConfigSource)))
	dec.KnownFields(true)
	if err := dec.Decode(&cfg); err != nil {
		t.Fatalf("%s: %v", gcsmConfigSource, err)
	}
	return cfg
}

func TestGcsmConfigKeys(t *testing.T) {
	var doc map[string]any
	if err := yaml.Unmarshal(readFile(t, gcsmConfigSource), &doc); err != nil {
		t.Fatalf("%s: %v", gcsmConfigSource, err)
	}
	sameKeys := func(where string, m map[string]any, want []string, required []string) {
		for _, k := range required {
			if _, ok := m[k]; !ok {
				t.Errorf("%s: %s: missing key %q", gcsmConfigSource, where, k)
			}
		}
		for k := range m {
			if !slices.Contains(want, k) {
				t.Errorf("%s: %s: unknown key %q (known: %v)", gcsmConfigSource, where, k, want)
			}
		}
	}
	sameKeys("top level", doc, configKeys[""], configKeys[""])
	for section, keys := range configKeys {
		if section == "" {
			continue
		}
		m, ok := doc[section].(map[string]any)
		if !ok {
			t.Errorf("%s: %s is not a mapping", gcsmConfigSource, section)
			continue
		}
		sameKeys(section, m, keys, keys)
	}
	qs, ok := doc["queries"].([]any)
	if !ok || len(qs) == 0 {
		t.Fatalf("%s: queries is not a non-empty list", gcsmConfigSource)
	}
	for i, q := range qs {
		m, ok := q.(map[string]any)
		if !ok {
			t.Errorf("%s: queries[%d] is not a mapping", gcsmConfigSource, i)
			continue
		}
		sameKeys(fmt.Sprintf("queries[%d]", i), m, queryKeys, []string{"name", "pattern"})
	}
}

func TestGcsmConfigValues(t *testing.T) {
	cfg := loadGcsmConfig(t)
	p := loadProject(t)
	k := service(t, p, "kafka")
	g := service(t, p, "gcsm")

	// The brokers are the broker's advertised listeners.
	if len(cfg.Brokers) == 0 {
		t.Errorf("brokers is empty: gcsm would run its embedded broker, not the compose kafka")
	}
	advertised := map[string]bool{}
	for _, l := range strings.Split(env(k, "KAFKA_ADVERTISED_LISTENERS"), ",") {
		if _, hostport, ok := strings.Cut(l, "://"); ok {
			advertised[hostport] = true
		}
	}
	for _, b := range cfg.Brokers {
		if !advertised[b] {
			t.Errorf("broker %q is not an advertised listener of the kafka service", b)
		}
	}

	topics := map[string]string{
		"input.topic":              cfg.Input.Topic,
		"output.topic":             cfg.Output.Topic,
		"output.dead_letter_topic": cfg.Output.DeadLetterTopic,
	}
	seen := map[string]string{}
	for key, topic := range topics {
		if topic == "" {
			t.Errorf("%s is not set", key)
			continue
		}
		if other, dup := seen[topic]; dup {
			t.Errorf("%s and %s are both %q", key, other, topic)
		}
		seen[topic] = key
	}
	if cfg.Input.Group == "" || cfg.Input.Format == "" {
		t.Errorf("input.group and input.format must be set")
	}
	if cfg.Input.MaxMessageBytes <= 0 {
		t.Errorf("input.max_message_bytes = %d", cfg.Input.MaxMessageBytes)
	}
	// A dead letter carries the original message, base64 when it is not
	// UTF-8; the broker must accept it.
	if mb, err := strconv.Atoi(env(k, "KAFKA_MESSAGE_MAX_BYTES")); err == nil && mb < cfg.Input.MaxMessageBytes*4/3+4096 {
		t.Errorf("KAFKA_MESSAGE_MAX_BYTES %d is too small for a dead letter of a %d-byte message", mb, cfg.Input.MaxMessageBytes)
	}

	for key, d := range map[string]string{
		"batch.linger": cfg.Batch.Linger, "window.size": cfg.Window.Size, "window.lateness": cfg.Window.Lateness,
		"state.checkpoint_every": cfg.State.CheckpointEvery,
	} {
		if v, err := time.ParseDuration(d); err != nil || v <= 0 {
			t.Errorf("%s = %q: want a positive duration", key, d)
		}
	}
	if cfg.Batch.Size <= 0 || cfg.State.Keep <= 0 || cfg.Engine.Workers < 0 {
		t.Errorf("batch.size %d and state.keep %d must be positive, engine.workers %d not negative", cfg.Batch.Size, cfg.State.Keep, cfg.Engine.Workers)
	}
	if cfg.Graph.DefaultEdgeLabel == "" || cfg.Graph.DefaultVertexLabel == "" {
		t.Errorf("graph default labels must be set")
	}
	if !cfg.Graph.Directed {
		t.Errorf("graph.directed is false, but the queries are directed transfer patterns")
	}
	if cfg.Engine.Device == "" || cfg.Log.Level == "" || cfg.Log.Format == "" {
		t.Errorf("engine.device, log.level and log.format must be set")
	}
	if s := cfg.Engine.Semantics; s != "instances" && s != "embeddings" {
		t.Errorf("engine.semantics %q: want instances or embeddings (DESIGN.md §1)", s)
	}

	// The state directory is the named volume.
	state := false
	for _, v := range g.Volumes {
		if v.Type == types.VolumeTypeVolume && v.Target == cfg.State.Dir {
			state = true
		}
	}
	if !state {
		t.Errorf("state.dir %q is not a named volume of the gcsm service", cfg.State.Dir)
	}

	// Inside the container gcsm must listen on all interfaces for the
	// published port and Prometheus to reach it.
	host, port, err := net.SplitHostPort(cfg.HTTP.Listen)
	if err != nil {
		t.Errorf("http.listen %q: %v", cfg.HTTP.Listen, err)
	} else if host != "" && host != "0.0.0.0" && host != "::" {
		t.Errorf("http.listen %q: only reachable inside the container; listen on 0.0.0.0", cfg.HTTP.Listen)
	} else if n, _ := strconv.Atoi(port); !publishes(g, uint32(n), "8080") {
		t.Errorf("http.listen port %s is not the gcsm service's published port", port)
	}

	names := map[string]bool{}
	for i, q := range cfg.Queries {
		if !regexp.MustCompile(`^[A-Za-z0-9_.-]+$`).MatchString(q.Name) || names[q.Name] {
			t.Errorf("queries[%d]: name %q empty, repeated, or not [A-Za-z0-9_.-] (it starts the output key)", i, q.Name)
		}
		names[q.Name] = true
		if strings.TrimSpace(q.Pattern) == "" {
			t.Errorf("query %s: empty pattern", q.Name)
		}
		if q.MaxTime != "" {
			if v, err := time.ParseDuration(q.MaxTime); err != nil || v <= 0 {
				t.Errorf("query %s: max_time %q", q.Name, q.MaxTime)
			}
		}
		if q.MaxMatchesPerBatch < 0 {
			t.Errorf("query %s: max_matches_per_batch %d", q.Name, q.MaxMatchesPerBatch)
		}
	}
}

// --- Dockerfile and .dockerignore ---

type instruction struct {
	cmd, args string
	line      int
}

type stage struct {
	image, name string
	ins         []instruction
}

// parseDockerfile splits a Dockerfile into stages of instructions, joining
// continued lines and dropping comments.
func parseDockerfile(t *testing.T, text string) []stage {
	t.Helper()
	var stages []stage
	sc := bufio.NewScanner(strings.NewReader(text))
	n, start := 0, 0
	var cur strings.Builder
	flush := func() {
		l := strings.TrimSpace(cur.String())
		cur.Reset()
		if l == "" {
			return
		}
		cmd, args, _ := strings.Cut(l, " ")
		in := instruction{strings.ToUpper(cmd), strings.TrimSpace(args), start}
		if in.cmd == "FROM" {
			f := strings.Fields(in.args)
			f = slices.DeleteFunc(f, func(s string) bool { return strings.HasPrefix(s, "--") })
			st := stage{image: f[0]}
			if len(f) == 3 && strings.EqualFold(f[1], "AS") {
				st.name = f[2]
			}
			stages = append(stages, st)
			return
		}
		if len(stages) == 0 {
			if in.cmd != "ARG" {
				t.Errorf("Dockerfile:%d: %s before FROM", in.line, in.cmd)
			}
			return
		}
		stages[len(stages)-1].ins = append(stages[len(stages)-1].ins, in)
	}
	for sc.Scan() {
		n++
		l := sc.Text()
		if strings.HasPrefix(strings.TrimSpace(l), "#") {
			continue
		}
		if cur.Len() == 0 {
			start = n
		}
		if s, ok := strings.CutSuffix(strings.TrimRight(l, " \t"), `\`); ok {
			cur.WriteString(s + " ")
			continue
		}
		cur.WriteString(l)
		flush()
	}
	flush()
	return stages
}

func execForm(t *testing.T, in instruction) []string {
	t.Helper()
	var v []string
	if err := json.Unmarshal([]byte(in.args), &v); err != nil {
		t.Errorf("Dockerfile:%d: %s %s is not in exec (JSON) form", in.line, in.cmd, in.args)
	}
	return v
}

func TestDockerfile(t *testing.T) {
	text := string(readFile(t, "Dockerfile"))
	stages := parseDockerfile(t, text)
	if len(stages) < 2 {
		t.Fatalf("Dockerfile: %d stages, want a build stage and a final one", len(stages))
	}

	// The build stage: the Go of go.mod, a static binary of ./cmd/gcsm.
	build := stages[0]
	gomod := string(readFile(t, "go.mod"))
	m := regexp.MustCompile(`(?m)^go (\d+\.\d+)`).FindStringSubmatch(gomod)
	if m == nil {
		t.Fatal("go.mod has no go directive")
	}
	if want := "golang:" + m[1]; build.image != want && !strings.HasPrefix(build.image, want+"-") && !strings.HasPrefix(build.image, want+".") {
		t.Errorf("build stage FROM %s, want %s (go.mod says go %s)", build.image, want, m[1])
	}
	cgoEnv := false
	built := false
	for _, in := range build.ins {
		if in.cmd == "ENV" && regexp.MustCompile(`\bCGO_ENABLED=0\b`).MatchString(in.args) {
			cgoEnv = true
		}
		if in.cmd != "RUN" || !strings.Contains(in.args, "go build") {
			continue
		}
		built = true
		if !cgoEnv && !strings.Contains(in.args, "CGO_ENABLED=0") {
			t.Errorf("Dockerfile:%d: go build without CGO_ENABLED=0", in.line)
		}
		_, goBuild, _ := strings.Cut(in.args, "go build")
		args := strings.Fields(goBuild)
		if !slices.Contains(args, "-trimpath") {
			t.Errorf("Dockerfile:%d: go build without -trimpath", in.line)
		}
		if i := slices.Index(args, "-o"); i < 0 || i+1 >= len(args) || args[i+1] != "/gcsm" {
			t.Errorf("Dockerfile:%d: go build does not write -o /gcsm", in.line)
		}
		if pkgs := slices.DeleteFunc(slices.Clone(args), func(a string) bool { return !strings.HasPrefix(a, "./") }); !slices.Equal(pkgs, []string{"./cmd/gcsm"}) {
			t.Errorf("Dockerfile:%d: go build of %q, want ./cmd/gcsm", in.line, pkgs)
		}
	}
	if !built {
		t.Errorf("the build stage does not run go build")
	}

	// The final stage: minimal, not root, the binary as the entry point.
	final := stages[len(stages)-1]
	if final.image != "scratch" && !strings.HasPrefix(final.image, "gcr.io/distroless/static") {
		t.Errorf("final stage FROM %s, want scratch or gcr.io/distroless/static", final.image)
	}
	user := ""
	if strings.HasSuffix(final.image, ":nonroot") {
		user = "nonroot"
	}
	var entry, cmd []string
	var volumes, exposed []string
	copied := false
	for _, in := range final.ins {
		switch in.cmd {
		case "USER":
			user = in.args
		case "ENTRYPOINT":
			entry = execForm(t, in)
		case "CMD":
			cmd = execForm(t, in)
		case "VOLUME":
			var v []string
			if json.Unmarshal([]byte(in.args), &v) != nil {
				v = strings.Fields(in.args)
			}
			volumes = append(volumes, v...)
		case "EXPOSE":
			for _, p := range strings.Fields(in.args) {
				exposed = append(exposed, strings.TrimSuffix(p, "/tcp"))
			}
		case "COPY":
			if strings.Contains(in.args, "--from="+build.name) && strings.HasSuffix(in.args, "/gcsm /gcsm") {
				copied = true
			}
		}
	}
	if u, _, _ := strings.Cut(user, ":"); u == "" || u == "root" || u == "0" {
		t.Errorf("the final stage runs as root (USER %q)", user)
	}
	if !copied {
		t.Errorf("the final stage does not COPY --from=%s /gcsm /gcsm", build.name)
	}
	if !slices.Equal(entry, []string{"/gcsm"}) {
		t.Errorf("ENTRYPOINT %q, want [\"/gcsm\"]", entry)
	}
	if !slices.Equal(cmd, []string{"run", "--config", gcsmConfigTarget}) {
		t.Errorf("CMD %q, want [\"run\", \"--config\", %q]", cmd, gcsmConfigTarget)
	}
	if !slices.Contains(volumes, gcsmStateDir) {
		t.Errorf("no VOLUME %s (volumes %q)", gcsmStateDir, volumes)
	}
	if !slices.Contains(exposed, "8080") {
		t.Errorf("port 8080 is not EXPOSEd (%q)", exposed)
	}
	if !strings.Contains(text, "libcuda.so.1") {
		t.Errorf("Dockerfile does not say that gcsm loads libcuda.so.1 at run time")
	}
}

// dockerignore holds the patterns of a .dockerignore file, with Docker's
// semantics: the last matching pattern wins, ! re-includes, a pattern that
// matches a directory matches everything under it, and ** matches any
// number of directories.
type dockerignore []struct {
	re     *regexp.Regexp
	negate bool
}

func parseDockerignore(text string) dockerignore {
	var d dockerignore
	for _, l := range strings.Split(text, "\n") {
		l = strings.TrimSpace(l)
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		neg := false
		if rest, ok := strings.CutPrefix(l, "!"); ok {
			neg, l = true, strings.TrimSpace(rest)
		}
		l = strings.TrimPrefix(filepath.ToSlash(filepath.Clean(l)), "/")
		var re strings.Builder
		re.WriteString("^")
		for i := 0; i < len(l); i++ {
			switch c := l[i]; c {
			case '*':
				if i+1 < len(l) && l[i+1] == '*' {
					i++
					if i+1 < len(l) && l[i+1] == '/' {
						i++
						re.WriteString("(?:.*/)?")
					} else {
						re.WriteString(".*")
					}
				} else {
					re.WriteString("[^/]*")
				}
			case '?':
				re.WriteString("[^/]")
			case '\\':
				if i+1 < len(l) {
					i++
					re.WriteString(regexp.QuoteMeta(l[i : i+1]))
				}
			case '[', ']':
				re.WriteByte(c)
			default:
				re.WriteString(regexp.QuoteMeta(string(c)))
			}
		}
		re.WriteString("$")
		d = append(d, struct {
			re     *regexp.Regexp
			negate bool
		}{regexp.MustCompile(re.String()), neg})
	}
	return d
}

// excludes reports whether path (slash-separated, relative to the context)
// is left out of the build context.
func (d dockerignore) excludes(path string) bool {
	var prefixes []string
	for p := path; p != "." && p != "/" && p != ""; p = filepath.ToSlash(filepath.Dir(p)) {
		prefixes = append(prefixes, p)
	}
	excluded := false
	for _, pat := range d {
		for _, p := range prefixes {
			if pat.re.MatchString(p) {
				excluded = !pat.negate
				break
			}
		}
	}
	return excluded
}

func TestDockerignore(t *testing.T) {
	d := parseDockerignore(string(readFile(t, ".dockerignore")))
	for _, p := range []string{".git", ".git/config", ".git/objects/ab/cdef"} {
		if !d.excludes(p) {
			t.Errorf(".dockerignore does not exclude %s", p)
		}
	}

	// Everything go build ./cmd/gcsm reads must stay in the context: go.mod,
	// go.sum, the non-test Go files, and the files they embed.
	r := root(t)
	need := []string{"go.mod", "go.sum"}
	embed := regexp.MustCompile(`(?m)^//go:embed\s+(.+)$`)
	err := filepath.WalkDir(r, func(path string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := e.Name()
		if e.IsDir() {
			if path != r && (strings.HasPrefix(name, ".") || name == "testdata" || name == "bin") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			return nil
		}
		rel, _ := filepath.Rel(r, path)
		need = append(need, filepath.ToSlash(rel))
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range embed.FindAllStringSubmatch(string(src), -1) {
			for _, pat := range strings.Fields(m[1]) {
				files, _ := filepath.Glob(filepath.Join(filepath.Dir(path), pat))
				for _, f := range files {
					rel, _ := filepath.Rel(r, f)
					need = append(need, filepath.ToSlash(rel))
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range need {
		if d.excludes(p) {
			t.Errorf(".dockerignore excludes %s, which the build needs", p)
		}
	}
	if !slices.Contains(need, "cmd/gcsm/main.go") {
		t.Errorf("the walk found no cmd/gcsm/main.go; is the repository layout as this test expects?")
	}
}

func TestDockerignoreMatcher(t *testing.T) {
	d := parseDockerignore("# c\n.git\n**/*.test\nbin\ndeploy/*.yml\n!deploy/keep.yml\n/abs\n")
	for p, want := range map[string]bool{
		".git":               true,
		".git/HEAD":          true,
		".gitignore":         false,
		"a/b/c.test":         true,
		"x.test":             true,
		"bin/gcsm":           true,
		"cmd/gcsm/bin.go":    false,
		"deploy/a.yml":       true,
		"deploy/keep.yml":    false,
		"deploy/grafana/a.y": false,
		"abs/x":              true,
	} {
		if got := d.excludes(p); got != want {
			t.Errorf("excludes(%q) = %v, want %v", p, got, want)
		}
	}
}
