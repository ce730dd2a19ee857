#!/usr/bin/env bash
# First steps on a fresh Debian or Ubuntu machine (as root, or with sudo):
#
#   contrib/setup.sh
#
# installs what is missing, builds and installs hutch into /usr/local, makes
# a container engine available, imports the offline image into it and runs a
# short demo session.  Safe to run again: every step checks before it acts.
#
#   contrib/setup.sh --image debian
#
# also builds hutch-debian:bookworm, a coding image (python3, pip, venv,
# pytest, git, build-essential, ripgrep...) made from Debian's package
# archive with mmdebstrap, no registry (hutch-image-debian --help), and
# imports it; use it with --image hutch-debian:bookworm.
#
# The engine: the first that answers /_ping of $HUTCH_ENGINE, $DOCKER_HOST,
# $CONTAINER_HOST, /var/run/docker.sock, /run/podman/podman.sock.  With none,
# Podman's API service is started on /run/podman/podman.sock, in the
# background (log: /var/log/hutch-podman.log); it runs until stopped or the
# machine reboots (run this script again to bring it back).
set -euo pipefail

# Read, not shifted: the same arguments go to sudo below.
extra_image=
args=("$@")
for ((i = 0; i < ${#args[@]}; i++)); do
	case ${args[i]} in
	--image)
		[ "${args[i + 1]:-}" = debian ] || { echo "setup: --image takes 'debian'" >&2; exit 2; }
		extra_image=debian
		i=$((i + 1))
		;;
	-h | --help)
		sed -n '2,/^set /{/^#/s/^# \{0,1\}//p}' "$0"
		exit 0
		;;
	*)
		echo "setup: unknown option '${args[i]}' (see --help)" >&2
		exit 2
		;;
	esac
done

if [ "$(id -u)" -ne 0 ]; then
	command -v sudo >/dev/null ||
		{ echo "setup: run as root (packages, /usr/local, a rootful engine)" >&2; exit 1; }
	exec sudo --preserve-env=HUTCH_ENGINE,DOCKER_HOST,CONTAINER_HOST "$0" "$@"
fi

top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin:$PATH
log=${TMPDIR:-/tmp}/hutch-setup.log
: >"$log"
PODMAN_SOCK=/run/podman/podman.sock
n=0

step() {
	n=$((n + 1))
	printf 'setup: [%d] %s\n' "$n" "$*"
}
# quiet CMD...: output to the log; on failure show its end and stop.
quiet() {
	if ! "$@" >>"$log" 2>&1; then
		echo "setup: '$*' failed; the end of $log:" >&2
		tail -n 30 "$log" >&2
		exit 1
	fi
}

ping_url() {
	local url=$1 answer
	case $url in
	unix://*) answer=$(curl -sS --max-time 3 --unix-socket "${url#unix://}" http://localhost/_ping 2>/dev/null) ;;
	/*) answer=$(curl -sS --max-time 3 --unix-socket "$url" http://localhost/_ping 2>/dev/null) ;;
	tcp://*) answer=$(curl -sS --max-time 3 "http://${url#tcp://}/_ping" 2>/dev/null) ;;
	*) return 1 ;;
	esac
	[ "$answer" = OK ]
}

step "dependencies (contrib/deps.sh)"
quiet contrib/deps.sh

step "build: autoreconf, configure, make -j2 (log: $log)"
if [ ! -x configure ] || [ configure.ac -nt configure ] || [ Makefile.am -nt configure ]; then
	quiet autoreconf -fi
fi
if [ ! -f config.status ] || [ configure -nt config.status ]; then
	quiet ./configure
fi
quiet make -j2

step "install into /usr/local (make install, ldconfig)"
quiet make install
quiet ldconfig
command -v hutch >/dev/null || { echo "setup: hutch is not on PATH after make install" >&2; exit 1; }

step "container engine"
engine=
for url in "${HUTCH_ENGINE:-}" "${DOCKER_HOST:-}" "${CONTAINER_HOST:-}" \
	unix:///var/run/docker.sock "unix://$PODMAN_SOCK"; do
	if [ -n "$url" ] && ping_url "$url"; then
		engine=$url
		break
	fi
done
if [ -n "$engine" ]; then
	echo "setup:     using the engine at $engine"
else
	# crun, Podman's default runtime, fails on cgroup v1/hybrid hosts and
	# systemd may be absent: runc and cgroupfs work everywhere.  Podman
	# lowers its own RLIMIT_NPROC to 32768 and hard NOFILE limits can be
	# low: containers asking for more than these cannot start.
	conf='# written by hutch contrib/setup.sh
[containers]
default_ulimits = ["nofile=20000:20000", "nproc=32768:32768"]
init_path = "/usr/bin/catatonit"

[engine]
runtime = "runc"
cgroup_manager = "cgroupfs"'
	if [ ! -e /etc/containers/containers.conf ]; then
		mkdir -p /etc/containers
		printf '%s\n' "$conf" >/etc/containers/containers.conf
		echo "setup:     wrote /etc/containers/containers.conf"
		unset CONTAINERS_CONF
	elif grep -q 'written by hutch' /etc/containers/containers.conf; then
		unset CONTAINERS_CONF
	else
		# The machine has its own: leave it, use hutch's file instead.
		mkdir -p /etc/hutch
		printf '%s\n' "$conf" >/etc/hutch/containers.conf
		export CONTAINERS_CONF=/etc/hutch/containers.conf
		echo "setup:     /etc/containers/containers.conf exists; the service uses /etc/hutch/containers.conf"
	fi
	mkdir -p "$(dirname "$PODMAN_SOCK")"
	rm -f "$PODMAN_SOCK"
	(
		# Keep none of this script's descriptors open in the service.
		for fd in /proc/self/fd/*; do
			fd=${fd##*/}
			[ "$fd" -le 2 ] || eval "exec $fd>&-" 2>/dev/null || true
		done
		exec nohup setsid podman system service --time=0 "unix://$PODMAN_SOCK" \
			>>/var/log/hutch-podman.log 2>&1 </dev/null
	) &
	pid=$!
	for ((i = 0; i < 600; i++)); do
		ping_url "unix://$PODMAN_SOCK" && break
		if [ ! -d "/proc/$pid" ]; then
			tail -n 15 /var/log/hutch-podman.log >&2
			echo "setup: podman system service exited; see /var/log/hutch-podman.log" >&2
			exit 1
		fi
		sleep 0.1
	done
	ping_url "unix://$PODMAN_SOCK" || {
		echo "setup: podman did not answer on $PODMAN_SOCK within 60s; see /var/log/hutch-podman.log" >&2
		exit 1
	}
	engine=unix://$PODMAN_SOCK
	echo "setup:     started Podman's API service on $engine (pid $pid, log /var/log/hutch-podman.log)"
fi

step "offline image hutch-offline:latest (hutch-image-offline)"
hutch-image-offline "$engine" | sed 's/^/setup:     /'
if [ "$extra_image" = debian ]; then
	step "coding image hutch-debian:bookworm (hutch-image-debian; mmdebstrap, log: $log)"
	quiet hutch-image-debian "$engine"
	grep '^hutch-image-debian:' "$log" | tail -n 2 | sed 's/^/setup:     /'
fi

# The demo runs hutch as a newcomer would, finding the engine itself
# (HUTCH_ENGINE, DOCKER_HOST, CONTAINER_HOST, then the usual sockets);
# --engine only when that would land elsewhere than the engine found above.
hutch=(hutch)
first_var=${HUTCH_ENGINE:-${DOCKER_HOST:-${CONTAINER_HOST:-}}}
if [ -n "$first_var" ]; then
	[ "$first_var" = "$engine" ] || hutch+=(--engine "$engine")
elif [ "$engine" != unix:///var/run/docker.sock ] && [ -S /var/run/docker.sock ]; then
	hutch+=(--engine "$engine")
fi

step "demo: hutch exec demo -- uname -a"
"${hutch[@]}" exec demo -- uname -a
step "demo: hutch sh demo 'echo hello from \$(hostname) > note.txt; cat note.txt'"
# shellcheck disable=SC2016 # $(hostname) runs in the sandbox
"${hutch[@]}" sh demo 'echo hello from $(hostname) > note.txt; cat note.txt'
step "demo: hutch sessions"
"${hutch[@]}" sessions
step "demo: hutch rm demo"
"${hutch[@]}" rm demo

echo "setup: done.  Try 'hutch doctor', 'hutch --help', 'man hutch'; run the tests with contrib/test.sh"
