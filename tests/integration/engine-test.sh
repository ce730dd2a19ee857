#!/bin/sh
# engine-test.sh NAME [PROGRAM]: run the integration tests (or PROGRAM, a
# Criterion program built on the same harness, such as
# tests/hostile/test-hostile) against one engine.
#
# The engine's URL comes from HUTCH_TEST_<NAME> (HUTCH_TEST_DOCKER,
# HUTCH_TEST_PODMAN), as printed by `contrib/engines.sh env`.  Without it the
# test is skipped (77) -- unless HUTCH_MUST_RUN=1 or CI=true, where a missing
# engine is a failure: a CI run that skipped every integration test would be
# green and prove nothing.
#
# HUTCH_TEST_TIMEOUT (seconds, default 180) bounds each test, so one hung test
# fails instead of eating the CI time limit.  HUTCH_TEST_FILTER, when set, is
# Criterion's --filter (an extglob such as '@(exec|tty)/*'): the *-engine-path
# tests run the exec suites a second time with the fast path off.
set -u

name=${1:?usage: engine-test.sh docker|podman [PROGRAM]}
prog=${2:-tests/integration/test-integration}
var=HUTCH_TEST_$(printf '%s' "$name" | tr '[:lower:]' '[:upper:]')
eval "url=\${$var:-}"

if [ -z "$url" ]; then
	if [ "${HUTCH_MUST_RUN:-}" = 1 ] || [ "${CI:-}" = true ]; then
		echo "engine-test: $var is not set: no $name engine to test against"
		echo "engine-test: start one with contrib/engines.sh start and eval \"\$(contrib/engines.sh env)\""
		exit 1
	fi
	echo "engine-test: $var is not set: skipping the $name integration tests"
	exit 77
fi

case $url in
unix://*) set -- --unix-socket "${url#unix://}" http://localhost/_ping ;;
/*) set -- --unix-socket "$url" http://localhost/_ping ;;
tcp://*) set -- "http://${url#tcp://}/_ping" ;;
*)
	echo "engine-test: $var='$url': use unix:///PATH or tcp://HOST:PORT"
	exit 1
	;;
esac
if ! answer=$(curl -sS --max-time 10 "$@" 2>&1) || [ "$answer" != OK ]; then
	echo "engine-test: the $name engine at $url does not answer GET /_ping: $answer"
	exit 1
fi

bin=${HUTCH_BUILDDIR:-.}/$prog
if [ ! -x "$bin" ]; then
	echo "engine-test: $bin is not built"
	exit 99 # hard error: the build is broken, not the test
fi

HUTCH_TEST_ENGINE=$url
HUTCH_TEST_ENGINE_NAME=$name
export HUTCH_TEST_ENGINE HUTCH_TEST_ENGINE_NAME
echo "engine-test: $name at $url${HUTCH_FAST_PATH:+, HUTCH_FAST_PATH=$HUTCH_FAST_PATH}${HUTCH_TEST_FILTER:+, only $HUTCH_TEST_FILTER}"
exec "$bin" --verbose --color=never --short-filename --timeout "${HUTCH_TEST_TIMEOUT:-600}" \
	${HUTCH_TEST_FILTER:+--filter "$HUTCH_TEST_FILTER"}
