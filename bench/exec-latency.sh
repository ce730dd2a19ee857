#!/usr/bin/env bash
# Warm `hutch exec SESSION true`, timed in one run against the same
# engine's raw API floor (bench/raw-floor: exec create, start and inspect on
# one keep-alive connection) and against the engine's own CLI exec.
#
#   bench/exec-latency.sh [ENGINE_URL...]
#
# With no URL it uses $HUTCH_TEST_DOCKER and $HUTCH_TEST_PODMAN (set by
# `contrib/engines.sh env`), else $HUTCH_ENGINE.  Needs hyperfine and a
# built tree (run from the build directory, or set HUTCH_BUILDDIR).
# This is a benchmark, not a test: it prints figures and never fails on them.
set -euo pipefail

builddir=${HUTCH_BUILDDIR:-$(pwd)}
hutch_bin="$builddir/.libs/hutch"
[ -x "$hutch_bin" ] || hutch_bin="$builddir/hutch"
export LD_LIBRARY_PATH="$builddir/.libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
floor="$builddir/bench/raw-floor"
runs=${BENCH_RUNS:-40}

for tool in hyperfine "$hutch_bin" "$floor"; do
	command -v "$tool" >/dev/null || { echo "exec-latency: $tool not found (make, and apt-get install hyperfine)" >&2; exit 1; }
done

engines=("$@")
if [ ${#engines[@]} -eq 0 ]; then
	[ -n "${HUTCH_TEST_DOCKER:-}" ] && engines+=("$HUTCH_TEST_DOCKER")
	[ -n "${HUTCH_TEST_PODMAN:-}" ] && engines+=("$HUTCH_TEST_PODMAN")
	[ ${#engines[@]} -eq 0 ] && [ -n "${HUTCH_ENGINE:-}" ] && engines+=("$HUTCH_ENGINE")
fi
[ ${#engines[@]} -gt 0 ] || { echo "exec-latency: name an engine URL" >&2; exit 1; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

mean_ms() { # hyperfine CSV: command,mean,stddev,median,...
	awk -F, 'NR==2 { printf "%.1f", $2 * 1000 }' "$1"
}

for url in "${engines[@]}"; do
	session=bench-latency
	"$hutch_bin" --engine "$url" up "$session" >/dev/null
	kind=$("$hutch_bin" --engine "$url" doctor --json | sed -n 's/.*"engine":"\([^"]*\)".*/\1/p')
	case "$kind" in
	Podman) cli=(podman --remote --url "$url" exec "hutch-$session" true) ;;
	*) cli=(docker -H "$url" exec "hutch-$session" true) ;;
	esac
	echo "== $kind at $url ($runs runs each, warm container)"

	hyperfine -N -w 5 -r "$runs" --export-csv "$tmp/hutch.csv" \
		"$hutch_bin --engine $url exec $session true" >/dev/null
	hyperfine -N -w 5 -r "$runs" --export-csv "$tmp/floor.csv" \
		"$floor $url hutch-$session 1" >/dev/null
	loop=$("$floor" "$url" "hutch-$session" "$runs")
	cli_ms=-
	if command -v "${cli[0]}" >/dev/null && "${cli[@]}" >/dev/null 2>&1; then
		hyperfine -N -w 3 -r "$runs" --export-csv "$tmp/cli.csv" "${cli[*]}" >/dev/null
		cli_ms=$(mean_ms "$tmp/cli.csv")
	fi
	h=$(mean_ms "$tmp/hutch.csv")
	f=$(mean_ms "$tmp/floor.csv")
	printf '  hutch exec (whole process)        %8s ms\n' "$h"
	printf '  raw API floor (whole process)     %8s ms   hutch/floor = %s\n' "$f" \
		"$(awk -v a="$h" -v b="$f" 'BEGIN { printf "%.2f", a / b }')"
	printf '  raw API floor (in-process loop)   %8s ms   hutch/loop  = %s\n' "$loop" \
		"$(awk -v a="$h" -v b="$loop" 'BEGIN { printf "%.2f", a / b }')"
	if [ "$cli_ms" != - ]; then
		printf '  %-33s %8s ms   hutch/cli   = %s\n' "${cli[0]} exec (whole process)" "$cli_ms" \
			"$(awk -v a="$h" -v b="$cli_ms" 'BEGIN { printf "%.2f", a / b }')"
	else
		printf '  %s exec: not available here\n' "${cli[0]}"
	fi
	"$hutch_bin" --engine "$url" rm "$session" >/dev/null
done
