# Sourced by the end-to-end scripts that drive a freshly built `tether serve`
# from node (typescript-e2e.sh, mcp-e2e.sh). Needs only Go and node.
#
#   e2e_begin NAME      a work dir ($work), and on exit: the server stopped,
#                       its log shown when the script failed, "== NAME: N s"
#   build_server        go build into $work/tether
#   start_server [VAR=value ...]
#                       serve on a free loopback port with a fresh HS256
#                       secret ($secret) in a clean environment, plus the
#                       given settings; sets $url once /ready answers
#   mint SECRET SUB ROLE an HS256 JWT of tenant default for SUB with ROLE

e2e_begin() {
	e2e_name=$1
	root=$(pwd)
	start=$SECONDS
	work=$(mktemp -d "${TMPDIR:-/tmp}/tether-$e2e_name.XXXXXX")
	pid=""
	log=""
	trap e2e_end EXIT
	trap 'exit 130' INT TERM
}

e2e_end() {
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
	echo "== $e2e_name: $((SECONDS - start)) s, exit $status"
	exit "$status"
}

build_server() {
	echo "== build the server"
	(cd "$root" && go build -o "$work/tether" ./cmd/tether)
}

# node one-liners: a free port, an HS256 JWT, a readiness probe.
free_port() {
	node -e 'const s=require("net").createServer();s.listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})'
}
mint() {
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

start_server() {
	secret=$(node -e 'process.stdout.write(require("crypto").randomBytes(32).toString("hex"))')
	echo "== start the server"
	url=""
	local attempt port deadline
	for attempt in 1 2 3 4 5; do
		port=$(free_port)
		log="$work/server-$attempt.log"
		# A clean environment: no stray TETHER_* or *_TOKEN settings of the caller leak in.
		env -i PATH="$PATH" HOME="${HOME:-$work}" \
			TETHER_ADDR="127.0.0.1:$port" \
			TETHER_DATA_DIR="$work/data-$attempt" \
			TETHER_JWT_SECRET="$secret" \
			"$@" \
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
}
