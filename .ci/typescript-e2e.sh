#!/usr/bin/env bash
# The TypeScript client (clients/typescript): install it from the lockfile, check
# that its generated types match openapi.yaml, type-check it, then run its
# end-to-end script against a freshly built server on a free loopback port.
# Needs only Go, git and node/npm (no curl, no python). Takes well under 2 minutes.
set -euo pipefail
cd "$(dirname "$0")/.."
. .ci/lib/serve.sh
e2e_begin typescript-e2e

schema=src/schema.ts

echo "== typescript client: npm ci"
cd "$root/clients/typescript"
npm ci --no-audit --no-fund

echo "== typescript client: generated types match openapi.yaml"
if [[ ! -f $schema ]]; then
	echo "$schema is missing: run 'npm run generate' in clients/typescript and commit it"
	exit 1
fi
cp "$schema" "$work/schema.before"
npm run --silent generate
if ! cmp -s "$work/schema.before" "$schema" || ! git diff --exit-code --stat -- 'src/schema*'; then
	diff -u "$work/schema.before" "$schema" | head -n 60 || true
	echo "clients/typescript/$schema is stale: run 'npm run generate' in clients/typescript and commit it"
	exit 1
fi

echo "== typescript client: type check (tsc --noEmit)"
npm run --silent check

echo "== typescript client: npm pack ships the library only"
packed=$(npm pack --dry-run --json 2>/dev/null | node -e '
let s = ""; process.stdin.on("data", (d) => (s += d)).on("end", () => {
  for (const f of JSON.parse(s)[0].files) console.log(f.path);
});')
echo "$packed"
if echo "$packed" | grep -Ev '^(package\.json|README\.md|LICENSE|dist/(index|schema)\.(js|d\.ts))$'; then
	echo "npm pack would ship the files above, which are not the library"
	exit 1
fi
echo "$packed" | grep -qx 'dist/index.js' || { echo "npm pack would not ship dist/index.js"; exit 1; }

build_server
start_server

echo "== typescript client: end-to-end (npm run e2e)"
cd "$root/clients/typescript"
TETHER_URL="$url" \
	TETHER_TOKEN="$(mint "$secret" head dispatcher)" \
	TETHER_TOKEN_2="$(mint "$secret" w2 worker)" \
	npm run --silent e2e
