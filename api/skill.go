package api

import _ "embed"

// Skill is api/skill.md, the guide an agent reads before its first call,
// served as /skill.md.
//
//go:embed skill.md
var Skill []byte
