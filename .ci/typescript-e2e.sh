#!/usr/bin/env bash
# The TypeScript client (clients/typescript): install it from the lockfile, check
# that its generated types match api/openapi.yaml, type-check it, then run its
# end-to-end script against a freshly built server on a free loopback port.
# Needs only Go, git and node/npm (no curl, no python). Takes well under 2 minutes.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
start=$SECONDS

work=$(mktemp -d "${TMPDIR:-/tmp}/tether-ts-e2e.XXXXXX")
pid=""
log=""
cleanup() {
	local status=$?
	if [[ -n $pid ]] && kill -0 "$pid" 2>/dev/null; then
		kill "$pid" 2>/dev/null || true
		for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
		kill -9 "$pid" 2>/dev/null || true
		wait "$pid" 2>/dev/null || true
	fi
	if [[ $status -ne 0 && -n $log && -s $log ]]; then
		echo "== server log (last 40 lines)"
		tail -n 40 "$log"
	fi
	rm -rf "$work"
	echo "== typescript-e2e: $((SECONDS - start)) s, exit $status"
	exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

schema=src/schema.ts

echo "== typescript client: npm ci"
cd "$root/clients/typescript"
npm ci --no-audit --no-fund

echo "== typescript client: generated types match api/openapi.yaml"
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

echo "== build the server"
cd "$root"
go build -o "$work/tether" ./cmd/tether

# node one-liners: a free port, a random secret, an HS256 JWT, a readiness probe.
free_port() {
	node -e 'const s=require("net").createServer();s.listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})'
}
mint() { # mint SECRET SUB ROLE
	node -e '
const c = require("crypto"); const [secret, sub, role] = process.argv.slice(1);
const b = (o) => Buffer.from(JSON.stringify(o)).toString("base64url");
const now = Math.floor(Date.now() / 1000);
const signed = b({ alg: "HS256", typ: "JWT" }) + "." + b({ sub, tid: "default", roles: [role], iat: now, exp: now + 3600 });
process.stdout.write(signed + "." + c.createHmac("sha256", secret).update(signed).digest("base64url"));
' "$@"
}
is_ready() {
	node -e 'fetch(process.argv[1], { signal: AbortSignal.timeout(2000) }).then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))' "$1/ready"
}

secret=$(node -e 'process.stdout.write(require("crypto").randomBytes(32).toString("hex"))')

echo "== start the server"
url=""
for attempt in 1 2 3 4 5; do
	port=$(free_port)
	log="$work/server-$attempt.log"
	# A clean environment: no stray TETHER_* or *_TOKEN settings of the caller leak in.
	env -i PATH="$PATH" HOME="${HOME:-$work}" \
		TETHER_ADDR="127.0.0.1:$port" \
		TETHER_DATA_DIR="$work/data-$attempt" \
		TETHER_JWT_SECRET="$secret" \
		"$work/tether" serve >"$log" 2>&1 &
	pid=$!
	deadline=$((SECONDS + 30))
	while kill -0 "$pid" 2>/dev/null && ! is_ready "http://127.0.0.1:$port"; do
		if ((SECONDS >= deadline)); then
			echo "the server on port $port was not ready within 30 s"
			exit 1
		fi
		sleep 0.2
	done
	if kill -0 "$pid" 2>/dev/null; then
		url="http://127.0.0.1:$port"
		break
	fi
	wait "$pid" || true
	pid=""
	echo "the server exited at start (attempt $attempt, port $port):"
	tail -n 5 "$log"
done
if [[ -z $url ]]; then
	echo "could not start the server"
	exit 1
fi
echo "server ready at $url (pid $pid) after $((SECONDS - start)) s"

echo "== typescript client: end-to-end (npm run e2e)"
cd "$root/clients/typescript"
TETHER_URL="$url" \
	TETHER_TOKEN="$(mint "$secret" head dispatcher)" \
	TETHER_TOKEN_2="$(mint "$secret" w2 worker)" \
	npm run --silent e2e
