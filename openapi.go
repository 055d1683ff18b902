// Package tether holds Tether's contract, openapi.yaml, the one source of
// truth every generator, test and document names. The packages a Go program
// uses are below it: lease (open a store in-process and run leases), graph
// (the nodes and who carried what), tenant (policies and credentials),
// client (the HTTP client generated from this spec) and runner (a worker).
package tether

import _ "embed"

// OpenAPI is openapi.yaml, byte for byte.
//
//go:embed openapi.yaml
var OpenAPI []byte
