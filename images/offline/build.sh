#!/usr/bin/env bash
# Build hutch's default image, hutch-offline:latest, without any registry:
# Debian's static busybox, one symlink per applet, root and an unprivileged
# "sandbox" user (1000:1000, home /workspace), imported into each engine
# through the REST API (POST /images/create?fromSrc=-).
#
#   images/offline/build.sh [ENGINE_URL...]
#
# ENGINE_URL is unix:///path/to.sock (or just /path/to.sock) or
# tcp://host:port.  Without one: $HUTCH_ENGINE, else /var/run/docker.sock,
# else /run/podman/podman.sock.
#
# It also imports hutch-bare:latest, an image with nothing in it but empty
# /tmp and /workspace directories (no shell, no libc, no /etc), which the
# tests use to show that hutch's file tools need nothing from the image.
#
# An engine that already holds an image whose io.hutch.image.content label
# matches (a hash of busybox and of this script) is left alone.
set -euo pipefail
export LC_ALL=C

REPO=hutch-offline
TAG=latest
IMAGE=$REPO:$TAG
API=/v1.41
BUSYBOX=${HUTCH_BUSYBOX:-/bin/busybox}
LABEL=io.hutch.image.content

say() { printf 'offline-image: %s\n' "$*"; }
die() { printf 'offline-image: %s\n' "$*" >&2; exit 1; }

engines=("$@")
if [ ${#engines[@]} -eq 0 ]; then
	if [ -n "${HUTCH_ENGINE:-}" ]; then
		engines=("$HUTCH_ENGINE")
	elif [ -S /var/run/docker.sock ]; then
		engines=(unix:///var/run/docker.sock)
	elif [ -S /run/podman/podman.sock ]; then
		engines=(unix:///run/podman/podman.sock)
	else
		die "no engine given and none found (HUTCH_ENGINE, /var/run/docker.sock, /run/podman/podman.sock)"
	fi
fi

[ -x "$BUSYBOX" ] || die "$BUSYBOX not found: install busybox-static (contrib/deps.sh)"
# The image has no libc: a dynamically linked busybox would not run.
if ldd "$BUSYBOX" >/dev/null 2>&1; then
	die "$BUSYBOX is dynamically linked: install busybox-static, not busybox"
fi

content=$(cat "$BUSYBOX" "${BASH_SOURCE[0]}" | sha256sum | cut -c1-32)

# api URL METHOD PATH [curl args...]: sets $status and $body.
api() {
	local url=$1 method=$2 path=$3 out
	shift 3
	local -a conn
	case "$url" in
	unix://*) conn=(--unix-socket "${url#unix://}" "http://localhost$path") ;;
	/*) conn=(--unix-socket "$url" "http://localhost$path") ;;
	tcp://*) conn=("http://${url#tcp://}$path") ;;
	http://* | https://*) conn=("${url%/}$path") ;;
	*) die "$url: not an engine URL (unix:///path or tcp://host:port)" ;;
	esac
	out=$(curl -sS --max-time 120 -X "$method" -w '\n%{http_code}' "$@" "${conn[@]}") ||
		die "$url: cannot reach the engine ($method $path)"
	status=${out##*$'\n'}
	body=${out%$'\n'*}
}

urlencode() {
	local s=$1 out='' c i
	for ((i = 0; i < ${#s}; i++)); do
		c=${s:i:1}
		case $c in
		[a-zA-Z0-9._~-]) out+=$c ;;
		*) out+=$(printf '%%%02X' "'$c") ;;
		esac
	done
	printf '%s' "$out"
}

image_id() { # the "Id" in $body
	grep -o '"Id": \?"[^"]*"' <<<"$body" | head -1 | sed 's/.*"\([^"]*\)"$/\1/'
}

# has_current_image URL: the engine's hutch-offline:latest carries our label.
has_current_image() {
	api "$1" GET "$API/images/$IMAGE/json"
	[ "$status" = 200 ] &&
		grep -Eq "\"$LABEL\": ?\"$content\"" <<<"$body"
}

tarball=
build_tarball() {
	[ -z "$tarball" ] || return 0
	local work root a
	work=$(mktemp -d "${TMPDIR:-/tmp}/hutch-offline.XXXXXX")
	# shellcheck disable=SC2064 # $work is local: expand it now
	trap "rm -rf '$work'" EXIT
	root=$work/rootfs
	mkdir -p "$root"/{bin,etc,dev,proc,sys,tmp,root,workspace,usr/local/bin}
	cp "$BUSYBOX" "$root/bin/busybox"
	chmod 755 "$root/bin/busybox"
	# Run the copy: busybox picks its applet from argv[0]'s name.
	local applets
	if ! applets=$("$root/bin/busybox" --list) || ! grep -qx sh <<<"$applets"; then
		die "$BUSYBOX --list gave no applets"
	fi
	for a in $applets; do
		[ "$a" = busybox ] || ln -s busybox "$root/bin/$a"
	done
	# One directory of programs; the usual other paths lead there, so
	# "#!/usr/bin/env python3"-style lines and /sbin/... work too.
	ln -s ../bin "$root/usr/bin"
	ln -s bin "$root/sbin"
	ln -s ../bin "$root/usr/sbin"
	cat >"$root/etc/passwd" <<-'EOF'
		root:x:0:0:root:/root:/bin/sh
		sandbox:x:1000:1000:sandbox:/workspace:/bin/sh
		nobody:x:65534:65534:nobody:/nonexistent:/bin/false
	EOF
	cat >"$root/etc/group" <<-'EOF'
		root:x:0:
		sandbox:x:1000:
		nogroup:x:65534:
	EOF
	chmod 1777 "$root/tmp"
	chmod 700 "$root/root"
	chmod 755 "$root/workspace"
	# Owners are set in the archive, not on disk, so no root is needed:
	# everything 0:0 but /workspace, which belongs to sandbox.
	local mtime
	mtime=$(stat -c %Y "$BUSYBOX")
	tarball=$work/rootfs.tar
	tar -C "$root" -cf "$tarball" --sort=name --mtime="@$mtime" \
		--numeric-owner --owner=0 --group=0 --exclude=./workspace .
	tar -C "$root" -rf "$tarball" --mtime="@$mtime" \
		--numeric-owner --owner=1000 --group=1000 --no-recursion ./workspace
}

import_into() {
	local url=$1 q c
	api "$url" GET /_ping
	[ "$status" = 200 ] || die "$url: /_ping answered HTTP $status: $body"
	if has_current_image "$url"; then
		say "$url: $IMAGE is up to date ($LABEL=$content)"
		return
	fi
	local old=
	[ "$status" != 200 ] || old=$(image_id)
	build_tarball
	q="fromSrc=-&repo=$REPO&tag=$TAG"
	for c in "ENV PATH=/usr/local/bin:/usr/bin:/bin" \
		"WORKDIR /workspace" \
		'CMD ["/bin/sh"]' \
		"LABEL $LABEL=$content"; do
		q+="&changes=$(urlencode "$c")"
	done
	api "$url" POST "$API/images/create?$q" \
		-H 'Content-Type: application/x-tar' --data-binary "@$tarball"
	# Errors may come as a status or inside a 200 progress stream.
	if [ "$status" != 200 ] || grep -q '"error' <<<"$body"; then
		die "$url: import failed: HTTP $status: $body"
	fi
	has_current_image "$url" ||
		die "$url: imported, but GET $API/images/$IMAGE/json answered HTTP $status without the new label: $body"
	local id
	id=$(image_id)
	say "$url: imported $IMAGE ${id:0:19} ($(du -k "$tarball" | cut -f1) KiB)"
	# The previous build is now untagged; drop it unless containers use it.
	if [ -n "$old" ] && [ "$old" != "$id" ]; then
		api "$url" DELETE "$API/images/$old"
		[ "$status" != 200 ] || say "$url: removed the previous build ${old:0:19}"
	fi
}

bare_tarball=
build_bare_tarball() {
	[ -z "$bare_tarball" ] || return 0
	local work
	work=$(mktemp -d "${TMPDIR:-/tmp}/hutch-bare.XXXXXX")
	mkdir -p "$work/rootfs"/{dev,proc,sys,tmp,workspace}
	chmod 1777 "$work/rootfs/tmp"
	bare_tarball=$work.tar
	tar -C "$work/rootfs" -cf "$bare_tarball" --sort=name --mtime=@0 \
		--numeric-owner --owner=0 --group=0 .
	rm -rf "$work"
}

import_bare() {
	local url=$1 q c
	if has_current_image "$url"; then
		say "$url: $IMAGE is up to date"
		return
	fi
	build_bare_tarball
	q="fromSrc=-&repo=${IMAGE%%:*}&tag=${IMAGE#*:}"
	for c in "WORKDIR /workspace" "LABEL $LABEL=$content"; do
		q+="&changes=$(urlencode "$c")"
	done
	api "$url" POST "$API/images/create?$q" \
		-H 'Content-Type: application/x-tar' --data-binary "@$bare_tarball"
	if [ "$status" != 200 ] || grep -q '"error' <<<"$body"; then
		die "$url: import of $IMAGE failed: HTTP $status: $body"
	fi
	has_current_image "$url" || die "$url: $IMAGE imported but not found"
	say "$url: imported $IMAGE"
}

for e in "${engines[@]}"; do
	IMAGE=$REPO:$TAG
	import_into "$e"
	IMAGE=hutch-bare:latest
	import_bare "$e"
done
[ -z "$bare_tarball" ] || rm -f "$bare_tarball"
