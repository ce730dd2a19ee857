#!/usr/bin/env bash
# Build one of hutch's fuzz targets with clang and libFuzzer, run it, and
# fold what it found into its corpus:
#
#   contrib/fuzz.sh TARGET [SECONDS]     (default 60)
#   contrib/fuzz.sh list
#
# Targets (tests/fuzz/fuzz_TARGET.c): demux, engine, jsonrpc, path,
# editmatch, tar, redact, timestamp, fsanswer.  The build uses -fsanitize=fuzzer,address,undefined
# (Debian: clang and libclang-rt-dev, which contrib/deps.sh installs).  New
# inputs are merged into tests/fuzz/corpus/TARGET/ with -merge=1, which keeps
# only inputs that add coverage; `make check` replays that directory.  A
# crash leaves its input in $HUTCH_FUZZ_DIR (default /tmp/hutch-fuzz) and
# exits non-zero: fix the bug, then copy the input into the corpus.
#
# HUTCH_FUZZ_JOBS runs that many fuzzing processes at once (default 1).
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
target=${1:?usage: contrib/fuzz.sh TARGET [SECONDS] | list}
seconds=${2:-60}
work=${HUTCH_FUZZ_DIR:-/tmp/hutch-fuzz}

# Sources of each target besides its own file.
declare -A sources=(
	[demux]="src/lib/demux.c"
	[engine]="src/lib/engine_errors.c src/lib/error.c src/lib/buf.c"
	[jsonrpc]="src/mcp/jsonrpc.c src/shared/utf8.c"
	[path]="src/agent/fs_path.c"
	[editmatch]="src/agent/editmatch.c src/shared/utf8.c"
	[tar]="src/lib/sync_out.c src/lib/beneath.c src/lib/error.c src/lib/buf.c src/shared/utf8.c"
	[redact]="src/lib/redact.c src/shared/utf8.c"
	[timestamp]="src/lib/timestamp.c src/shared/base64.c"
	[fsanswer]="src/lib/fs_answer.c src/lib/engine_errors.c src/lib/error.c src/lib/buf.c src/lib/redact.c src/shared/utf8.c"
)
declare -A libs=(
	[engine]="json-c"
	[jsonrpc]="json-c"
	[tar]="libarchive libcurl" # libcurl: its header, through src/lib/dl.h
	[timestamp]="json-c"
	[fsanswer]="json-c"
)

if [ "$target" = list ]; then
	printf '%s\n' "${!sources[@]}" | sort
	exit 0
fi
[ -n "${sources[$target]:-}" ] || { echo "fuzz: no target '$target' (contrib/fuzz.sh list)" >&2; exit 2; }
cc=${CLANG:-$(command -v clang || command -v clang-14 || true)}
[ -n "$cc" ] || { echo "fuzz: clang is missing (contrib/deps.sh installs it)" >&2; exit 1; }

rm -rf "$work/$target/crashes"
mkdir -p "$work/$target/new" "$work/$target/crashes"
# common.h wants the configure header; nothing the targets use is in it.
[ -f "$work/config.h" ] || : >"$work/config.h"
bin=$work/$target/fuzz-$target
flags=()
[ -z "${libs[$target]:-}" ] || read -r -a flags <<<"$(pkg-config --cflags --libs ${libs[$target]})"
# shellcheck disable=SC2086
"$cc" -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
	-D_GNU_SOURCE -DHUTCH_DL_LINKED -I"$work" -I"$top/include" -I"$top/src/lib" -I"$top/src/shared" \
	-I"$top/src/agent" -I"$top/src/mcp" -I"$top/tests/fuzz" \
	-o "$bin" "$top/tests/fuzz/fuzz_$target.c" \
	$(printf "$top/%s " ${sources[$target]}) "${flags[@]}" -lpthread -lm

corpus=$top/tests/fuzz/corpus/$target
mkdir -p "$corpus"
before=$(find "$corpus" -type f | wc -l)
echo "fuzz: $target for ${seconds}s from $before inputs"
jobs=()
[ "${HUTCH_FUZZ_JOBS:-1}" -le 1 ] || jobs=(-jobs="$HUTCH_FUZZ_JOBS" -workers="$HUTCH_FUZZ_JOBS")
rc=0
(cd "$work/$target" &&
	"$bin" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 "${jobs[@]}" \
		-artifact_prefix="$work/$target/crashes/" -print_final_stats=1 \
		"$work/$target/new" "$corpus") || rc=$?
# Keep the corpus small: only what adds coverage, into a fresh directory
# that replaces the corpus only when the merge went through.
rm -rf "$corpus.merged"
mkdir "$corpus.merged"
if (cd "$work/$target" && "$bin" -merge=1 -artifact_prefix="$work/$target/crashes/" \
	"$corpus.merged" "$corpus" "$work/$target/new" >"$work/$target/merge.log" 2>&1) &&
	[ -n "$(ls -A "$corpus.merged")" ]; then
	rm -rf "$corpus"
	mv "$corpus.merged" "$corpus"
else
	echo "fuzz: $target: merge failed, corpus left as it was ($work/$target/merge.log)" >&2
	rm -rf "$corpus.merged"
	rc=1
fi
after=$(find "$corpus" -type f | wc -l)
echo "fuzz: $target: corpus $before -> $after inputs ($(du -sk --apparent-size "$corpus" | cut -f1) KiB)"
crashes=$(find "$work/$target/crashes" -type f | wc -l)
if [ "$rc" -ne 0 ] || [ "$crashes" -gt 0 ]; then
	echo "fuzz: $target FAILED (exit $rc); inputs in $work/$target/crashes/" >&2
	exit 1
fi
