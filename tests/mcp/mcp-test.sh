#!/bin/sh
# mcp-test.sh NAME: the MCP end-to-end test (e2e.mjs) against one engine.
#
# e2e.mjs drives `hutch mcp` with the official MCP TypeScript SDK client,
# installed into tests/mcp/node_modules by `npm ci` (contrib/test.sh does
# it).  The engine's URL comes from HUTCH_TEST_<NAME>, as for the
# integration tests (tests/integration/engine-test.sh).  Without the engine,
# Node.js or the SDK the test is skipped (77) -- unless HUTCH_MUST_RUN=1 or
# CI=true, where each of them missing is a failure.
#
# HUTCH_TEST_TIMEOUT (seconds, default 180) bounds the whole run.
set -u

name=${1:?usage: mcp-test.sh docker|podman}
var=HUTCH_TEST_$(printf '%s' "$name" | tr '[:lower:]' '[:upper:]')
eval "url=\${$var:-}"
here=$(cd "$(dirname "$0")" && pwd)
must=
if [ "${HUTCH_MUST_RUN:-}" = 1 ] || [ "${CI:-}" = true ]; then
	must=1
fi

# missing WHAT HOWTO: fail where the test must run, else skip.
missing() {
	if [ -n "$must" ]; then
		echo "mcp-test: $1: the MCP end-to-end test cannot run"
		echo "mcp-test: $2"
		exit 1
	fi
	echo "mcp-test: $1: skipping the $name MCP end-to-end test"
	exit 77
}

[ -n "$url" ] || missing "$var is not set" \
	"start the engines with contrib/engines.sh start and eval \"\$(contrib/engines.sh env)\""
command -v node >/dev/null 2>&1 || missing "no node in PATH" \
	"install Node.js 20 or later (contrib/deps.sh does)"
[ -f "$here/node_modules/@modelcontextprotocol/sdk/package.json" ] ||
	missing "the MCP SDK is not installed in $here/node_modules" \
		"run 'npm ci' in tests/mcp (contrib/test.sh does)"

case $url in
unix://*) set -- --unix-socket "${url#unix://}" http://localhost/_ping ;;
/*) set -- --unix-socket "$url" http://localhost/_ping ;;
tcp://*) set -- "http://${url#tcp://}/_ping" ;;
*)
	echo "mcp-test: $var='$url': use unix:///PATH or tcp://HOST:PORT"
	exit 1
	;;
esac
if ! answer=$(curl -sS --max-time 10 "$@" 2>&1) || [ "$answer" != OK ]; then
	echo "mcp-test: the $name engine at $url does not answer GET /_ping: $answer"
	exit 1
fi

bin=${HUTCH_BUILDDIR:-.}/hutch
if [ ! -x "$bin" ]; then
	echo "mcp-test: $bin is not built"
	exit 99 # hard error: the build is broken, not the test
fi

HUTCH_BIN=$bin
HUTCH_TEST_ENGINE=$url
export HUTCH_BIN HUTCH_TEST_ENGINE
echo "mcp-test: $name at $url, node $(node --version)"
exec timeout --kill-after=10 "${HUTCH_TEST_TIMEOUT:-180}" node "$here/e2e.mjs"
