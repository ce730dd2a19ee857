#!/usr/bin/env bash
# Build hutch-debian:bookworm, a coding image, from Debian's package archive
# alone (no registry): mmdebstrap makes the root filesystem from Debian's
# archive (deb.debian.org with its updates and security suites, or the
# --mirror given), and hutch imports it into each engine (hutch image
# import).
#
#   hutch-image-debian [--include PKG[,PKG...]]... [--packages LIST]
#                      [--name NAME[:TAG]] [--mirror URL] [ENGINE_URL...]
#
# The image: Debian bookworm (minbase) with python3, pip, venv, pytest, git,
# build-essential, curl, ripgrep, less, procps, CA certificates; a `sandbox`
# user 1000:1000 with home /home/sandbox and bash; LANG=C.UTF-8; an empty
# /workspace owned by sandbox, the working directory.
#   --include PKG,...   more packages on top of the list (repeatable); also
#                       $HUTCH_DEBIAN_INCLUDE
#   --packages LIST     the whole list instead of the default (comma
#                       separated); also $HUTCH_DEBIAN_PACKAGES
#   --name NAME[:TAG]   the image's name (default hutch-debian:bookworm)
#   --mirror URL        a Debian mirror (http://.../debian) instead of
#                       mmdebstrap's default; also $HUTCH_DEBIAN_MIRROR
#   ENGINE_URL          unix:///path.sock or tcp://host:port; default: the
#                       engines hutch finds ($HUTCH_ENGINE, the usual
#                       sockets)
#
# The root filesystem is kept in $HUTCH_CACHE_DIR (default
# /var/cache/hutch), named by a hash of the package list, the suite and this
# script, so a second run with the same list imports without building.  An
# engine whose image already carries that hash (label
# io.hutch.image.content) is left alone, and the build it held before goes
# when nothing else names it.  Runs of the recipe take turns (a lock in the
# cache).  Needs root (mmdebstrap's root mode), mmdebstrap, and a network
# path to the Debian archive.
set -euo pipefail
export LC_ALL=C

SUITE=bookworm
NAME=hutch-debian:$SUITE
LABEL=io.hutch.image.content
PACKAGES=${HUTCH_DEBIAN_PACKAGES:-python3,python3-pip,python3-venv,python3-pytest,git,build-essential,curl,ca-certificates,ripgrep,less,procps,bash}
INCLUDE=${HUTCH_DEBIAN_INCLUDE:-}
CACHE=${HUTCH_CACHE_DIR:-/var/cache/hutch}
HUTCH=${HUTCH:-hutch}
MIRROR=${HUTCH_DEBIAN_MIRROR:-}

me=$(basename "$0")
say() { printf '%s: %s\n' "$me" "$*"; }
die() {
	printf '%s: %s\n' "$me" "$*" >&2
	exit 1
}

engines=()
while [ $# -gt 0 ]; do
	case $1 in
	--include)
		[ $# -ge 2 ] || die "--include needs a package list"
		INCLUDE=${INCLUDE:+$INCLUDE,}$2
		shift 2
		;;
	--packages)
		[ $# -ge 2 ] || die "--packages needs a package list"
		PACKAGES=$2
		shift 2
		;;
	--name)
		[ $# -ge 2 ] || die "--name needs NAME[:TAG]"
		NAME=$2
		shift 2
		;;
	--mirror)
		[ $# -ge 2 ] || die "--mirror needs a URL"
		MIRROR=$2
		shift 2
		;;
	-h | --help)
		sed -n '2,/^set /{/^#/s/^# \{0,1\}//p}' "$0"
		exit 0
		;;
	-*) die "unknown option '$1' (see --help)" ;;
	*)
		engines+=("$1")
		shift
		;;
	esac
done
case $NAME in *:*) ;; *) NAME=$NAME:latest ;; esac

# A package list is names only: it goes into mmdebstrap's command line.
list=${PACKAGES}${INCLUDE:+,$INCLUDE}
list=$(tr ' ' ',' <<<"$list" | tr -s ',' | sed 's/^,//; s/,$//')
[[ $list =~ ^[a-z0-9][a-z0-9.+-]*(,[a-z0-9][a-z0-9.+-]*)*$ ]] ||
	die "bad package list '$list' (names separated by commas)"
list=$(tr ',' '\n' <<<"$list" | sort -u | paste -sd, -)

[ "$(id -u)" -eq 0 ] || die "run as root (mmdebstrap builds the root filesystem in root mode)"
command -v mmdebstrap >/dev/null || die "mmdebstrap is missing: apt-get install mmdebstrap"
command -v "$HUTCH" >/dev/null || die "'$HUTCH' is not on PATH: install hutch first (make install), or set HUTCH=/path/to/hutch"

case $MIRROR in '' | http://* | https://*) ;; *) die "--mirror '$MIRROR': give an http:// or https:// URL" ;; esac

# The file is named by the list (to replace only an older build of the same
# list) and by everything that went into it (the label the engines keep).
listhash=$(printf '%s\n%s\n' "$SUITE" "$list" | sha256sum | cut -c1-16)
content=$(printf '%s\n%s\n%s\n' "$SUITE" "$list" "$MIRROR" | cat - "${BASH_SOURCE[0]}" | sha256sum | cut -c1-32)
tarball=$CACHE/debian-$SUITE-$listhash-$content.tar

mkdir -p "$CACHE"
# One run at a time: another's half-built file is never taken for ours.
exec 9>"$CACHE/.lock"
flock 9

# The sandbox user, its home, /workspace: made inside the new root.
customize='chroot "$1" useradd --create-home --uid 1000 --user-group --shell /bin/bash sandbox &&
mkdir -p "$1/workspace" && chown 1000:1000 "$1/workspace" && chmod 755 "$1/workspace" &&
rm -rf "$1"/var/lib/apt/lists/* "$1"/var/cache/apt/*.bin'

if [ ! -s "$tarball" ]; then
	say "building the root filesystem ($SUITE: $list); this downloads from the Debian archive"
	part=$(mktemp "$CACHE/.part.XXXXXX")
	trap 'rm -f "$part"' EXIT
	if ! mmdebstrap --variant=minbase --format=tar --include="$list" \
		--customize-hook="$customize" "$SUITE" "$part" ${MIRROR:+"$MIRROR"} >&2; then
		die "mmdebstrap failed (see above)"
	fi
	mv "$part" "$tarball"
	trap - EXIT
	# Older builds of the same list go: each is hundreds of MB.
	find "$CACHE" -maxdepth 1 -name "debian-$SUITE-$listhash-*.tar" ! -name "${tarball##*/}" -delete
else
	say "root filesystem from the cache: $tarball"
fi

# Each engine on its own: an image goes to one.  Nothing is sent to one
# that holds this build already (--if-changed); the build it held before
# goes (--prune).
[ ${#engines[@]} -gt 0 ] || engines=("")
for e in "${engines[@]}"; do
	"$HUTCH" ${e:+--engine "$e"} image import "$tarball" "$NAME" \
		--env LANG=C.UTF-8 \
		--env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
		--workdir /workspace \
		--label "$LABEL=$content" --if-changed --prune >/dev/null ||
		die "import into ${e:-the engine} failed"
	say "${e:-the engine}: $NAME is this build ($LABEL=$content)"
done
say "use it with: hutch up SESSION --image $NAME (or HUTCH_IMAGE=$NAME)"
