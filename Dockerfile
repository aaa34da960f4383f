# Build the manager binary.
FROM golang:1.26 AS builder
ARG TARGETOS
ARG TARGETARCH

WORKDIR /workspace
# Download the modules in a layer of their own, so that it is rebuilt only when
# go.mod or go.sum change.
COPY go.mod go.mod
COPY go.sum go.sum
RUN go mod download

# Copy the Go sources: every file of package main (main.go, logging.go, …, by a
# pattern, so that a new one is not forgotten), the packages it imports, and
# the kubectl plugin (not built into the image; dockerfile_test.go builds the
# manager and the plugin from exactly what is copied here).
COPY *.go ./
COPY api/ api/
COPY controllers/ controllers/
COPY internal/ internal/
COPY cmd/ cmd/

# BuildKit sets TARGETOS and TARGETARCH from --platform (by default the
# platform of the build host). GOARCH deliberately has no fallback: when it is
# empty, go builds for the architecture of the builder stage.
RUN CGO_ENABLED=0 GOOS=${TARGETOS:-linux} GOARCH=${TARGETARCH} go build -trimpath -ldflags=-s -o manager .

# A distroless base image: just the binary, CA certificates and a non-root
# user. See https://github.com/GoogleContainerTools/distroless.
FROM gcr.io/distroless/static:nonroot
WORKDIR /
COPY --from=builder /workspace/manager .
USER 65532:65532

ENTRYPOINT ["/manager"]
