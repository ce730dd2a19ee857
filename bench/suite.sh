#!/usr/bin/env bash
# bench/suite.sh - hutch against the same engine's raw API floor and its
# own CLI, all in one run, with the ratios printed.
#
#   bench/suite.sh [ENGINE_URL]        (from a build directory)
#
# ENGINE_URL is unix:///path (default $HUTCH_TEST_DOCKER, else
# $HUTCH_ENGINE).  Every exec figure is taken twice: on the agent's channel
# (the fast path, hutch's default) and on the engine's exec
# (HUTCH_FAST_PATH=0).  Measured, each against its floors:
#   1. warm exec latency      hutch exec S true | raw floor (create, start,
#                             inspect on one keep-alive connection) as a
#                             process and as a loop | hutch's own library
#                             loop (bench/exec-loop) | docker/podman exec
#   2. cold session creation  hutch up NEW | raw container create + start
#                             (same image, no network, init) | docker run -d
#   3. sync-in, sync-out      10,000 files of 10 KiB: hutch sync-in | tar |
#                             curl PUT archive | docker cp; out: hutch
#                             sync-out | curl GET archive | tar | docker cp;
#                             MB/s, peak RSS
#   4. 1 GiB of output        dd's 1 GiB in 1 MiB writes through
#                             hutch exec (streamed to /dev/null, and --json
#                             with its 1 MiB caps) | raw floor | docker exec;
#                             wall time and peak RSS
#   5. throughput             execs/s of `true` at 1, 8 and 64 sessions in
#                             parallel: hutch batch --parallel N | N raw
#                             floor loops | N docker exec loops
#   6, 7. stdin, port-forward bench/io.sh: 1 GiB through `exec -i` | docker
#                             exec -i; a forwarded port's latency, 50
#                             requests at once and throughput | the same
#                             server reached directly on the host
# and a Markdown table at the end (what README's Benchmark section shows).
#
# Knobs: BENCH_SECTIONS (which of 1..6 to run, default all: 3 is both
# syncs, 6 is io.sh), BENCH_RUNS (warm exec runs, 30), BENCH_COLD_RUNS (10),
# BENCH_SYNC_RUNS (3), BENCH_JOBS (execs per throughput point, 192),
# BENCH_PARALLEL ("1 8 64").  Needs hyperfine, GNU time, curl, tar, and a
# built tree (HUTCH_BUILDDIR, default the current directory).  A benchmark,
# not a test: it prints figures and never judges them.  Everything it makes
# (sessions bench-*, containers, temporary files) is removed at the end.
set -euo pipefail
export LC_ALL=C

builddir=${HUTCH_BUILDDIR:-$(pwd)}
hutch="$builddir/.libs/hutch"
[ -x "$hutch" ] || hutch="$builddir/hutch"
export LD_LIBRARY_PATH="$builddir/.libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
floor="$builddir/bench/raw-floor"
loop="$builddir/bench/exec-loop"
[ ! -x "$builddir/bench/.libs/exec-loop" ] || loop="$builddir/bench/.libs/exec-loop"
runs=${BENCH_RUNS:-30}
cold_runs=${BENCH_COLD_RUNS:-10}
sync_runs=${BENCH_SYNC_RUNS:-3}
jobs=${BENCH_JOBS:-192}
widths=${BENCH_PARALLEL:-1 8 64}
url=${1:-${HUTCH_TEST_DOCKER:-${HUTCH_ENGINE:-}}}

die() { echo "suite: $*" >&2; exit 1; }
[ -n "$url" ] || die "name an engine: bench/suite.sh unix:///path/to/docker.sock"
case $url in
unix://*) sock=${url#unix://} ;;
*) die "'$url': the raw floor speaks unix sockets only (unix:///PATH)" ;;
esac
for tool in hyperfine /usr/bin/time curl tar "$hutch" "$floor" "$loop"; do
	command -v "$tool" >/dev/null || die "$tool not found (make; apt-get install hyperfine time)"
done

H=("$hutch" --engine "$url")
HE=(env HUTCH_FAST_PATH=0 "$hutch" --engine "$url") # the engine's exec
image=${HUTCH_IMAGE:-hutch-offline:latest}
"${H[@]}" doctor >/dev/null 2>&1 || die "$("${H[@]}" doctor 2>&1 | sed -n 's/^problem *//p' | head -n 1)"
kind=$("${H[@]}" doctor --json | sed -n 's/.*"engine":"\([^"]*\)".*/\1/p')
case "$kind" in
Podman) cli=(podman --remote --url "$url") ;;
*) cli=(docker -H "$url") ;;
esac
have_cli=
command -v "${cli[0]}" >/dev/null && "${cli[@]}" version >/dev/null 2>&1 && have_cli=1

tmp=$(mktemp -d /tmp/hutch-bench-XXXXXX)
warm=bench-warm-$$
ctr=hutch-$warm
sessions=("$warm")
cleanup() {
	set +e
	"${H[@]}" rm --force "${sessions[@]}" >/dev/null 2>&1
	curl -s -o /dev/null --unix-socket "$sock" -X DELETE \
		"http://localhost/v1.41/containers/bench-floor-$$?force=1"
	[ -z "$have_cli" ] || "${cli[@]}" rm -f "bench-cli-$$" >/dev/null 2>&1
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

mean_ms() { awk -F, 'NR==2 { printf "%.1f", $2 * 1000 }' "$1"; } # hyperfine CSV
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0 && a != "-") printf "%.2f", a / b; else printf "-" }'; }
now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.3f", b - a }'; }
# peak RSS (MB) and wall seconds of one run of a shell command
rss_run() { /usr/bin/time -f '%M %e' -o "$tmp/time" sh -c "$1" >/dev/null 2>"$tmp/rss.err" ||
	{ cat "$tmp/rss.err" >&2; die "failed: $1"; }
	awk '{ printf "%.0f %.2f\n", $1 / 1024, $2 }' "$tmp/time"; }
row() { printf '  %-34s %10s %s\n' "$1" "$2" "${3:-}"; }
declare -A R # results for the table
mb=102.4 # sync: 10,000 x 10,240 bytes, in MB
mbs() { awk -v m="$mb" -v s="$1" 'BEGIN { if (s > 0) printf "%.0f", m / s; else printf "-" }'; }
mbs1() { awk -v s="$1" 'BEGIN { if (s > 0) printf "%.0f", 1073.741824 / s; else printf "-" }'; }
# BENCH_SECTIONS: the sections to run ("1 4 5 6", default all); a section
# not run is "-" in the table.
want() { case " ${BENCH_SECTIONS:-1 2 3 4 5 6} " in *" $1 "*) return 0 ;; esac; return 1; }

echo "== $kind at $url, $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
"${H[@]}" up "$warm" >/dev/null

if want 1; then
# ---- 1. warm exec latency ----------------------------------------------------
echo "-- 1. warm exec of 'true' ($runs runs each, warm container)"
hyperfine -N -w 5 -r "$runs" --export-csv "$tmp/h.csv" "${H[*]} exec $warm true" >/dev/null
hyperfine -N -w 5 -r "$runs" --export-csv "$tmp/he.csv" "${HE[*]} exec $warm true" >/dev/null
hyperfine -N -w 5 -r "$runs" --export-csv "$tmp/f.csv" "$floor $url hutch-$warm 1" >/dev/null
R[lat_h]=$(mean_ms "$tmp/h.csv")
R[lat_he]=$(mean_ms "$tmp/he.csv")
R[lat_f]=$(mean_ms "$tmp/f.csv")
R[lat_loop]=$("$floor" "$url" "hutch-$warm" "$runs" | awk '{ printf "%.1f", $1 }')
read -r R[lat_hl] path < <("$loop" "$url" "$warm" $((runs * 10)))
[ "$path" = agent ] || die "exec-loop: the library's execs took the $path path, not the agent's"
R[lat_hl]=$(awk -v v="${R[lat_hl]}" 'BEGIN { printf "%.2f", v }')
read -r R[lat_hle] path < <(HUTCH_FAST_PATH=0 "$loop" "$url" "$warm" "$runs")
R[lat_hle]=$(awk -v v="${R[lat_hle]}" 'BEGIN { printf "%.1f", v }')
R[lat_c]=-
if [ -n "$have_cli" ]; then
	hyperfine -N -w 3 -r "$runs" --export-csv "$tmp/c.csv" "${cli[*]} exec hutch-$warm true" >/dev/null
	R[lat_c]=$(mean_ms "$tmp/c.csv")
fi
row "hutch exec (process)" "${R[lat_h]} ms" "hutch/floor $(ratio "${R[lat_h]}" "${R[lat_f]}"), hutch/cli $(ratio "${R[lat_h]}" "${R[lat_c]}")"
row "hutch exec, engine path (process)" "${R[lat_he]} ms" "hutch/floor $(ratio "${R[lat_he]}" "${R[lat_f]}")"
row "hutch library loop" "${R[lat_hl]} ms" "loop/floor loop $(ratio "${R[lat_hl]}" "${R[lat_loop]}")"
row "hutch library loop, engine path" "${R[lat_hle]} ms" "loop/floor loop $(ratio "${R[lat_hle]}" "${R[lat_loop]}")"
row "raw floor (process)" "${R[lat_f]} ms"
row "raw floor (in-process loop)" "${R[lat_loop]} ms"
row "${cli[0]} exec (process)" "${R[lat_c]} ms"

fi

if want 2; then
# ---- 2. cold session creation -------------------------------------------------
echo "-- 2. cold session creation ($cold_runs runs each; removal not timed)"
cold=bench-cold-$$
sessions+=("$cold")
hyperfine -N -r "$cold_runs" --prepare "${H[*]} rm --force $cold" \
	--export-csv "$tmp/h.csv" "${H[*]} up $cold" >/dev/null
R[cold_h]=$(mean_ms "$tmp/h.csv")
hyperfine -N -r "$cold_runs" \
	--prepare "curl -s -o /dev/null --unix-socket $sock -X DELETE http://localhost/v1.41/containers/bench-floor-$$?force=1" \
	--export-csv "$tmp/f.csv" "$floor $url --create $image bench-floor-$$" >/dev/null
R[cold_f]=$(mean_ms "$tmp/f.csv")
R[cold_c]=-
if [ -n "$have_cli" ]; then
	hyperfine -N -r "$cold_runs" --prepare "${cli[*]} rm -f bench-cli-$$" \
		--export-csv "$tmp/c.csv" \
		"${cli[*]} run -d --init --network none --name bench-cli-$$ $image sleep 2147483647" >/dev/null
	R[cold_c]=$(mean_ms "$tmp/c.csv")
fi
row "hutch up (new session)" "${R[cold_h]} ms"
row "raw create + start" "${R[cold_f]} ms" "hutch/floor $(ratio "${R[cold_h]}" "${R[cold_f]}")"
row "${cli[0]} run -d" "${R[cold_c]} ms" "hutch/cli   $(ratio "${R[cold_h]}" "${R[cold_c]}")"

fi

if want 3; then
# ---- 3. sync-in ---------------------------------------------------------------
echo "-- 3. sync-in of 10,000 files of 10 KiB ($sync_runs runs each)"
src=$tmp/tree
for i in 0 1 2 3 4 5 6 7 8 9; do
	mkdir -p "$src/d$i"
	head -c $((1000 * 10240)) /dev/urandom | split -b 10240 -a 3 -d - "$src/d$i/f"
done

# Empty the workspace as root and as the session's user: tar and docker cp
# leave root's files, sync-in the user's, and a session without
# capabilities gives neither the right to remove the other's.
cat >"$tmp/clear.sh" <<CLEAR
for user in 0 ""; do
	id=\$(curl -sSf --unix-socket $sock -H 'Content-Type: application/json' \\
		-d '{"User":"'\$user'","AttachStdout":true,"Cmd":["sh","-c","rm -rf /workspace/* /workspace/.[!.]* 2>/dev/null; true"]}' \\
		http://localhost/v1.41/containers/$ctr/exec | sed 's/.*"Id":"\([0-9a-f]*\)".*/\1/')
	curl -sSf -o /dev/null --unix-socket $sock -H 'Content-Type: application/json' \\
		-d '{"Detach":false,"Tty":false}' http://localhost/v1.41/exec/\$id/start
done
CLEAR
clear_ws="sh $tmp/clear.sh"
cmd_h="${H[*]} sync-in $warm $src"
cmd_f="tar -C $src -cf - . | curl -sSf --unix-socket $sock -T - -X PUT 'http://localhost/v1.41/containers/$ctr/archive?path=/workspace'"
cmd_c="${cli[*]} cp $src/. $ctr:/workspace"
sync_names=(h f)
[ -z "$have_cli" ] || sync_names+=(c)
for n in "${sync_names[@]}"; do
	eval "cmd=\$cmd_$n"
	sh -c "$clear_ws"
	read -r R[sync_rss_$n] _ < <(rss_run "$cmd")
	files=$("${H[@]}" exec "$warm" -- sh -c 'find /workspace -type f | wc -l')
	[ "$files" -eq 10000 ] || die "sync ($n): $files files arrived, not 10000"
	hyperfine -r "$sync_runs" --prepare "$clear_ws" --export-csv "$tmp/s.csv" "$cmd" >/dev/null
	R[sync_$n]=$(awk -F, 'NR==2 { printf "%.2f", $2 }' "$tmp/s.csv")
done
R[sync_c]=${R[sync_c]:--}
R[sync_rss_c]=${R[sync_rss_c]:--}
row "hutch sync-in" "${R[sync_h]} s" "$(mbs "${R[sync_h]}") MB/s, peak RSS ${R[sync_rss_h]} MB"
row "tar | curl PUT archive" "${R[sync_f]} s" "$(mbs "${R[sync_f]}") MB/s, peak RSS ${R[sync_rss_f]} MB, hutch/floor $(ratio "${R[sync_h]}" "${R[sync_f]}")"
row "${cli[0]} cp" "${R[sync_c]} s" "$(mbs "${R[sync_c]}") MB/s, peak RSS ${R[sync_rss_c]} MB, hutch/cli $(ratio "${R[sync_h]}" "${R[sync_c]}")"

# ---- 3b. sync-out ---------------------------------------------------------------
echo "-- 3b. sync-out of the same 10,000 files ($sync_runs runs each)"
sh -c "$clear_ws"
"${H[@]}" sync-in "$warm" "$src" >/dev/null
rm -rf "$src"
dst=$tmp/out
cmd_h="${H[*]} sync-out $warm $dst"
cmd_f="mkdir -p $dst && curl -sSf --unix-socket $sock 'http://localhost/v1.41/containers/$ctr/archive?path=/workspace/.' | tar -C $dst -xf -"
cmd_c="${cli[*]} cp $ctr:/workspace/. $dst"
for n in "${sync_names[@]}"; do
	eval "cmd=\$cmd_$n"
	rm -rf "$dst"
	read -r R[out_rss_$n] _ < <(rss_run "$cmd")
	files=$(find "$dst" -type f | wc -l)
	[ "$files" -eq 10000 ] || die "sync-out ($n): $files files arrived, not 10000"
	hyperfine -r "$sync_runs" --prepare "rm -rf $dst" --export-csv "$tmp/s.csv" "$cmd" >/dev/null
	R[out_$n]=$(awk -F, 'NR==2 { printf "%.2f", $2 }' "$tmp/s.csv")
done
rm -rf "$dst"
R[out_c]=${R[out_c]:--}
R[out_rss_c]=${R[out_rss_c]:--}
row "hutch sync-out" "${R[out_h]} s" "$(mbs "${R[out_h]}") MB/s, peak RSS ${R[out_rss_h]} MB"
row "curl GET archive | tar" "${R[out_f]} s" "$(mbs "${R[out_f]}") MB/s, peak RSS ${R[out_rss_f]} MB, hutch/floor $(ratio "${R[out_h]}" "${R[out_f]}")"
row "${cli[0]} cp (out)" "${R[out_c]} s" "$(mbs "${R[out_c]}") MB/s, peak RSS ${R[out_rss_c]} MB, hutch/cli $(ratio "${R[out_h]}" "${R[out_c]}")"
sh -c "$clear_ws"

fi

if want 4; then
# ---- 4. a command printing 1 GiB -------------------------------------------------
echo "-- 4. a command printing 1 GiB (one run each)"
# dd in 1 MiB writes, not busybox's head -c, which alone makes no more
# than ~250 MB/s (it, not the path, was the limit of the fast path).
gib="dd if=/dev/zero bs=1048576 count=1024"
read -r R[gib_rss_h] R[gib_h] < <(rss_run "${H[*]} exec $warm -- $gib")
read -r R[gib_rss_he] R[gib_he] < <(rss_run "${HE[*]} exec $warm -- $gib")
read -r R[gib_rss_j] R[gib_j] < <(rss_run "${H[*]} exec $warm --json -- $gib")
read -r R[gib_rss_f] R[gib_f] < <(rss_run "$floor $url $ctr 1 $gib")
R[gib_c]=-
R[gib_rss_c]=-
[ -z "$have_cli" ] || read -r R[gib_rss_c] R[gib_c] < <(rss_run "${cli[*]} exec $ctr $gib")
row "hutch exec (streamed)" "${R[gib_h]} s" "peak RSS ${R[gib_rss_h]} MB, $(mbs1 "${R[gib_h]}") MB/s"
row "hutch exec, engine path" "${R[gib_he]} s" "peak RSS ${R[gib_rss_he]} MB, $(mbs1 "${R[gib_he]}") MB/s, agent/engine $(ratio "${R[gib_h]}" "${R[gib_he]}")"
row "hutch exec --json (1 MiB caps)" "${R[gib_j]} s" "peak RSS ${R[gib_rss_j]} MB"
row "raw floor" "${R[gib_f]} s" "peak RSS ${R[gib_rss_f]} MB, hutch/floor $(ratio "${R[gib_h]}" "${R[gib_f]}")"
row "${cli[0]} exec" "${R[gib_c]} s" "peak RSS ${R[gib_rss_c]} MB, hutch/cli $(ratio "${R[gib_h]}" "${R[gib_c]}")"

fi

if want 5; then
# ---- 5. throughput at N parallel sessions -------------------------------------------
echo "-- 5. throughput: $jobs execs of 'true' over N sessions, N at a time"
maxw=1
for w in $widths; do [ "$w" -le "$maxw" ] || maxw=$w; done
tp=bench-tp-$$
# Make the widest set of sessions once (warm for every point), with batch.
for ((i = 0; i < maxw; i++)); do
	sessions+=("$tp-$i")
	printf '{"session":"%s","command":["true"]}\n' "$tp-$i"
done >"$tmp/make.jsonl"
"${H[@]}" batch "$tmp/make.jsonl" --keep --parallel "$maxw" >/dev/null 2>"$tmp/batch.err" ||
	{ cat "$tmp/batch.err" >&2; die "could not make $maxw sessions"; }
# batch_rate W PER CMD...: `batch --parallel W` of W*PER execs of `true` over
# W sessions; execs/s into $rate, peak RSS (MB) into $rss.
batch_rate() {
	local w=$1 n=$(($1 * $2)) t0 ok i
	shift 2
	for ((i = 0; i < n; i++)); do
		printf '{"session":"%s-%d","command":["true"]}\n' "$tp" $((i % w))
	done >"$tmp/jobs.jsonl"
	t0=$(now)
	/usr/bin/time -f '%M' -o "$tmp/time" "$@" batch "$tmp/jobs.jsonl" --keep --parallel "$w" \
		>"$tmp/out.jsonl" 2>"$tmp/batch.err" || { cat "$tmp/batch.err" >&2; die "batch at $w failed"; }
	rate=$(awk -v n="$n" -v s="$(since "$t0")" 'BEGIN { printf "%.1f", n / s }')
	ok=$(grep -c '"status":"ok"' "$tmp/out.jsonl")
	[ "$ok" -eq "$n" ] || die "batch at $w: $ok of $n ok"
	rss=$(awk '{ printf "%.0f", $1 / 1024 }' "$tmp/time")
}
for w in $widths; do
	per=$(((jobs + w - 1) / w))
	total=$((per * w))
	# The fast path runs ten times the execs, so that it runs long enough
	# to be measured.
	batch_rate "$w" $((per * 10)) "${H[@]}"
	grep -q '"path":"agent"' "$tmp/out.jsonl" || die "batch at $w: no exec took the agent's path"
	R[tp_h_$w]=$rate
	R[tp_rss_$w]=$rss
	batch_rate "$w" "$per" "${HE[@]}"
	R[tp_he_$w]=$rate
	R[tp_rsse_$w]=$rss
	# The floor: w processes, each one warm-up exec and then `per` more.
	t0=$(now)
	for ((i = 0; i < w; i++)); do
		"$floor" "$url" "hutch-$tp-$i" "$per" >/dev/null &
	done
	wait
	s_f=$(since "$t0")
	R[tp_f_$w]=$(awk -v n="$((total + w))" -v s="$s_f" 'BEGIN { printf "%.1f", n / s }')
	R[tp_c_$w]=-
	if [ -n "$have_cli" ]; then
		cper=$(((per + 3) / 4)) # the CLI is slow: a quarter of the execs
		t0=$(now)
		for ((i = 0; i < w; i++)); do
			(for ((k = 0; k < cper; k++)); do "${cli[@]}" exec "hutch-$tp-$i" true; done) &
		done
		wait
		s_c=$(since "$t0")
		R[tp_c_$w]=$(awk -v n="$((cper * w))" -v s="$s_c" 'BEGIN { printf "%.1f", n / s }')
	fi
	row "N=$w: hutch batch" "${R[tp_h_$w]}/s" "peak RSS ${R[tp_rss_$w]} MB"
	row "N=$w: hutch batch, engine path" "${R[tp_he_$w]}/s" "peak RSS ${R[tp_rsse_$w]} MB, agent/engine $(ratio "${R[tp_h_$w]}" "${R[tp_he_$w]}")"
	row "N=$w: raw floor loops" "${R[tp_f_$w]}/s" "hutch/floor $(ratio "${R[tp_h_$w]}" "${R[tp_f_$w]}")"
	row "N=$w: ${cli[0]} exec loops" "${R[tp_c_$w]}/s" "hutch/cli   $(ratio "${R[tp_h_$w]}" "${R[tp_c_$w]}")"
done

fi

if want 6; then
# ---- 6, 7. stdin and port forwarding (bench/io.sh) ----------------------------------
HUTCH_BUILDDIR=$builddir "$(dirname "$0")/io.sh" "$url" | tee "$tmp/io.txt"

fi

# ---- the table ------------------------------------------------------------------
c=${cli[0]}
echo
echo "For times a ratio below 1 means hutch is faster; for execs/s, above 1."
echo "| $kind | hutch | hutch, engine path | raw API floor | $c CLI | hutch / floor | hutch / $c | hutch / engine path |"
echo "|---|---|---|---|---|---|---|---|"
echo "| warm exec \`true\`, process | ${R[lat_h]:--} ms | ${R[lat_he]:--} ms | ${R[lat_f]:--} ms | ${R[lat_c]:--} ms | $(ratio "${R[lat_h]:--}" "${R[lat_f]:--}") | $(ratio "${R[lat_h]:--}" "${R[lat_c]:--}") | $(ratio "${R[lat_h]:--}" "${R[lat_he]:--}") |"
echo "| warm exec \`true\`, in-process loop | ${R[lat_hl]:--} ms | ${R[lat_hle]:--} ms | ${R[lat_loop]:--} ms | - | $(ratio "${R[lat_hl]:--}" "${R[lat_loop]:--}") | - | $(ratio "${R[lat_hl]:--}" "${R[lat_hle]:--}") |"
echo "| cold session (\`up\` / create+start / \`run -d\`) | ${R[cold_h]:--} ms | - | ${R[cold_f]:--} ms | ${R[cold_c]:--} ms | $(ratio "${R[cold_h]:--}" "${R[cold_f]:--}") | $(ratio "${R[cold_h]:--}" "${R[cold_c]:--}") | - |"
echo "| sync-in ${mb} MB, 10,000 files | ${R[sync_h]:--} s, $(mbs "${R[sync_h]:--}") MB/s, ${R[sync_rss_h]:--} MB RSS | - | ${R[sync_f]:--} s, ${R[sync_rss_f]:--} MB RSS | ${R[sync_c]:--} s, ${R[sync_rss_c]:--} MB RSS | $(ratio "${R[sync_h]:--}" "${R[sync_f]:--}") | $(ratio "${R[sync_h]:--}" "${R[sync_c]:--}") | - |"
echo "| sync-out ${mb} MB, 10,000 files | ${R[out_h]:--} s, $(mbs "${R[out_h]:--}") MB/s, ${R[out_rss_h]:--} MB RSS | - | ${R[out_f]:--} s, ${R[out_rss_f]:--} MB RSS | ${R[out_c]:--} s, ${R[out_rss_c]:--} MB RSS | $(ratio "${R[out_h]:--}" "${R[out_f]:--}") | $(ratio "${R[out_h]:--}" "${R[out_c]:--}") | - |"
echo "| 1 GiB of output | ${R[gib_h]:--} s, $(mbs1 "${R[gib_h]:--}") MB/s, ${R[gib_rss_h]:--} MB RSS (\`--json\`: ${R[gib_j]:--} s, ${R[gib_rss_j]:--} MB) | ${R[gib_he]:--} s, $(mbs1 "${R[gib_he]:--}") MB/s, ${R[gib_rss_he]:--} MB RSS | ${R[gib_f]:--} s, ${R[gib_rss_f]:--} MB RSS | ${R[gib_c]:--} s, ${R[gib_rss_c]:--} MB RSS | $(ratio "${R[gib_h]:--}" "${R[gib_f]:--}") | $(ratio "${R[gib_h]:--}" "${R[gib_c]:--}") | $(ratio "${R[gib_h]:--}" "${R[gib_he]:--}") |"
for w in $widths; do
	label="$w parallel sessions"
	[ "$w" -ne 1 ] || label="1 session"
	echo "| execs/s, $label (batch) | ${R[tp_h_$w]:--}/s (${R[tp_rss_$w]:--} MB RSS) | ${R[tp_he_$w]:--}/s (${R[tp_rsse_$w]:--} MB RSS) | ${R[tp_f_$w]:--}/s | ${R[tp_c_$w]:--}/s | $(ratio "${R[tp_h_$w]:--}" "${R[tp_f_$w]:--}") | $(ratio "${R[tp_h_$w]:--}" "${R[tp_c_$w]:--}") | $(ratio "${R[tp_h_$w]:--}" "${R[tp_he_$w]:--}") |"
done
[ ! -f "$tmp/io.txt" ] || grep '^| ' "$tmp/io.txt"
