// Package deploy holds the tests of the deployment files: the Dockerfile and
// .dockerignore at the repository root, docker-compose.yml, and the
// configuration files under deploy/ that it mounts (gcsm.yaml,
// prometheus.yml, and Grafana's provisioning and dashboard).
//
// The Go package exists only for its tests; nothing imports it. Each file is
// read by the parser its consumer uses (BuildKit's for the Dockerfile, moby's
// pattern matcher for .dockerignore, compose-go for the compose file, gcsm's
// own loader for gcsm.yaml), no Docker needed. The tests build the binary as
// the Dockerfile does and check its ELF loader and libraries against the
// final stage's base, and run gcsm with gcsm.yaml to check the dashboard
// against the metrics it really serves.
package deploy
