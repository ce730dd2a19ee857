#!/usr/bin/env bash
# bench/io.sh - standard input and port forwarding, each against its floor:
#
#   6. stdin throughput      1 GiB piped into `hutch exec -i S -- dd`, on
#                            the agent's channel and the engine's exec |
#                            `docker exec -i` (podman) of the same; MB/s and
#                            hutch's peak RSS
#   7. port forwarding       busybox httpd in a session (network none),
#                            reached through `hutch port-forward` | the same
#                            httpd run on the host, reached directly: mean
#                            latency of one small request (curl, new
#                            connection each), 50 requests at once, and the
#                            throughput of one 256 MiB download; the
#                            forward's peak RSS
#
#   bench/io.sh [ENGINE_URL]     (from a build directory; bench/suite.sh
#                                 runs it too, as its sections 6 and 7)
#
# Knobs: BENCH_RUNS (latency requests, 30).  Needs hyperfine, GNU time,
# curl and busybox on the host.  Prints figures, never judges them; what
# it makes (session bench-io-*, temporary files, the host httpd) is
# removed at the end.  The last lines are Markdown table rows (suite.sh
# appends them to its table).
set -euo pipefail
export LC_ALL=C

builddir=${HUTCH_BUILDDIR:-$(pwd)}
hutch="$builddir/.libs/hutch"
[ -x "$hutch" ] || hutch="$builddir/hutch"
export LD_LIBRARY_PATH="$builddir/.libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
runs=${BENCH_RUNS:-30}
url=${1:-${HUTCH_TEST_DOCKER:-${HUTCH_ENGINE:-}}}

die() { echo "io: $*" >&2; exit 1; }
[ -n "$url" ] || die "name an engine: bench/io.sh unix:///path/to/docker.sock"
for tool in hyperfine /usr/bin/time curl busybox "$hutch"; do
	command -v "$tool" >/dev/null || die "$tool not found"
done
H=("$hutch" --engine "$url")
kind=$("${H[@]}" doctor --json | sed -n 's/.*"engine":"\([^"]*\)".*/\1/p')
case "$kind" in
Podman) cli=(podman --remote --url "$url") ;;
*) cli=(docker -H "$url") ;;
esac
have_cli=
command -v "${cli[0]}" >/dev/null && "${cli[@]}" version >/dev/null 2>&1 && have_cli=1

tmp=$(mktemp -d /tmp/hutch-bench-io-XXXXXX)
s=bench-io-$$
fwd_pid=
host_pid=
cleanup() {
	set +e
	[ -z "$fwd_pid" ] || kill -INT "$fwd_pid" 2>/dev/null
	[ -z "$host_pid" ] || kill "$host_pid" 2>/dev/null
	wait 2>/dev/null
	"${H[@]}" rm --force "$s" >/dev/null 2>&1
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

row() { printf '  %-34s %10s %s\n' "$1" "$2" "${3:-}"; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0 && a != "-") printf "%.2f", a / b; else printf "-" }'; }
mbs() { awk -v b="$1" -v s="$2" 'BEGIN { if (s > 0) printf "%.0f", b / 1e6 / s; else printf "-" }'; }
declare -A R

"${H[@]}" up "$s" >/dev/null
ctr=hutch-$s

# ---- 6. stdin throughput --------------------------------------------------------
gib=1073741824
echo "-- 6. 1 GiB through stdin (one run each)"
# in_run KEY CMD...: 1 GiB piped into CMD exec -i $s -- $sink; seconds
# into R[in_KEY], peak RSS (MB) into R[in_rss_KEY].  GNU time measures sh
# and its children: dd's RSS is small and fixed, hutch's is the rest
# (the peak of any one process is what %M reports).  The sink is dd, in
# whole 1 MiB blocks (its "1024+0 records in" is the byte count), not
# busybox's wc -c, which alone counts no more than ~220 MB/s.
sink="dd of=/dev/null bs=1048576 iflag=fullblock"
# The source writes 1 MiB at a time (head -c writes 8 KiB, and each of
# its writes would reach hutch, and the engine, as a piece of its own).
source="dd if=/dev/zero bs=1048576 count=$((gib / 1048576)) status=none"
counted() { grep -qx "$((gib / 1048576))+0 records in" "$tmp/count"; }
in_run() {
	local key=$1 rss sec
	shift
	/usr/bin/time -f '%M %e' -o "$tmp/time" sh -c \
		"$source | $* exec -i $s -- $sink" >"$tmp/count" 2>&1
	counted || die "$* exec -i: $(cat "$tmp/count")"
	read -r rss sec <"$tmp/time"
	R[in_$key]=$sec
	R[in_rss_$key]=$(awk -v k="$rss" 'BEGIN { printf "%.0f", k / 1024 }')
}
in_run h "${H[*]}"
in_run he "env HUTCH_FAST_PATH=0 ${H[*]}"
R[in_rss]=${R[in_rss_h]}
R[in_c]=-
if [ -n "$have_cli" ]; then
	/usr/bin/time -f '%M %e' -o "$tmp/time" sh -c \
		"$source | ${cli[*]} exec -i $ctr $sink" >"$tmp/count" 2>&1
	counted || die "${cli[0]} exec -i: $(cat "$tmp/count")"
	read -r rss sec <"$tmp/time"
	R[in_c]=$sec
	R[in_c_rss]=$(awk -v k="$rss" 'BEGIN { printf "%.0f", k / 1024 }')
fi
row "hutch exec -i" "${R[in_h]} s" "$(mbs $gib "${R[in_h]}") MB/s, peak RSS ${R[in_rss]} MB"
row "hutch exec -i, engine path" "${R[in_he]} s" "$(mbs $gib "${R[in_he]}") MB/s, peak RSS ${R[in_rss_he]} MB, agent/engine $(ratio "${R[in_h]}" "${R[in_he]}")"
row "${cli[0]} exec -i" "${R[in_c]} s" "$(mbs $gib "${R[in_c]}") MB/s, peak RSS ${R[in_c_rss]:--} MB, hutch/cli $(ratio "${R[in_h]}" "${R[in_c]}")"

# ---- 7. port forwarding ----------------------------------------------------------
echo "-- 7. port forwarding: busybox httpd in the session vs on the host"
big=$((256 * 1024 * 1024))
"${H[@]}" sh "$s" "mkdir -p www && echo hello > www/small && head -c $big /dev/zero > www/big && httpd -p 127.0.0.1:8080 -h /workspace/www" >/dev/null
mkdir -p "$tmp/www"
echo hello >"$tmp/www/small"
head -c $big /dev/zero >"$tmp/www/big"
# busybox httpd cannot say which port it took: give it a free one.
hport=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
busybox httpd -f -p "127.0.0.1:$hport" -h "$tmp/www" &
host_pid=$!
"${H[@]}" port-forward "$s" 0:8080 >"$tmp/fwd.out" 2>"$tmp/fwd.err" &
fwd_pid=$!
for _ in $(seq 100); do
	grep -q forwarding "$tmp/fwd.out" 2>/dev/null && break
	sleep 0.1
done
fport=$(sed -n 's/^forwarding 127.0.0.1:\([0-9]*\) .*/\1/p' "$tmp/fwd.out")
[ -n "$fport" ] || die "port-forward did not listen: $(cat "$tmp/fwd.err")"
for _ in $(seq 50); do
	curl -sf "http://127.0.0.1:$hport/small" >/dev/null && break
	sleep 0.1
done
[ "$(curl -sf "http://127.0.0.1:$fport/small")" = hello ] || die "no answer through the forward: $(cat "$tmp/fwd.err")"

hyperfine -N -w 3 -r "$runs" --export-csv "$tmp/f.csv" "curl -sf -o /dev/null http://127.0.0.1:$fport/small" >/dev/null
hyperfine -N -w 3 -r "$runs" --export-csv "$tmp/d.csv" "curl -sf -o /dev/null http://127.0.0.1:$hport/small" >/dev/null
R[lat_f]=$(awk -F, 'NR==2 { printf "%.1f", $2 * 1000 }' "$tmp/f.csv")
R[lat_d]=$(awk -F, 'NR==2 { printf "%.1f", $2 * 1000 }' "$tmp/d.csv")
# 50 at once: the wall time of all of them.
par() {
	local t0 ok
	t0=$(date +%s.%N)
	ok=$(seq 50 | xargs -P 50 -I{} curl -sf -o /dev/null -w '%{http_code}\n' "http://127.0.0.1:$1/small" | grep -c 200 || true)
	[ "$ok" -eq 50 ] || die "50 at once on port $1: $ok answered"
	awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.0f", (b - a) * 1000 }'
}
R[par_f]=$(par "$fport")
R[par_d]=$(par "$hport")
dl() {
	curl -sf -o /dev/null -w '%{size_download} %{time_total}\n' "http://127.0.0.1:$1/big" |
		awk -v want=$big '$1 != want { exit 1 } { printf "%.0f %.2f\n", $1 / 1e6 / $2, $2 }'
}
read -r R[tp_f] R[tp_f_s] < <(dl "$fport") || die "download through the forward"
read -r R[tp_d] R[tp_d_s] < <(dl "$hport") || die "direct download"
R[fwd_rss]=$(awk '/^VmHWM/ { printf "%.0f", $2 / 1024 }' "/proc/$fwd_pid/status")
kill -INT "$fwd_pid"
wait "$fwd_pid" || die "port-forward did not end cleanly after SIGINT: $(cat "$tmp/fwd.err")"
fwd_pid=
row "request through port-forward" "${R[lat_f]} ms" "direct ${R[lat_d]} ms, ratio $(ratio "${R[lat_f]}" "${R[lat_d]}")"
row "50 requests at once" "${R[par_f]} ms" "direct ${R[par_d]} ms"
row "256 MiB download" "${R[tp_f]} MB/s" "direct ${R[tp_d]} MB/s; forward's peak RSS ${R[fwd_rss]} MB"

echo
echo "| stdin, 1 GiB (\`exec -i\` / - / \`${cli[0]} exec -i\`) | ${R[in_h]} s, $(mbs $gib "${R[in_h]}") MB/s, ${R[in_rss]} MB RSS | ${R[in_he]} s, $(mbs $gib "${R[in_he]}") MB/s, ${R[in_rss_he]} MB RSS | - | ${R[in_c]} s, $(mbs $gib "${R[in_c]}") MB/s, ${R[in_c_rss]:--} MB RSS | - | $(ratio "${R[in_h]}" "${R[in_c]}") | $(ratio "${R[in_h]}" "${R[in_he]}") |"
echo "| port-forward: one request (forward / direct to a host httpd) | ${R[lat_f]} ms | - | ${R[lat_d]} ms | - | $(ratio "${R[lat_f]}" "${R[lat_d]}") | - | - |"
echo "| port-forward: 50 requests at once | ${R[par_f]} ms | - | ${R[par_d]} ms | - | $(ratio "${R[par_f]}" "${R[par_d]}") | - | - |"
echo "| port-forward: 256 MiB download | ${R[tp_f]} MB/s, ${R[fwd_rss]} MB RSS | - | ${R[tp_d]} MB/s | - | $(ratio "${R[tp_d]}" "${R[tp_f]}") | - | - |"
