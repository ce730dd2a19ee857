#!/usr/bin/env bash
# Run hutch's whole test suite, the way CI does:
#
#   contrib/test.sh [--no-distcheck]
#
#   1. install what is missing (contrib/deps.sh), and the MCP SDK client
#      for the MCP tests (npm ci in tests/mcp)
#   2. check the C sources are formatted as .clang-format says; configure
#      --enable-werror (only when not configured so) and build
#   3. start a private Docker Engine and Podman service (contrib/engines.sh)
#   4. import hutch-offline:latest into both (images/offline/build.sh),
#      and a Debian image with python3 and pytest (images/debian/build.sh)
#   5. make check: unit tests, then the integration and MCP end-to-end
#      tests against both engines; HUTCH_MUST_RUN=1 makes a missing engine
#      a failure
#   6. valgrind: the unit tests and the fuzz corpora under memcheck
#   7. the whole of step 5 again on an ASan+UBSan build (build-san/)
#   8. make distcheck (skip with --no-distcheck): the release tarball builds
#      and its unit tests pass; its integration tests skip, they just ran
#
# The last line is "N passed, N failed[, N skipped]" (automake's counts; a
# failed step outside the test suite counts as one failure).  The exit status
# is non-zero on any failure.  The engines stay up for the next run;
# `contrib/engines.sh stop` stops them.
#
# HUTCH_CHECK_TIMEOUT and HUTCH_DISTCHECK_TIMEOUT (seconds) bound the two
# long steps, so a hang is reported here rather than by a CI time limit.
set -uo pipefail

distcheck=1
for arg in "$@"; do
	case $arg in
	--no-distcheck) distcheck= ;;
	-h | --help)
		sed -n '2,/^set /{/^#/s/^# \{0,1\}//p}' "$0"
		exit 0
		;;
	*)
		echo "test: unknown option '$arg' (only --no-distcheck)" >&2
		exit 2
		;;
	esac
done

top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top" || exit 1
jobs=${HUTCH_JOBS:-$(nproc 2>/dev/null || echo 2)}
t0=$(date +%s)
tstep=$t0
failed_steps=()
timings=()

step() {
	local now
	now=$(date +%s)
	[ -z "${cur:-}" ] || timings+=("$(printf '%5ds  %s' $((now - tstep)) "$cur")")
	cur=$*
	tstep=$now
	[ -z "$cur" ] || printf '\n=== [%s +%ds] %s\n' "$(date +%H:%M:%S)" $((now - t0)) "$cur"
}

# Counts from automake's test-suite.log ("# PASS:  3").
count() {
	local n
	n=$(sed -n "s/^# $1: *\([0-9]*\)\$/\1/p" test-suite.log 2>/dev/null | head -1)
	echo "${n:-0}"
}

finish() {
	step ""
	local pass=0 fail=0 skip=0
	if [ -f test-suite.log ]; then
		pass=$(count PASS)
		fail=$(($(count FAIL) + $(count ERROR) + $(count XPASS)))
		skip=$(count SKIP)
	fi
	echo
	echo "=== timings"
	printf '%s\n' "${timings[@]}"
	printf '%5ds  total\n' $(($(date +%s) - t0))
	if [ ${#failed_steps[@]} -gt 0 ]; then
		echo "=== failed: ${failed_steps[*]}"
		[ "$fail" -gt 0 ] || fail=${#failed_steps[@]}
	fi
	echo
	if [ "$skip" -gt 0 ]; then
		echo "$pass passed, $fail failed, $skip skipped"
	else
		echo "$pass passed, $fail failed"
	fi
	[ "$fail" -eq 0 ] && [ ${#failed_steps[@]} -eq 0 ]
	exit
}

# run NAME CMD...: run a step; a failure is recorded and returns 1.
run() {
	local name=$1
	shift
	"$@" && return 0
	echo "test: $name failed (exit $?)" >&2
	failed_steps+=("$name")
	return 1
}

show_failures() {
	local trs res log
	if [ -f test-suite.log ]; then
		echo "=== test-suite.log (summary)"
		sed '/^\.\. contents::/q' test-suite.log
	fi
	for trs in $(find . -name '*.trs' -newer "$check_stamp" 2>/dev/null | sort); do
		res=$(sed -n 's/^:test-result: //p' "$trs")
		case $res in
		FAIL | ERROR | XPASS)
			log=${trs%.trs}.log
			echo "=== $res: ${log#./}"
			# What failed first, so that a reader who sees only the
			# head of a long log still learns which test and why.
			grep -E -A1 '^\[(FAIL|----)\] .*(Assert|[Ff]ail|[Tt]imed? ?out|[Cc]rash|[Ss]ignal)|^\[FAIL\]|ERROR: (Address|Leak|Undefined)Sanitizer|runtime error:|^FAIL:' "$log" |
				head -n 40 | sed 's/^/| /'
			echo "--- the whole log"
			cat "$log"
			;;
		esac
	done
}

step "dependencies (contrib/deps.sh)"
run deps contrib/deps.sh || finish

step "MCP SDK client for the MCP tests (npm ci in tests/mcp)"
# npm ci reinstalls from scratch: skip it while node_modules matches the
# lock file.  Without the npm registry it fails here, and the MCP tests,
# which must run, fail too.
if [ tests/mcp/node_modules/.package-lock.json -nt tests/mcp/package-lock.json ]; then
	echo "test: tests/mcp/node_modules is up to date"
else
	run npm-ci npm ci --prefix tests/mcp --no-audit --no-fund ||
		echo "test: npm could not install tests/mcp's packages from the npm registry" >&2
fi

step "format: clang-format --dry-run --Werror (.clang-format)"
format_check() {
	local files
	if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
		files=$(git ls-files '*.c' '*.h')
	else
		files=$(find src include tests bench -name '*.[ch]' 2>/dev/null)
	fi
	# One line per place, so the log names what to run clang-format on.
	# shellcheck disable=SC2086
	clang-format --dry-run --Werror $files
}
run format format_check || true

step "configure --enable-werror"
if [ ! -x configure ] || [ configure.ac -nt configure ]; then
	run autoreconf autoreconf -fi || finish
fi
if [ -f config.status ] && ./config.status --config | grep -q -- '--enable-werror' &&
	[ config.status -nt configure ]; then
	echo "test: already configured with --enable-werror"
else
	had_build=
	[ ! -f Makefile ] || had_build=1
	run configure ./configure --enable-werror || finish
	# Objects built with other flags (without -Werror, say) would not be
	# rebuilt by make, and their warnings would go unseen.
	[ -z "$had_build" ] || run clean make clean || finish
fi

step "make -j$jobs"
run build make -j"$jobs" || finish

step "engines (contrib/engines.sh start)"
run engines contrib/engines.sh start || finish
engines_env=$(contrib/engines.sh env) || finish
eval "$engines_env"
echo "$engines_env"

step "offline image into both engines (images/offline/build.sh)"
run image images/offline/build.sh "$HUTCH_TEST_DOCKER" "$HUTCH_TEST_PODMAN" || finish

# The Debian recipe, with the packages its test needs only (python3 and
# pytest: a few minutes from Debian's archive; the root filesystem is kept
# in /var/cache/hutch for the next run), for image::debian_recipe_runs_pytest.
step "Debian image into both engines (images/debian/build.sh, a short list)"
# A failure is recorded and the run goes on: the test then fails on its
# own, the others still run.
run debian-image env HUTCH="$top/hutch" images/debian/build.sh \
	--packages python3,python3-pytest,bash --name hutch-debian-ci:latest \
	"$HUTCH_TEST_DOCKER" "$HUTCH_TEST_PODMAN"
export HUTCH_TEST_DEBIAN_IMAGE=hutch-debian-ci:latest

step "make -j$jobs check (HUTCH_MUST_RUN=1)"
rm -f test-suite.log
check_stamp=$(mktemp)
trap 'rm -f "$check_stamp"' EXIT
if ! run check env HUTCH_MUST_RUN=1 timeout --kill-after=30 \
	"${HUTCH_CHECK_TIMEOUT:-2700}" make -j"$jobs" check; then
	show_failures
fi

step "valgrind: the unit tests and the fuzz corpora (memcheck, definite leaks)"
# Criterion runs each test in a child it execs, which valgrind follows
# (but not into the static in-container agent some tests start); with -q
# valgrind writes only errors, so any non-empty log is a failure.
# editmatch/large_inputs_are_bounded runs the matcher to its work budget,
# which valgrind would take minutes for; the seccomp tests install the
# agent's filter, which then judges valgrind's own system calls, not the
# program's (and valgrind cannot run the i386 calls they make).
# chan/a_run_of_this_agent_* needs /proc/self/exe to be the test program,
# which under valgrind it is not (the channel then execs the agent, as it
# must for another program); the plain and sanitizer runs have it.
valgrind_unit() {
	local logs=$top/valgrind-logs t bad
	rm -rf "$logs"
	mkdir -p "$logs"
	for t in tests/unit/test-units tests/unit/test-fake-engine tests/unit/test-mcp \
		tests/fuzz/replay; do
		[ -x "$t" ] || { echo "test: $t was not built" >&2; return 1; }
		echo "valgrind: $t"
		set -- "$t"
		[ "$t" = tests/fuzz/replay ] || set -- "$t" -j"$jobs" \
			--filter '!(editmatch/large_inputs_are_bounded|seccomp/*|fake/channel_*|chan/a_run_of_this_agent_*)'
		timeout --kill-after=30 "${HUTCH_VALGRIND_TIMEOUT:-900}" \
			./libtool --mode=execute valgrind -q --trace-children=yes \
			--trace-children-skip='*/hutch-agent' --log-file="$logs/%p.log" \
			--leak-check=full --errors-for-leak-kinds=definite \
			--suppressions="$top/tests/valgrind.supp" "$@" \
			>"$logs/${t##*/}.out" 2>&1 ||
			{ tail -n 20 "$logs/${t##*/}.out"; return 1; }
		tail -n 1 "$logs/${t##*/}.out"
	done
	# Valgrind 3.19 does not know openat2() (syscall 437): it answers
	# ENOSYS, which src/lib/beneath.c handles by its one-component walk,
	# and warns in five lines.  Nor pidfd_open() (434): without it the
	# agent's channel cannot hold PID 1's pid, so hutch takes the engine's
	# exec, which is right, and the fake engine's channel tests (which
	# want the channel) are left to the plain and sanitizer runs.  Those
	# lines alone are no error.
	for t in "$logs"/[0-9]*.log; do
		[ -f "$t" ] || continue
		awk '/WARNING: unhandled amd64-linux syscall: 43[47]$/ { skip = 4; next }
			skip > 0 { skip--; next } { print }' "$t" >"$t.tmp" && mv "$t.tmp" "$t"
	done
	bad=$(find "$logs" -name '[0-9]*.log' -size +0)
	[ -z "$bad" ] || { cat $bad; return 1; }
}
run valgrind valgrind_unit

step "sanitizers: build-san/, ASan+UBSan, make -j$jobs check (HUTCH_MUST_RUN=1)"
# The whole suite again (unit, fuzz corpora, integration and MCP tests on
# both engines) on a build with --enable-sanitizers, out of tree: the
# distribution's files (make distdir) configured in build-san/build.  The
# first error stops the process that made it, which fails its test.
sanitizers() (
	rm -rf build-san && mkdir build-san &&
	make distdir distdir="$top/build-san/src" >/dev/null &&
	{ [ ! -d tests/mcp/node_modules ] ||
		ln -s "$top/tests/mcp/node_modules" build-san/src/tests/mcp/node_modules; } &&
	mkdir build-san/build &&
	cd build-san/build &&
	../src/configure --enable-sanitizers --enable-werror >configure.out &&
	make -j"$jobs" >make.out &&
	env HUTCH_MUST_RUN=1 \
		ASAN_OPTIONS=halt_on_error=1:detect_leaks=1:abort_on_error=0 \
		LSAN_OPTIONS=suppressions="$top/tests/lsan.supp" \
		UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
		timeout --kill-after=30 "${HUTCH_CHECK_TIMEOUT:-2700}" make -j"$jobs" check
)
if ! run sanitizers sanitizers; then
	(cd build-san/build 2>/dev/null && show_failures)
fi

if [ -n "$distcheck" ]; then
	step "make distcheck (integration tests skip: they just ran)"
	run distcheck env -u HUTCH_TEST_DOCKER -u HUTCH_TEST_PODMAN \
		-u HUTCH_TEST_DOCKER_TLS -u HUTCH_TEST_DOCKER_CERTS \
		-u HUTCH_MUST_RUN -u CI timeout --kill-after=30 \
		"${HUTCH_DISTCHECK_TIMEOUT:-1800}" make -j"$jobs" distcheck
fi

finish
