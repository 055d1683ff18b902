// Package api is Tether's HTTP contract as files: the OpenAPI document every
// client is generated from and every response is tested against, and the
// built-in guide served as /skill.md. It holds no code but the embedding;
// the handlers that serve the contract are internal (internal/httpapi).
package api

import _ "embed"

// OpenAPI is api/openapi.yaml, byte for byte.
//
//go:embed openapi.yaml
var OpenAPI []byte

// Skill is api/skill.md, the guide an agent reads before its first call.
//
//go:embed skill.md
var Skill []byte
