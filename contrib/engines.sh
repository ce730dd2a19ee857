#!/usr/bin/env bash
# Private container engines for a test run: a Docker Engine and a Podman API
# service that nothing else on the machine uses.
#
#   contrib/engines.sh start    start both (reuses running ones), wait for /_ping
#   contrib/engines.sh stop     remove their containers and volumes, stop both
#   contrib/engines.sh restart-docker
#                               stop and start Docker only (e.g. to add the TLS
#                               listener to a daemon an older version started)
#   contrib/engines.sh status   say what runs; exit 0 only if both answer
#   contrib/engines.sh env      print the HUTCH_TEST_* exports for the tests
#
# Everything lives under ${HUTCH_ENGINES_DIR:-/var/tmp/hutch-engines}:
#   docker.sock podman.sock       the API sockets
#   docker.log podman.log         daemon logs (previous run: *.log.old)
#   docker/  podman/              data, exec/run state, pid files
#   containers.conf storage.conf  Podman's whole configuration
#   daemon.json                   Docker's (empty) configuration
#   tls/                          a private CA, the Docker daemon's server
#                                 certificate, and tls/client/ (ca.pem,
#                                 cert.pem, key.pem: a DOCKER_CERT_PATH)
#
# Docker also listens on tcp://127.0.0.1:${HUTCH_ENGINES_TLS_PORT:-23760}
# with --tlsverify (only clients with a certificate of the private CA get
# in), for the tests of hutch's TLS support.
# Neither daemon reads the machine's /etc/docker or /etc/containers settings,
# so a system engine, if any, is left alone and cannot leak its settings in.
#
# HUTCH_ENGINES_STORAGE=overlay|vfs forces a storage driver; by default
# overlay is used when the state directory's filesystem can host it.
set -euo pipefail

DIR=${HUTCH_ENGINES_DIR:-/var/tmp/hutch-engines}
case $DIR in /*) ;; *) DIR=$PWD/$DIR ;; esac # daemons run from /
WAIT=${HUTCH_ENGINES_WAIT:-60}
DOCKER_SOCK=$DIR/docker.sock
PODMAN_SOCK=$DIR/podman.sock
TLS_DIR=$DIR/tls
TLS_PORT=${HUTCH_ENGINES_TLS_PORT:-23760}
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin:$PATH

# Podman takes its configuration and storage settings only from these
# files, not from /etc/containers.
export CONTAINERS_CONF=$DIR/containers.conf
export CONTAINERS_STORAGE_CONF=$DIR/storage.conf

say() { printf 'engines: %s\n' "$*"; }
die() { printf 'engines: %s\n' "$*" >&2; exit 1; }

ping_ok() {
	[ -S "$1" ] && [ "$(curl -sS --max-time 3 --unix-socket "$1" \
		http://localhost/_ping 2>/dev/null)" = OK ]
}

# pid_alive PIDFILE NEEDLE: the pid in PIDFILE runs and its command line
# contains NEEDLE (so a recycled pid is never mistaken for our daemon).
pid_alive() {
	local pid
	pid=$(cat "$1" 2>/dev/null) || return 1
	[ -n "$pid" ] && [ -r "/proc/$pid/cmdline" ] &&
		tr '\0' ' ' <"/proc/$pid/cmdline" | grep -qF -- "$2"
}

pid_of() { cat "$1" 2>/dev/null || true; }

# Overlay needs a filesystem that can hold an upper dir (not overlayfs
# itself, not some network filesystems); vfs always works but copies the
# whole image into every new container.  The choice is kept in
# storage-driver, so images stay usable across restarts.
storage_driver() {
	if [ -n "${HUTCH_ENGINES_STORAGE:-}" ]; then
		echo "$HUTCH_ENGINES_STORAGE"
		return
	fi
	if [ -s "$DIR/storage-driver" ]; then
		cat "$DIR/storage-driver"
		return
	fi
	local t d=vfs
	t=$(mktemp -d "$DIR/.overlay-probe.XXXXXX")
	mkdir "$t/l" "$t/u" "$t/w" "$t/m"
	if mount -t overlay overlay \
		-o "lowerdir=$t/l,upperdir=$t/u,workdir=$t/w" "$t/m" 2>/dev/null; then
		umount "$t/m"
		d=overlay
	fi
	rm -rf "$t"
	echo "$d" >"$DIR/storage-driver"
	echo "$d"
}

# Rotate the log and start "$@" in its own session, detached from this
# script, so the daemon outlives it.  Prints the daemon's pid.
launch() {
	local log=$1
	shift
	[ ! -f "$log" ] || mv -f "$log" "$log.old"
	(
		# Hold nothing of ours: not the start/stop lock on fd 9, not a
		# CI runner's pipes, which would stay open for the daemon's life.
		for fd in /proc/self/fd/*; do
			fd=${fd##*/}
			[ "$fd" -le 2 ] || eval "exec $fd>&-" 2>/dev/null || true
		done
		# Not in the caller's directory either: a checkout removed while
		# the daemon runs would leave Podman's conmon without a working
		# directory, and every container start would fail.
		cd / || exit 1
		# A background job of a non-interactive shell is no process
		# group leader, so setsid execs in place: $! is the daemon.
		exec nohup setsid "$@" >"$log" 2>&1 </dev/null
	) &
	echo $!
}

write_if_changed() { # FILE: content on stdin
	local new
	new=$(cat)
	[ -f "$1" ] && [ "$(cat "$1")" = "$new" ] && return 0
	printf '%s\n' "$new" >"$1"
}

# A CA, a server certificate for 127.0.0.1 and localhost, and a client
# certificate, made once (ECDSA P-256, ten years): a test run never needs
# the network or a real CA.
make_certs() {
	local d=$TLS_DIR
	[ -s "$d/server-cert.pem" ] && [ -s "$d/client/key.pem" ] && return 0
	command -v openssl >/dev/null || die "openssl not found: run contrib/deps.sh"
	rm -rf "$d"
	mkdir -p "$d/client"
	chmod 700 "$d"
	(
		cd "$d"
		key() { openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1"; }
		key ca-key.pem
		openssl req -x509 -new -key ca-key.pem -days 3650 -subj "/CN=hutch test CA" \
			-addext basicConstraints=critical,CA:TRUE \
			-addext keyUsage=critical,keyCertSign,cRLSign -out ca.pem
		key server-key.pem
		openssl req -new -key server-key.pem -subj /CN=localhost -out server.csr
		printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n' >server.ext
		openssl x509 -req -in server.csr -CA ca.pem -CAkey ca-key.pem -CAcreateserial \
			-days 3650 -extfile server.ext -out server-cert.pem
		key client/key.pem
		openssl req -new -key client/key.pem -subj /CN=hutch-test-client -out client.csr
		printf 'extendedKeyUsage=clientAuth\n' >client.ext
		openssl x509 -req -in client.csr -CA ca.pem -CAkey ca-key.pem -CAcreateserial \
			-days 3650 -extfile client.ext -out client/cert.pem
		cp ca.pem client/ca.pem
		rm -f server.csr client.csr server.ext client.ext
	) >"$DIR/tls.log" 2>&1 || { cat "$DIR/tls.log" >&2; die "could not make the TLS certificates; see $DIR/tls.log"; }
	say "tls: made a CA and certificates in $d"
}

start_docker() {
	if ping_ok "$DOCKER_SOCK"; then
		if tr '\0' ' ' <"/proc/$(pid_of "$DIR/docker/launch.pid")/cmdline" 2>/dev/null |
			grep -qF -- "--tlsverify"; then
			say "docker: already running (pid $(pid_of "$DIR/docker/launch.pid"))"
			return
		fi
		# Started by an older engines.sh: the tests need the TLS
		# listener, so start it again with one.
		say "docker: running without the TLS listener on 127.0.0.1:$TLS_PORT; restarting it"
		stop_daemon docker "$DIR/docker/launch.pid" "$DOCKER_SOCK"
	fi
	if pid_alive "$DIR/docker/launch.pid" "$DOCKER_SOCK"; then
		say "docker: starting (pid $(pid_of "$DIR/docker/launch.pid"))"
		return
	fi
	local driver
	driver=$(storage_driver)
	[ "$driver" = overlay ] && driver=overlay2
	mkdir -p "$DIR/docker"
	make_certs
	rm -f "$DOCKER_SOCK" "$DIR/docker/pid"
	echo '{}' | write_if_changed "$DIR/daemon.json"
	local note=
	# dockerd 20.10 uses a system containerd whenever its socket exists
	# and manages its own otherwise; the private namespaces keep our
	# containers apart from a system dockerd's in the first case.
	[ ! -e /run/containerd/containerd.sock ] ||
		note=" (sharing the system containerd, namespace hutch)"
	launch "$DIR/docker.log" dockerd \
		--host "unix://$DOCKER_SOCK" \
		--host "tcp://127.0.0.1:$TLS_PORT" --tlsverify \
		--tlscacert "$TLS_DIR/ca.pem" --tlscert "$TLS_DIR/server-cert.pem" \
		--tlskey "$TLS_DIR/server-key.pem" \
		--config-file "$DIR/daemon.json" \
		--data-root "$DIR/docker/data" \
		--exec-root "$DIR/docker/exec" \
		--pidfile "$DIR/docker/pid" \
		--storage-driver "$driver" \
		--bridge=none --iptables=false --ip6tables=false \
		--userland-proxy=false \
		--containerd-namespace hutch \
		--containerd-plugins-namespace hutch-plugins \
		--shutdown-timeout 3 \
		--log-level warn >"$DIR/docker/launch.pid"
	say "docker: started dockerd, storage $driver, pid $(pid_of "$DIR/docker/launch.pid")$note"
}

start_podman() {
	if ping_ok "$PODMAN_SOCK"; then
		say "podman: already running (pid $(pid_of "$DIR/podman/launch.pid"))"
		return
	fi
	if pid_alive "$DIR/podman/launch.pid" "$PODMAN_SOCK"; then
		say "podman: starting (pid $(pid_of "$DIR/podman/launch.pid"))"
		return
	fi
	local driver
	driver=$(storage_driver)
	mkdir -p "$DIR/podman"
	rm -f "$PODMAN_SOCK"
	# run/ and tmp/ hold per-boot state (mount counts, exit files, locks)
	# and would be a tmpfs on a normal install: after a reboot they are
	# stale, so start them afresh.
	local boot
	boot=$(cat /proc/sys/kernel/random/boot_id)
	if [ "$(cat "$DIR/podman/boot_id" 2>/dev/null)" != "$boot" ]; then
		rm -rf "$DIR/podman/run" "$DIR/podman/tmp"
		echo "$boot" >"$DIR/podman/boot_id"
	fi
	# crun (Podman's default) fails on this cgroup v1 + empty v2 hybrid
	# layout, and systemd may not be there: runc and cgroupfs.
	# Podman lowers its own RLIMIT_NPROC to 32768 and the hard NOFILE may be
	# as low as 20000; a container asking for more cannot start.
	# catatonit is HostConfig.Init's init.  File locks under tmp/ instead of
	# the machine-wide /libpod_lock shared memory, which a system Podman
	# would share (and free on its own refresh).
	write_if_changed "$CONTAINERS_CONF" <<EOF
# written by hutch contrib/engines.sh
[containers]
default_ulimits = ["nofile=20000:20000", "nproc=32768:32768"]
init_path = "/usr/bin/catatonit"
log_driver = "k8s-file"

[engine]
runtime = "runc"
cgroup_manager = "cgroupfs"
events_logger = "file"
lock_type = "file"
tmp_dir = "$DIR/podman/tmp"
EOF
	write_if_changed "$CONTAINERS_STORAGE_CONF" <<EOF
# written by hutch contrib/engines.sh
[storage]
driver = "$driver"
graphroot = "$DIR/podman/root"
runroot = "$DIR/podman/run"
EOF
	# Podman 4.3 leaves every tar uploaded to POST /images/create
	# ("api_load.tar*") in its TMPDIR: keep them here, and drop them.
	rm -rf "$DIR/podman/upload"
	mkdir -p "$DIR/podman/upload"
	launch "$DIR/podman.log" env TMPDIR="$DIR/podman/upload" \
		podman system service --time=0 \
		"unix://$PODMAN_SOCK" >"$DIR/podman/launch.pid"
	say "podman: started podman system service, storage $driver, pid $(pid_of "$DIR/podman/launch.pid")"
}

# wait_ready NAME SOCK PIDFILE LOG
wait_ready() {
	local name=$1 sock=$2 pidfile=$3 log=$4 i
	for ((i = 0; i < WAIT * 10; i++)); do
		ping_ok "$sock" && return 0
		if ! pid_alive "$pidfile" "$sock"; then
			tail -n 15 "$log" >&2 || true
			die "$name exited before answering /_ping on $sock; see $log"
		fi
		sleep 0.1
	done
	tail -n 15 "$log" >&2 || true
	die "$name did not answer /_ping on $sock within ${WAIT}s; see $log"
}

# stop_daemon NAME PIDFILE NEEDLE
stop_daemon() {
	local name=$1 pidfile=$2 needle=$3 pid i
	if ! pid_alive "$pidfile" "$needle"; then
		say "$name: not running"
		rm -f "$pidfile"
		return
	fi
	pid=$(cat "$pidfile")
	kill -TERM "$pid"
	for ((i = 0; i < 300; i++)); do
		[ -d "/proc/$pid" ] || break
		sleep 0.1
	done
	if [ -d "/proc/$pid" ]; then
		say "$name: pid $pid ignored SIGTERM for 30s, killing it"
		kill -KILL "$pid" 2>/dev/null || true
		while [ -d "/proc/$pid" ]; do sleep 0.1; done
	fi
	rm -f "$pidfile"
	say "$name: stopped (pid $pid)"
}

cmd_start() {
	[ "$(id -u)" -eq 0 ] || die "must run as root (rootful engines)"
	command -v dockerd >/dev/null || die "dockerd not found: run contrib/deps.sh"
	command -v podman >/dev/null || die "podman not found: run contrib/deps.sh"
	mkdir -p "$DIR"
	start_docker
	start_podman
	wait_ready docker "$DOCKER_SOCK" "$DIR/docker/launch.pid" "$DIR/docker.log"
	wait_ready podman "$PODMAN_SOCK" "$DIR/podman/launch.pid" "$DIR/podman.log"
	say "ready: $DOCKER_SOCK $PODMAN_SOCK"
}

# remove_sessions SOCK: force-remove every container and then every unused
# volume (sessions' workspaces) of a running engine.  The test run owns them
# all, and a container whose PID 1 ignores SIGTERM would hold dockerd's
# shutdown for its whole stop timeout (10 s).  Images stay.
remove_sessions() {
	ping_ok "$1" || return 0
	curl -sS --max-time 10 --unix-socket "$1" \
		'http://localhost/v1.41/containers/json?all=1' 2>/dev/null |
		grep -o '"Id": \?"[0-9a-f]*"' | grep -o '[0-9a-f]\{64\}' |
		xargs -r -P 8 -I{} curl -sS -o /dev/null --max-time 30 \
			--unix-socket "$1" -X DELETE \
			'http://localhost/v1.41/containers/{}?force=1&v=1' || true
	curl -sS -o /dev/null --max-time 30 --unix-socket "$1" -X POST \
		http://localhost/v1.41/volumes/prune || true
}

cmd_stop() {
	remove_sessions "$DOCKER_SOCK"
	remove_sessions "$PODMAN_SOCK"
	# dockerd stops its own containerd on SIGTERM.
	stop_daemon docker "$DIR/docker/launch.pid" "$DOCKER_SOCK"
	stop_daemon podman "$DIR/podman/launch.pid" "$PODMAN_SOCK"
	rm -rf "$DIR/podman/upload"
	# Podman's containers run under conmon and outlive the service; the
	# CLI removes any that the API could not.
	if [ -f "$CONTAINERS_CONF" ] && [ -d "$DIR/podman/root" ]; then
		podman rm --all --force --time 0 >/dev/null 2>>"$DIR/podman.log" ||
			say "podman: could not remove all containers; see $DIR/podman.log"
	fi
}

cmd_status() {
	local rc=0 name sock
	for name in docker podman; do
		sock=$DIR/$name.sock
		if ping_ok "$sock"; then
			say "$name: running, pid $(pid_of "$DIR/$name/launch.pid"), unix://$sock"
		elif pid_alive "$DIR/$name/launch.pid" "$sock"; then
			say "$name: pid $(pid_of "$DIR/$name/launch.pid") runs but does not answer on $sock; see $DIR/$name.log"
			rc=1
		else
			say "$name: not running"
			rc=1
		fi
	done
	return $rc
}

cmd_restart_docker() {
	[ "$(id -u)" -eq 0 ] || die "must run as root (rootful engines)"
	stop_daemon docker "$DIR/docker/launch.pid" "$DOCKER_SOCK"
	start_docker
	wait_ready docker "$DOCKER_SOCK" "$DIR/docker/launch.pid" "$DIR/docker.log"
}

cmd_env() {
	printf 'export HUTCH_TEST_DOCKER=unix://%s\n' "$DOCKER_SOCK"
	printf 'export HUTCH_TEST_PODMAN=unix://%s\n' "$PODMAN_SOCK"
	# Docker's TLS listener and a DOCKER_CERT_PATH for it (tls.test).
	printf 'export HUTCH_TEST_DOCKER_TLS=tcp://127.0.0.1:%s\n' "$TLS_PORT"
	printf 'export HUTCH_TEST_DOCKER_CERTS=%s\n' "$TLS_DIR/client"
}

case "${1:-}" in
start | stop | restart-docker)
	mkdir -p "$DIR"
	# One start/stop at a time per state directory.
	exec 9>"$DIR/.lock"
	flock 9
	"cmd_${1//-/_}"
	;;
status | env) "cmd_$1" ;;
*)
	echo "usage: $0 start|stop|restart-docker|status|env" >&2
	exit 2
	;;
esac
