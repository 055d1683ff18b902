"""Makes format4.backup and format4.json: a store written through the API of a
release of store format 4, and what that server answered. Run it with that
release's binary: python3 format4.py /path/to/tether OUT_DIR (a scratch data
directory is made in OUT_DIR/data). Made with the tether of main at e430983."""
import base64, hashlib, hmac, json, os, subprocess, sys, time, urllib.request, signal
TETHER, OUT = sys.argv[1], sys.argv[2]
SECRET = "test-secret-0123456789abcdef0123456789"
OP = "operator-token-for-the-format4-fixture"
ADDR = "127.0.0.1:37911"
URL = "http://" + ADDR
DATA = os.path.join(OUT, "data")
subprocess.run(["rm", "-rf", DATA])
env = dict(os.environ, TETHER_DATA_DIR=DATA, TETHER_JWT_SECRET=SECRET, TETHER_OPERATOR_TOKENS=OP, TETHER_ADDR=ADDR)
srv = subprocess.Popen([TETHER, "serve"], env=env, stderr=open(os.path.join(OUT, "serve.log"), "w"))
def b64(b): return base64.urlsafe_b64encode(b).rstrip(b"=").decode()
def jwt(sub, roles):
    h = b64(json.dumps({"alg": "HS256", "typ": "JWT"}).encode())
    p = b64(json.dumps({"sub": sub, "tid": "acme", "roles": roles, "exp": int(time.time()) + 3600 * 24 * 365 * 20}).encode())
    s = b64(hmac.new(SECRET.encode(), (h + "." + p).encode(), hashlib.sha256).digest())
    return h + "." + p + "." + s
ADMIN = jwt("root", ["admin"])
ALICE = jwt("alice", ["worker"])
def call(method, path, body=None, tok=ADMIN):
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(URL + path, data=data, method=method, headers={"Authorization": "Bearer " + tok, "Content-Type": "application/json"})
    with urllib.request.urlopen(req) as r:
        b = r.read()
        return json.loads(b) if b else None
for _ in range(100):
    try:
        urllib.request.urlopen(URL + "/health"); break
    except Exception:
        time.sleep(0.1)
call("PATCH", "/v1/tenant/policy", {"claim_ttl_default_ms": 60000, "retention_ms": 86400000, "requests_per_second": 250.5})
key = call("POST", "/v1/tokens", {"sub": "bot-1", "roles": ["worker", "reader"], "name": "ci runner"})
node = call("POST", "/v1/nodes", {"type": "agent", "queue": "q", "title": "a running agent"})
call("POST", "/v1/nodes/" + node["id"] + "/claim", {"ttl_ms": 3600000}, tok=ALICE)
call("POST", "/v1/workers/heartbeat", {"worker": "w1", "status": "idle", "meta": {"host": "h1", "pid": 42, "tags": ["a", "b"], "nested": {"x": 1.5}}}, tok=ALICE)
call("POST", "/v1/workers/heartbeat", {"worker": "w2", "status": "working", "node": node["id"]}, tok=ALICE)
m1 = call("POST", "/v1/messages", {"to": "alice", "body": "hello", "priority": 3, "thread": "t1"})
m2 = call("POST", "/v1/messages", {"to": "node:" + node["id"], "body": "steer", "ttl_ms": 86400000 * 20})
m3 = call("POST", "/v1/messages", {"to": "alice", "body": "read me"})
call("GET", "/v1/inbox", tok=ALICE)
call("POST", "/v1/inbox/" + m3["id"] + "/ack", {}, tok=ALICE)
sch = call("POST", "/v1/schedules", {"id": "nightly", "cron": "0 3 * * *", "timezone": "Europe/Paris",
    "template": {"type": "report", "queue": "q", "priority": 5, "labels": ["x", "y"], "props": {"k": 1.5, "nested": {"a": [1, 2]}},
                 "max_attempts": 3, "backoff": {"initial_ms": 1000, "max_ms": 60000, "factor": 2}, "timeout_ms": 30000},
    "chain": [{"type": "publish", "title": "publish it"}], "overlap": "skip", "jitter_ms": 1000, "backoff_ms": [1000, 5000]})
call("POST", "/v1/schedules/nightly/trigger", {})
call("POST", "/v1/schedules", {"id": "once", "at": "2040-01-01T00:00:00Z", "template": {"type": "one-off"}})
call("POST", "/v1/schedules/once/pause", {"note": "not yet"})
made = time.time()
paths = ["/v1/tenant", "/v1/tokens", "/v1/workers", "/v1/messages/" + m1["id"], "/v1/messages/" + m2["id"],
         "/v1/messages/" + m3["id"], "/v1/schedules", "/v1/schedules/nightly", "/v1/schedules/nightly/runs", "/v1/schedules/once"]
resp = {p: call("GET", p) for p in paths}
resp["/v1/inbox"] = call("GET", "/v1/inbox", tok=ALICE)
subprocess.run([TETHER, "backup", "--server", URL, "--token", OP, "-f", os.path.join(OUT, "format4.backup")], check=True)
srv.send_signal(signal.SIGTERM); srv.wait()
json.dump({"made_at_unix_ms": int(made * 1000), "node": node["id"], "api_key_token": key["token"], "responses": resp},
          open(os.path.join(OUT, "format4.json"), "w"), indent=1, sort_keys=True)
print("ok")
