package deploy

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"go.yaml.in/yaml/v3"

	"github.com/gcsm/gcsm/service"
)

func TestPrometheusScrapesGcsm(t *testing.T) {
	type scrape struct {
		JobName        string `yaml:"job_name"`
		ScrapeInterval string `yaml:"scrape_interval"`
		ScrapeTimeout  string `yaml:"scrape_timeout"`
		MetricsPath    string `yaml:"metrics_path"`
		StaticConfigs  []struct {
			Targets []string `yaml:"targets"`
		} `yaml:"static_configs"`
	}
	var cfg struct {
		Global        scrape   `yaml:"global"`
		ScrapeConfigs []scrape `yaml:"scrape_configs"`
	}
	if err := yaml.Unmarshal(readFile(t, promConfigSource), &cfg); err != nil {
		t.Fatalf("%s: %v", promConfigSource, err)
	}
	// duration reads a Prometheus duration, or def when it is unset.
	duration := func(job, key, s string, def model.Duration) model.Duration {
		if s == "" {
			return def
		}
		d, err := model.ParseDuration(s)
		if err != nil {
			t.Errorf("%s: job %q: %s: %v", promConfigSource, job, key, err)
		}
		return d
	}
	// Prometheus's defaults: 1m and 10s.
	interval := duration("global", "scrape_interval", cfg.Global.ScrapeInterval, model.Duration(time.Minute))
	timeout := duration("global", "scrape_timeout", cfg.Global.ScrapeTimeout, model.Duration(10*time.Second))
	target := "gcsm:" + httpPort(t, loadGcsmConfig(t))
	found := false
	for _, sc := range cfg.ScrapeConfigs {
		i := duration(sc.JobName, "scrape_interval", sc.ScrapeInterval, interval)
		if to := duration(sc.JobName, "scrape_timeout", sc.ScrapeTimeout, min(timeout, i)); to > i {
			t.Errorf("%s: job %s: scrape_timeout %v exceeds scrape_interval %v (Prometheus refuses it)", promConfigSource, sc.JobName, to, i)
		}
		for _, st := range sc.StaticConfigs {
			if slices.Contains(st.Targets, target) {
				found = true
				if sc.MetricsPath != "" && sc.MetricsPath != "/metrics" {
					t.Errorf("%s: job %s scrapes %s at %q, want /metrics", promConfigSource, sc.JobName, target, sc.MetricsPath)
				}
			}
		}
	}
	if !found {
		t.Errorf("%s: no job scrapes %s (the compose service and http.listen's port)", promConfigSource, target)
	}
}

// TestGrafanaProvisioning follows Grafana's files from the compose mounts to
// the dashboard: the provider's path holds it, and every datasource it reads
// is the provisioned Prometheus, which is the compose service.
func TestGrafanaProvisioning(t *testing.T) {
	var ds struct {
		Datasources []struct{ UID, Type, URL string } `yaml:"datasources"`
	}
	if err := yaml.Unmarshal(readFile(t, datasourcesFile), &ds); err != nil {
		t.Fatalf("%s: %v", datasourcesFile, err)
	}
	if len(ds.Datasources) != 1 || ds.Datasources[0].Type != "prometheus" || ds.Datasources[0].URL != "http://prometheus:9090" {
		t.Fatalf("%s: %+v, want one prometheus datasource at http://prometheus:9090 (the compose service)", datasourcesFile, ds.Datasources)
	}
	want := map[string]any{"type": "prometheus", "uid": ds.Datasources[0].UID}

	var prov struct {
		Providers []struct {
			Options struct{ Path string } `yaml:"options"`
		} `yaml:"providers"`
	}
	if err := yaml.Unmarshal(readFile(t, dashProviderFile), &prov); err != nil {
		t.Fatalf("%s: %v", dashProviderFile, err)
	}
	gr := composeService(t, loadProject(t), "grafana")
	for _, pv := range prov.Providers {
		if dir, _ := hostPath(gr, pv.Options.Path); dir != filepath.Dir(repoPath(t, dashboardFile)) {
			t.Errorf("%s: provider path %s is %q on the host, want the directory of %s", dashProviderFile, pv.Options.Path, dir, dashboardFile)
		}
	}
	if home, _ := hostPath(gr, env(gr, "GF_DASHBOARDS_DEFAULT_HOME_DASHBOARD_PATH")); home != repoPath(t, dashboardFile) {
		t.Errorf("grafana's home dashboard is %q on the host, want %s", home, dashboardFile)
	}

	var d any
	if err := json.Unmarshal(readFile(t, dashboardFile), &d); err != nil {
		t.Fatalf("%s: %v", dashboardFile, err)
	}
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			// The annotations' built-in source aside.
			if ref, ok := v["datasource"].(map[string]any); ok && ref["type"] != "grafana" && !maps.Equal(ref, want) {
				t.Errorf("%s: %q reads datasource %v, want %v", dashboardFile, v["title"], ref, want)
			}
			for _, e := range v {
				walk(e)
			}
		case []any:
			for _, e := range v {
				walk(e)
			}
		}
	}
	walk(d)
}

// metricName finds the gcsm series that the dashboard's queries and
// variables name; the prefix keeps label values ("gcsm" alone), the
// datasource uid and PromQL functions out.
var metricName = regexp.MustCompile(`\bgcsm_[A-Za-z0-9_:]*`)

// TestDashboardMetrics runs gcsm with deploy/gcsm.yaml against an in-process
// Kafka cluster, sends it the example input of docker-compose.yml (a ring of
// transfers, which ring3 matches), scrapes its /metrics, and checks the
// dashboard against the series found there: every gcsm series the dashboard
// names exists, and every gcsm metric the service exposes is on the dashboard.
func TestDashboardMetrics(t *testing.T) {
	cfg := loadGcsmConfig(t)
	c, err := kfake.NewCluster(kfake.SeedTopics(1, cfg.Input.Topic, cfg.Output.Topic, cfg.Output.DeadLetterTopic))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	cfg.Brokers = c.ListenAddrs()
	cfg.State.Dir = t.TempDir()
	cfg.HTTP.Listen = "" // served below through Handler
	s, err := service.New(service.Options{Config: cfg, Log: zerolog.New(io.Discard)})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("Run: %v", err)
		}
	}()

	cl, err := kgo.NewClient(kgo.SeedBrokers(cfg.Brokers...), kgo.DefaultProduceTopic(cfg.Input.Topic))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	// The example input of docker-compose.yml's header, what a user types
	// into the console producer.
	var recs []*kgo.Record
	for _, l := range strings.Split(string(readFile(t, composeFile)), "\n") {
		if c, ok := strings.CutPrefix(l, "#"); ok && strings.HasPrefix(strings.TrimSpace(c), "{") {
			recs = append(recs, &kgo.Record{Value: []byte(strings.TrimSpace(c))})
		}
	}
	if len(recs) == 0 {
		t.Fatalf("%s: no example input in the header", composeFile)
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	consumed := func() (n int64) {
		for _, off := range s.Progress().Position {
			n += off
		}
		return n
	}
	for deadline := time.Now().Add(time.Minute); consumed() < int64(len(recs)); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("gcsm has not consumed the example input of %s a minute after it was sent (progress %+v)", composeFile, s.Progress())
		}
	}
	if p := s.Progress(); p.DeadLetters != 0 || p.Events == 0 {
		t.Errorf("the example input of %s gave %d dead letters and %d match events, want none and a ring3 match", composeFile, p.DeadLetters, p.Events)
	}

	srv := httptest.NewServer(s.Handler())
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("/metrics: %v", err)
	}
	// A histogram is read through its _bucket, _sum and _count series.
	series := map[string]string{}
	for name, f := range families {
		series[name] = name
		if f.GetType() == dto.MetricType_HISTOGRAM {
			for _, sfx := range []string{"_bucket", "_sum", "_count"} {
				series[name+sfx] = name
			}
		}
	}

	shown := map[string]bool{}
	for _, m := range metricName.FindAllString(string(readFile(t, dashboardFile)), -1) {
		f, ok := series[m]
		if !ok {
			t.Errorf("%s reads %s, which gcsm does not expose", dashboardFile, m)
		}
		shown[f] = true
	}
	for name := range families {
		if strings.HasPrefix(name, "gcsm_") && !shown[name] {
			t.Errorf("%s does not show %s", dashboardFile, name)
		}
	}
}
