// Module monitoring tests ownergc's Prometheus alerts (config/prometheus)
// and Grafana dashboard (docs/grafana-dashboard.json) against the metrics
// docs/metrics.md documents, with Prometheus' own PromQL parser. It is a
// module of its own so that the ownergc module does not require
// Prometheus; `make test` runs it. It is never imported.
module github.com/ownergc/ownergc/hack/monitoring

go 1.26.0

require (
	github.com/prometheus/prometheus v0.315.1
	sigs.k8s.io/yaml v1.6.0
)

require (
	github.com/beorn7/perks v1.0.1 // indirect
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/dennwc/varint v1.0.0 // indirect
	github.com/grafana/regexp v0.0.0-20250905093917-f7b3be9d1853 // indirect
	github.com/munnerz/goautoneg v0.0.0-20191010083416-a7dc8b61c822 // indirect
	github.com/prometheus/client_golang v1.24.1 // indirect
	github.com/prometheus/client_model v0.6.3 // indirect
	github.com/prometheus/common v0.71.0 // indirect
	github.com/prometheus/procfs v0.21.1 // indirect
	go.uber.org/atomic v1.11.0 // indirect
	go.yaml.in/yaml/v2 v2.4.4 // indirect
	golang.org/x/sys v0.48.0 // indirect
	golang.org/x/text v0.42.0 // indirect
	google.golang.org/protobuf v1.36.12 // indirect
)
