# Helix container image: a static helix binary (CGO_ENABLED=0) on an empty base image,
# running as an unprivileged user. See docs/deployment.md.
#
#   docker build -t helix:dev --build-arg VERSION=dev .
#   docker run --rm -p 8080:8080 -p 3000:3000 -p 127.0.0.1:9999:9999 \
#     -e HELIX_MCP_API_KEY="$(openssl rand -hex 32)" helix:dev
#
# The default configuration is deploy/helix.yaml, copied to /etc/helix/helix.yaml;
# mount your own there (or anywhere, and pass `run /path/to/file.yaml`).
# deploy/deploy_test.go checks this file: GO_VERSION against go.mod, and it runs the
# `go build` line below and checks that the result is statically linked.

# GO_VERSION is the `go` line of go.mod.
ARG GO_VERSION=1.26.8

# The build stage runs on the builder's platform and cross-compiles for the target
# (docker buildx --platform linux/amd64,linux/arm64): a pure-Go build needs no emulation.
FROM --platform=$BUILDPLATFORM golang:${GO_VERSION} AS build
ARG TARGETOS
ARG TARGETARCH
ARG VERSION=dev
# TAGS leaves parts out of the binary (docs/building.md), for a smaller image:
#   docker build --build-arg TAGS=helix_nollm,helix_noredis,helix_noonnx,helix_nokafka .
ARG TAGS=
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 GOOS=${TARGETOS} GOARCH=${TARGETARCH} go build -trimpath -tags "${TAGS}" -ldflags "-s -w -X github.com/arvenza/helix/internal/cli.Version=${VERSION}" -o /out/helix ./cmd/helix
# What the empty final image needs besides the binary: CA certificates (https://
# endpoints, OAuth, model APIs), a passwd entry for the unprivileged user, the
# working directory (helix.data_dir defaults to .helix in it) and /tmp.
RUN mkdir -p /rootfs/etc/ssl/certs /rootfs/var/lib/helix /rootfs/tmp \
 && cp /etc/ssl/certs/ca-certificates.crt /rootfs/etc/ssl/certs/ \
 && echo 'helix:x:65532:65532:helix:/var/lib/helix:/sbin/nologin' > /rootfs/etc/passwd \
 && echo 'helix:x:65532:' > /rootfs/etc/group \
 && chmod 1777 /rootfs/tmp

FROM scratch
COPY --from=build /rootfs/etc/ /etc/
COPY --from=build --chown=65532:65532 /rootfs/var/lib/helix/ /var/lib/helix/
COPY --from=build --chown=65532:65532 /rootfs/tmp/ /tmp/
COPY --from=build /out/helix /usr/local/bin/helix
COPY deploy/helix.yaml /etc/helix/helix.yaml
USER 65532:65532
WORKDIR /var/lib/helix
# 8080: the http-server:// workflow of deploy/helix.yaml; 3000: Helix's default MCP
# server port; 9999: the management endpoints (/healthz, /readyz, /metrics, manifest).
EXPOSE 8080 3000 9999
ENTRYPOINT ["/usr/local/bin/helix"]
CMD ["run", "/etc/helix/helix.yaml"]
