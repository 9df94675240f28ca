# syntax=docker/dockerfile:1
#
# gcsm: continuous subgraph matching over a Kafka edge stream.
#
#   docker build -t gcsm .
#   docker run --rm -v gcsm-state:/var/lib/gcsm -v $PWD/deploy/gcsm.yaml:/etc/gcsm/gcsm.yaml:ro \
#     -p 127.0.0.1:8080:8080 gcsm
#
# The binary is pure Go (CGO_ENABLED=0) but not static: purego, through which
# gcsm loads libcuda.so.1 at run time, links it against the ELF loader
# (/lib64/ld-linux-x86-64.so.2), libc.so.6, libdl.so.2 and libpthread.so.0, so
# the final image needs glibc (deploy's test reads them from the built binary).
# GPU support needs nothing at build time: gcsm uses libcuda.so.1 when it is
# present, and falls back to the CPU engine when it is not. On a GPU host,
# mount the NVIDIA driver into the container with the NVIDIA Container Toolkit
# (docker run --gpus all, or the deploy.resources.reservations.devices block
# in docker-compose.yml); the toolkit injects libcuda.so.1 and the device
# nodes. The same image therefore runs on CPU and GPU hosts.

# Keep the Go version in step with the go directive of go.mod (deploy's test checks).
FROM golang:1.26 AS build
WORKDIR /src
ENV CGO_ENABLED=0 GOFLAGS=-buildvcs=false
# Dependencies first, so that a source change does not refetch modules.
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod go mod download
COPY . .
RUN --mount=type=cache,target=/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build \
    CGO_ENABLED=0 go build -trimpath -ldflags='-s -w' -o /gcsm ./cmd/gcsm
# The state directory, created here because the final image has no shell.
RUN mkdir -p /out/var/lib/gcsm /out/etc/gcsm

# distroless/base: glibc (Debian 12's libc6, with the loader), libssl, CA
# certificates, tzdata and /etc/passwd with the nonroot user (uid 65532); no
# shell. distroless/static has no loader, and the binary would not start.
FROM gcr.io/distroless/base-debian12:nonroot
COPY --from=build /gcsm /gcsm
COPY --from=build --chown=65532:65532 /out/var/lib/gcsm /var/lib/gcsm
COPY --from=build /out/etc/gcsm /etc/gcsm
USER 65532:65532
# Checkpoints and the write-ahead state; keep it on a volume so that a new
# container resumes from the last checkpoint instead of replaying the topic.
VOLUME ["/var/lib/gcsm"]
# HTTP: /metrics, /healthz, /readyz and the /queries API (http.listen in the config).
EXPOSE 8080
ENTRYPOINT ["/gcsm"]
CMD ["run", "--config", "/etc/gcsm/gcsm.yaml"]
