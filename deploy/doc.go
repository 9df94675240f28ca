// Package deploy holds the tests of the deployment files: the Dockerfile and
// .dockerignore at the repository root, docker-compose.yml, and the
// configuration files under deploy/ that it mounts (gcsm.yaml,
// prometheus.yml, and Grafana's provisioning and dashboard).
//
// The Go package exists only for its tests; nothing imports it. The tests
// load the compose file with the compose-spec loader (schema validation and
// consistency checks, no Docker needed) and cross-check the files against
// each other and against the metric names of DESIGN.md §9, so that a renamed
// metric, a moved mount or a mistyped key fails go test ./deploy/.
package deploy
