#!/usr/bin/env bash
# openapi.yaml under the linters people run on specs: Redocly's recommended
# rules and Spectral's spectral:oas ruleset. Any error, warning or hint fails.
# Needs node/npm; installs the pinned linters from .ci/spec-lint's lockfile.
set -euo pipefail
cd "$(dirname "$0")/spec-lint"
npm ci --no-audit --no-fund --loglevel=error >/dev/null
spec=../../openapi.yaml
echo "== redocly lint (recommended)"
# Redocly exits 0 on warnings: its output decides.
out=$(NO_COLOR=1 npx --no-install redocly lint --config redocly.yaml --format stylish --max-problems 100 "$spec" 2>&1) || { echo "$out"; exit 1; }
echo "$out" | grep -v '[║╔╚]' | grep -v '^[[:space:]]*$'
if echo "$out" | grep -Eq '^ +[0-9]+:[0-9]+ +(error|warning)'; then
	echo "redocly lint found problems in openapi.yaml"
	exit 1
fi
echo "== spectral lint (spectral:oas)"
npx --no-install spectral lint --ruleset .spectral.yaml --fail-severity=hint "$spec"
