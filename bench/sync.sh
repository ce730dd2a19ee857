#!/bin/sh
# bench/sync.sh - hutch sync-in against the floors it competes with
#
# Generates about 100 MB in 10,000 files (10 directories of 1,000 files of
# 10 KiB, random data), then in one run compares, into the same session's
# /workspace (emptied before every run):
#   hutch      hutch sync-in SESSION DIR
#   tar|curl   tar -C DIR -cf - . | curl --unix-socket SOCK -T - -X PUT .../archive?path=/workspace
#   docker cp  docker cp DIR/. CONTAINER:/workspace
# with hyperfine when it is installed (else repeated timing), and the peak
# RSS of each client (/usr/bin/time -f %M; the engine's own memory is not
# counted for any of them).
#
# usage: bench/sync.sh [SOCKET] [RUNS]
#   SOCKET  Docker API socket (default /var/run/docker.sock)
#   RUNS    runs per command (default 5)
#   HUTCH   the hutch binary (default: ./hutch, else hutch on PATH)
set -eu

SOCK=${1:-/var/run/docker.sock}
RUNS=${2:-5}
if [ -z "${HUTCH:-}" ]; then
	if [ -x ./hutch ]; then HUTCH=$(pwd)/hutch; else HUTCH=hutch; fi
fi
SESSION=bench-sync-$$
CTR=hutch-$SESSION
DIR=$(mktemp -d /tmp/hutch-bench-sync-XXXXXX)
H="$HUTCH --engine unix://$SOCK"

cleanup() {
	$H rm "$SESSION" >/dev/null 2>&1 || true
	rm -rf "$DIR"
}
trap cleanup EXIT INT TERM

echo "generating 10,000 files of 10 KiB in $DIR" >&2
i=0
while [ $i -lt 10 ]; do
	mkdir "$DIR/d$i"
	head -c $((1000 * 10240)) /dev/urandom | split -b 10240 -a 3 -d - "$DIR/d$i/f"
	i=$((i + 1))
done
echo "$(find "$DIR" -type f | wc -l) files, $(du -sm "$DIR" | cut -f1) MB" >&2

$H up "$SESSION" >/dev/null
CLEAR="$H exec $SESSION -- sh -c 'rm -rf /workspace/* /workspace/.[!.]*; true'"
CMD_HUTCH="$H sync-in $SESSION $DIR"
CMD_TAR="tar -C $DIR -cf - . | curl -sSf --unix-socket $SOCK -T - -X PUT 'http://localhost/v1.41/containers/$CTR/archive?path=/workspace'"
CMD_CP="docker -H unix://$SOCK cp $DIR/. $CTR:/workspace"

check() {
	n=$($H exec "$SESSION" -- sh -c 'find /workspace -type f | wc -l')
	[ "$n" -eq 10000 ] || { echo "$1: $n files arrived, not 10000" >&2; exit 1; }
}

echo "== peak RSS of the client (KB), one run each" >&2
for name in hutch tar docker; do
	case $name in
	hutch) cmd=$CMD_HUTCH ;;
	tar) cmd=$CMD_TAR ;;
	docker) cmd=$CMD_CP ;;
	esac
	sh -c "$CLEAR"
	# GNU time reports the largest RSS among the processes it waited for.
	/usr/bin/time -f "$name: peak RSS %M KB, %e s" sh -c "$cmd >/dev/null"
	check "$name"
done

echo "== wall time" >&2
if command -v hyperfine >/dev/null 2>&1; then
	hyperfine --warmup 1 --runs "$RUNS" --prepare "$CLEAR" \
		-n "hutch sync-in" "$CMD_HUTCH" \
		-n "tar | curl PUT archive" "$CMD_TAR" \
		-n "docker cp" "$CMD_CP"
else
	for name in hutch tar docker; do
		case $name in
		hutch) cmd=$CMD_HUTCH ;;
		tar) cmd=$CMD_TAR ;;
		docker) cmd=$CMD_CP ;;
		esac
		r=0
		while [ $r -lt "$RUNS" ]; do
			sh -c "$CLEAR"
			/usr/bin/time -f "$name: %e s" sh -c "$cmd >/dev/null"
			r=$((r + 1))
		done
	done
fi
