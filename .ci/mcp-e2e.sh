#!/usr/bin/env bash
# The MCP server end to end, as agents use it: internal/mcp/e2e/agents.mjs drives a
# freshly built `tether serve` on a free loopback port through /mcp
# (streamable HTTP) with the official TypeScript MCP SDK client, pinned in
# internal/mcp/e2e/package-lock.json: a planner agent and two worker agents, one of
# which dies mid-task. It prints the transcript of tool calls and answers.
# Needs only Go, git and node/npm. Takes well under a minute after npm ci.
set -euo pipefail
cd "$(dirname "$0")/.."
. .ci/lib/serve.sh
e2e_begin mcp-e2e
build_server
start_server TETHER_MCP_SESSION_IDLE_MS=5000

echo "== mcp e2e: npm ci (the TypeScript MCP SDK, pinned)"
cd "$root/internal/mcp/e2e"
npm ci --no-audit --no-fund

echo "== mcp e2e: a planner and two workers over /mcp (npm run e2e)"
TETHER_URL="$url" \
	PLANNER_TOKEN="$(mint "$secret" planner dispatcher)" \
	WORKER_A_TOKEN="$(mint "$secret" worker-a worker)" \
	WORKER_B_TOKEN="$(mint "$secret" worker-b worker)" \
	npm run --silent e2e
