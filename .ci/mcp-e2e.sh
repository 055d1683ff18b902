#!/usr/bin/env bash
# The MCP server end to end, as agents use it: mcp/e2e/agents.mjs drives a
# freshly built `tether serve` on a free loopback port through /mcp
# (streamable HTTP) with the official TypeScript MCP SDK client, pinned in
# mcp/e2e/package-lock.json: a planner agent and two worker agents, one of
# which dies mid-task. It prints the transcript of tool calls and answers.
# Needs only Go, git and node/npm. Takes well under a minute after npm ci.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
start=$SECONDS

work=$(mktemp -d "${TMPDIR:-/tmp}/tether-mcp-e2e.XXXXXX")
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
	echo "== mcp-e2e: $((SECONDS - start)) s, exit $status"
	exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

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
		TETHER_MCP_SESSION_IDLE_MS=5000 \
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

echo "== mcp e2e: npm ci (the TypeScript MCP SDK, pinned)"
cd "$root/mcp/e2e"
npm ci --no-audit --no-fund

echo "== mcp e2e: a planner and two workers over /mcp (npm run e2e)"
TETHER_URL="$url" \
	PLANNER_TOKEN="$(mint "$secret" planner dispatcher)" \
	WORKER_A_TOKEN="$(mint "$secret" worker-a worker)" \
	WORKER_B_TOKEN="$(mint "$secret" worker-b worker)" \
	npm run --silent e2e
