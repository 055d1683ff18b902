#!/usr/bin/env bash
# The Python client (clients/python): check that its generated modules match
# openapi.yaml, install it with pip into a virtual environment (offline:
# Debian's httpx, pytest, setuptools and wheel, no PyPI), type-check it and
# its README's blocks with mypy (as the TypeScript client's tsc), then run its pytest
# suite from outside the source tree against a freshly built server (the
# suite's conftest starts $TETHER_BIN on a free loopback port with a fresh
# data directory). Needs Go, git and Debian's python3 packages, which it
# installs with apt-get when they are missing. Takes about 2 minutes (mypy's
# first run is most of it).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
start=$SECONDS

work=$(mktemp -d "${TMPDIR:-/tmp}/tether-py-e2e.XXXXXX")
cleanup() {
	local status=$?
	rm -rf "$work"
	echo "== python-e2e: $((SECONDS - start)) s, exit $status"
	exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# Debian's python, not a pyenv or other python3 first on PATH: the packages
# below install into it.
py=/usr/bin/python3

echo "== python client: Debian packages (python3-httpx, python3-pytest, setuptools, wheel, venv, mypy)"
if ! [[ -x $py ]] || ! $py -c 'import httpx, pytest, setuptools, wheel, venv, ensurepip, mypy' 2>/dev/null; then
	sudo=""
	if [ "$(id -u)" != 0 ] && command -v sudo >/dev/null 2>&1; then sudo="sudo"; fi
	$sudo apt-get update -qq
	$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
		python3-httpx python3-pytest python3-setuptools python3-wheel python3-venv mypy >/dev/null
fi

echo "== python client: generated modules match openapi.yaml"
mkdir "$work/gen"
go run ./cmd/tether-pygen -spec openapi.yaml -out "$work/gen"
for f in "$work"/gen/*.py; do
	if ! cmp -s "$f" "clients/python/tether_client/$(basename "$f")"; then
		diff -u "clients/python/tether_client/$(basename "$f")" "$f" | head -n 60 || true
		echo "clients/python/tether_client/$(basename "$f") is stale: run make generate and commit it"
		exit 1
	fi
done

echo "== build the server"
go build -o "$work/tether" ./cmd/tether

echo "== python client: pip install (offline, into a venv over the system's packages)"
$py -m venv --system-site-packages "$work/venv"
# From a copy, so that the build leaves nothing in the checkout (and without
# a build/ left there by an earlier install, which setuptools would reuse).
cp -r clients/python "$work/src"
rm -rf "$work/src/build" "$work"/src/*.egg-info
find "$work/src" -name __pycache__ -prune -exec rm -rf {} +
"$work/venv/bin/pip" install --quiet --no-index --no-build-isolation "$work/src"

cd "$work"
echo "== python client: type check (mypy --strict on the installed package; mypy on the README's blocks)"
"$work/venv/bin/python" -m mypy --cache-dir "$work/mypy-cache" --strict -p tether_client
# The README's fragments (blocks not marked to run) get the names they use.
mkdir "$work/readme"
"$work/venv/bin/python" - "$root/clients/python/README.md" "$work/readme" <<'PY'
import pathlib, re, sys
text = pathlib.Path(sys.argv[1]).read_text()
preamble = 'from tether_client import *\ntether = Client("http://127.0.0.1:36725")\n'
for i, (mark, block) in enumerate(re.findall(r"(<!-- run[^>]*-->\n)?```python\n(.*?)```", text, re.S)):
    pathlib.Path(sys.argv[2], f"readme_{i}.py").write_text(block if mark else preamble + block)
PY
"$work/venv/bin/python" -m mypy --cache-dir "$work/mypy-cache" "$work/readme"

echo "== python client: pytest against a real server"
TETHER_BIN="$work/tether" "$work/venv/bin/python" -m pytest -p no:cacheprovider -v -rA \
	"$root/clients/python/tests" 2>&1 | tee "$work/pytest.log"
# -v lists every test; the suite must have run from the installed package.
grep -q "tether_client: $work/venv/" "$work/pytest.log" || {
	echo "the tests did not import the installed package"
	exit 1
}
