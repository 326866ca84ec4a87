# syntax=docker/dockerfile:1

# Build: a static binary (no cgo; the embedded SQLite driver is pure Go).
FROM --platform=$BUILDPLATFORM golang:1.26 AS build
WORKDIR /src

# Modules first, so this layer is reused until go.mod or go.sum change.
COPY go.mod go.sum ./
RUN go mod download && go mod verify

COPY . .
# VERSION, when given, replaces the version the binary reports (by default
# the newest release of CHANGELOG.md).
ARG VERSION=
ARG TARGETOS
ARG TARGETARCH
RUN --mount=type=cache,target=/root/.cache/go-build \
    CGO_ENABLED=0 GOOS=$TARGETOS GOARCH=$TARGETARCH \
    go build -trimpath \
      -ldflags "-s -w ${VERSION:+-X github.com/seckill/seckill/internal/buildinfo.Version=${VERSION}}" \
      -o /out/seckill ./cmd/seckill

# Run: distroless, no shell, non-root (uid 65532).
FROM gcr.io/distroless/static-debian12:nonroot
ARG VERSION=
LABEL org.opencontainers.image.title="seckill" \
      org.opencontainers.image.description="Flash-sale backend: never oversold, no accepted order lost" \
      org.opencontainers.image.version="${VERSION}"
COPY --from=build /out/seckill /seckill
USER nonroot:nonroot
EXPOSE 8080
ENTRYPOINT ["/seckill"]
CMD ["serve"]
