//go:build tools

// Package tools pins the Jaeger command the e2e runs.
package tools

import _ "github.com/jaegertracing/jaeger/cmd/jaeger"
