package deploy

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/compose-spec/compose-go/v2/cli"
	"github.com/compose-spec/compose-go/v2/loader"
	"github.com/compose-spec/compose-go/v2/types"

	"github.com/gcsm/gcsm/service"
)

// The files and paths that tie the deployment together.
const (
	composeFile      = "docker-compose.yml"
	gcsmConfigSource = "deploy/gcsm.yaml"
	gcsmConfigTarget = "/etc/gcsm/gcsm.yaml"
	promConfigSource = "deploy/prometheus.yml"
	dashboardFile    = "deploy/grafana/dashboards/gcsm.json"
	datasourcesFile  = "deploy/grafana/provisioning/datasources/prometheus.yml"
	dashProviderFile = "deploy/grafana/provisioning/dashboards/gcsm.yml"
)

// The cluster profile's configuration: both replicas read it.
const (
	clusterConfigSource = "deploy/gcsm-cluster.yaml"
	clusterConfigTarget = "/etc/gcsm/gcsm-cluster.yaml"
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

// loadGcsmConfig reads deploy/gcsm.yaml as gcsm run does: over the defaults,
// unknown keys refused, validated.
func loadGcsmConfig(t *testing.T) service.Config {
	t.Helper()
	cfg, err := service.LoadConfig(repoPath(t, gcsmConfigSource))
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

func httpPort(t *testing.T, cfg service.Config) string {
	t.Helper()
	_, port, err := net.SplitHostPort(cfg.HTTP.Listen)
	if err != nil {
		t.Fatalf("%s: http.listen %q: %v", gcsmConfigSource, cfg.HTTP.Listen, err)
	}
	return port
}

// loadProject loads docker-compose.yml as docker compose would: schema
// validation, interpolation (with an empty environment, so defaults apply),
// normalization, consistency checks, and paths resolved against the
// repository root. None of it needs a Docker engine.
func loadProject(t *testing.T, more ...cli.ProjectOptionsFn) *types.Project {
	t.Helper()
	opts, err := cli.NewProjectOptions(
		[]string{repoPath(t, composeFile)},
		append([]cli.ProjectOptionsFn{
			cli.WithWorkingDirectory(root(t)),
			cli.WithInterpolation(true),
			cli.WithNormalization(true),
			cli.WithConsistency(true),
			cli.WithResolvedPaths(true),
		}, more...)...,
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

func composeService(t *testing.T, p *types.Project, name string) types.ServiceConfig {
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

// namedVolumeAt reports whether service s mounts a named volume at target.
func namedVolumeAt(s types.ServiceConfig, target string) bool {
	return slices.ContainsFunc(s.Volumes, func(v types.ServiceVolumeConfig) bool {
		return v.Type == types.VolumeTypeVolume && v.Target == target
	})
}

func publishes(s types.ServiceConfig, port string) bool {
	return slices.ContainsFunc(s.Ports, func(p types.ServicePortConfig) bool {
		return strconv.Itoa(int(p.Target)) == port && p.Published == port && p.HostIP == "127.0.0.1"
	})
}

func TestComposeServices(t *testing.T) {
	p := loadProject(t)
	for _, name := range []string{"kafka", "gcsm", "prometheus", "grafana"} {
		composeService(t, p, name)
	}
	for name, s := range p.Services {
		for _, port := range s.Ports {
			if port.Published != "" && port.HostIP != "127.0.0.1" {
				t.Errorf("service %s publishes %s:%s->%d on all interfaces; bind 127.0.0.1", name, port.HostIP, port.Published, port.Target)
			}
		}
		// A missing bind source is created by Docker as an empty directory,
		// and the service then reads a directory where it wanted a file.
		for _, v := range s.Volumes {
			if v.Type != types.VolumeTypeBind {
				continue
			}
			if _, err := os.Stat(v.Source); err != nil {
				t.Errorf("service %s bind-mounts %s: %v", name, v.Source, err)
			}
			if !v.ReadOnly {
				t.Errorf("service %s mounts %s read-write; configuration should be read_only", name, v.Source)
			}
		}
	}
	for name, port := range map[string]string{"prometheus": "9090", "grafana": "3000"} {
		if !publishes(composeService(t, p, name), port) {
			t.Errorf("%s does not publish 127.0.0.1:%s:%s", name, port, port)
		}
	}
}

// TestComposeGcsm checks the gcsm service against the Dockerfile it builds
// and the configuration it mounts.
func TestComposeGcsm(t *testing.T) {
	p := loadProject(t)
	g := composeService(t, p, "gcsm")
	k := composeService(t, p, "kafka")
	cfg := loadGcsmConfig(t)

	if g.Build == nil || g.Build.Context != root(t) || !slices.Contains([]string{"Dockerfile", repoPath(t, "Dockerfile")}, g.Build.Dockerfile) {
		t.Errorf("gcsm build %+v: want the repository root's Dockerfile", g.Build)
	}
	if g.Image != "" && g.PullPolicy != types.PullPolicyBuild {
		t.Errorf("gcsm names image %q with pull_policy %q: compose would look for it in a registry first; want pull_policy: build", g.Image, g.PullPolicy)
	}
	if dep := g.DependsOn["kafka"]; dep.Condition != types.ServiceConditionHealthy {
		t.Errorf("gcsm depends on kafka with condition %q, want %s", dep.Condition, types.ServiceConditionHealthy)
	}
	if hc := k.HealthCheck; hc == nil || hc.Disable || len(hc.Test) == 0 {
		t.Errorf("kafka has no healthcheck; gcsm waits for service_healthy")
	}
	if src, _ := hostPath(g, gcsmConfigTarget); src != repoPath(t, gcsmConfigSource) {
		t.Errorf("gcsm reads %s from %q, want %s", gcsmConfigTarget, src, gcsmConfigSource)
	}
	if len(g.Command) > 0 && !slices.Equal(g.Command, []string{"run", "--config", gcsmConfigTarget}) {
		t.Errorf("gcsm command %q, want run --config %s", g.Command, gcsmConfigTarget)
	}
	if !namedVolumeAt(g, cfg.State.Dir) {
		t.Errorf("state.dir %s is not on a named volume of the gcsm service (its checkpoints)", cfg.State.Dir)
	}
	if !publishes(g, httpPort(t, cfg)) {
		t.Errorf("gcsm does not publish 127.0.0.1:%s:%s, the port of http.listen", httpPort(t, cfg), httpPort(t, cfg))
	}
	// Inside the container gcsm must listen on all interfaces for the
	// published port and Prometheus to reach it.
	if host, _, _ := net.SplitHostPort(cfg.HTTP.Listen); host != "" && host != "0.0.0.0" && host != "::" {
		t.Errorf("http.listen %q is reachable only inside the container; listen on 0.0.0.0", cfg.HTTP.Listen)
	}

	// gcsm reaches the broker at an address the broker advertises.
	if len(cfg.Brokers) == 0 {
		t.Errorf("%s: brokers is empty: gcsm would run its embedded broker, not the compose kafka", gcsmConfigSource)
	}
	advertised := strings.Split(env(k, "KAFKA_ADVERTISED_LISTENERS"), ",")
	for _, b := range cfg.Brokers {
		if !slices.Contains(advertised, "PLAINTEXT://"+b) {
			t.Errorf("broker %q is not an advertised PLAINTEXT listener of the kafka service (%q)", b, advertised)
		}
	}
	// The topics must outlive the container, and the broker must accept a
	// dead letter: the original message, base64 when it is not UTF-8.
	if !namedVolumeAt(k, env(k, "KAFKA_LOG_DIRS")) {
		t.Errorf("KAFKA_LOG_DIRS %q is not a named volume's mount point", env(k, "KAFKA_LOG_DIRS"))
	}
	if mb, err := strconv.Atoi(env(k, "KAFKA_MESSAGE_MAX_BYTES")); err != nil || mb < cfg.Input.MaxMessageBytes*4/3+4096 {
		t.Errorf("KAFKA_MESSAGE_MAX_BYTES %q is too small for a dead letter of a %d-byte message", env(k, "KAFKA_MESSAGE_MAX_BYTES"), cfg.Input.MaxMessageBytes)
	}
}

// TestComposeGPUBlock uncomments the commented-out deploy block of the gcsm
// service and loads the result, so that the GPU instructions stay valid.
func TestComposeGPUBlock(t *testing.T) {
	text, ok := uncommentBlock(string(readFile(t, composeFile)), "deploy:")
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
	g := composeService(t, p, "gcsm")
	if g.Deploy == nil || g.Deploy.Resources.Reservations == nil || len(g.Deploy.Resources.Reservations.Devices) == 0 {
		t.Fatalf("the uncommented block does not reserve a device for gcsm")
	}
	if d := g.Deploy.Resources.Reservations.Devices[0]; d.Driver != "nvidia" || !slices.Contains(d.Capabilities, "gpu") {
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

// TestComposeCluster loads the cluster profile as its instructions run it
// (GCSM_CONFIG set, --profile cluster): two replicas of one image, each a
// member reading the cluster configuration, with a state volume and a
// port of its own; and that configuration is deploy/gcsm.yaml's but for
// the cluster section and the initial snapshots a member refuses.
func TestComposeCluster(t *testing.T) {
	p := loadProject(t, cli.WithProfiles([]string{"cluster"}), cli.WithEnv([]string{"GCSM_CONFIG=" + clusterConfigTarget}))
	cfg, err := service.LoadConfig(repoPath(t, clusterConfigSource))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Cluster.Shards < 2 {
		t.Fatalf("%s: cluster.shards %d: two members need shards to share", clusterConfigSource, cfg.Cluster.Shards)
	}
	var states []string
	var ports []string
	for _, name := range []string{"gcsm", "gcsm-2"} {
		s := composeService(t, p, name)
		if !slices.Equal(s.Command, []string{"run", "--config", clusterConfigTarget}) {
			t.Errorf("%s command %q, want run --config %s", name, s.Command, clusterConfigTarget)
		}
		if src, _ := hostPath(s, clusterConfigTarget); src != repoPath(t, clusterConfigSource) {
			t.Errorf("%s reads %s from %q, want %s", name, clusterConfigTarget, src, clusterConfigSource)
		}
		if s.Image != "gcsm:latest" || s.PullPolicy != types.PullPolicyBuild {
			t.Errorf("%s: image %q, pull_policy %q: want gcsm:latest built here", name, s.Image, s.PullPolicy)
		}
		for _, v := range s.Volumes {
			if v.Type == types.VolumeTypeVolume && v.Target == cfg.State.Dir {
				states = append(states, v.Source)
			}
		}
		for _, pt := range s.Ports {
			ports = append(ports, pt.Published)
		}
	}
	if len(states) != 2 || states[0] == states[1] {
		t.Errorf("the members' state volumes %q: want one of its own each at %s", states, cfg.State.Dir)
	}
	if len(ports) != 2 || ports[0] == ports[1] {
		t.Errorf("the members publish %q: want a port each", ports)
	}
	// Without the profile the second replica is not started.
	if _, err := loadProject(t).GetService("gcsm-2"); err == nil {
		t.Errorf("gcsm-2 runs without the cluster profile")
	}

	single := loadGcsmConfig(t)
	cluster := cfg
	cluster.Cluster = service.ClusterConfig{}
	for i := range single.Queries {
		single.Queries[i].Initial = false
	}
	if !reflect.DeepEqual(single, cluster) {
		t.Errorf("%s differs from %s beyond the cluster section and initial:\n%+v\n%+v", clusterConfigSource, gcsmConfigSource, cluster, single)
	}
}
