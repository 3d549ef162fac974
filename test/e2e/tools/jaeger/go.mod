// Wrapper module that builds Jaeger v2 (cmd/jaeger, all-in-one) for the e2e.
// go.sum is upstream's own (the module mirror's checksum database lacks some
// collector-contrib entries, so `go mod tidy` cannot write it); build with
// GOFLAGS=-mod=mod. Checksums are still verified.
module podchron.test/e2e/jaeger

go 1.24.6

require github.com/jaegertracing/jaeger v1.76.0

replace github.com/Shopify/sarama => github.com/Shopify/sarama v1.33.0
