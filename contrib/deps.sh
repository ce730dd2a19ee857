#!/usr/bin/env bash
# Install every Debian/Ubuntu package hutch needs to build, test and run.
#
# Idempotent and quick: one dpkg-query decides; apt-get runs only when
# something is missing.  It never starts a service: engines are started by
# contrib/engines.sh (tests) or contrib/setup.sh (a newcomer's machine).
#
# hutch talks to rootful engines only, so neither /etc/subuid nor uidmap is
# needed; recommends (slirp4netns, fuse-overlayfs, uidmap...) stay out.
set -euo pipefail

packages=(
	# build
	gcc make libc6-dev autoconf automake libtool pkg-config
	libcurl4-openssl-dev libjson-c-dev libarchive-dev
	# the agent's grep: PCRE2, linked statically (libpcre2-8.a)
	libpcre2-dev
	# tests and benchmarks
	libcriterion-dev hyperfine
	# the unit tests under memcheck; the fuzz targets (contrib/fuzz.sh:
	# clang with libFuzzer, whose runtime Debian 12 ships apart)
	valgrind clang
	# the format check (.clang-format)
	clang-format
	# engines: Docker Engine 20.10 (brings containerd, runc, tini for
	# HostConfig.Init) and Podman 4.3 (runc, not crun: crun fails on
	# cgroup v1/hybrid hosts; catatonit for HostConfig.Init; netavark, not
	# the CNI plugins apt would pick without recommends)
	docker.io podman runc catatonit tini netavark
	# the offline image and the scripts
	busybox-static curl ca-certificates tar
	# the Debian coding image (images/debian/build.sh) and its test
	mmdebstrap
	# certificates for the TLS engine tests (contrib/engines.sh)
	openssl
)
# libFuzzer's runtime has its own package from Debian 12 on; before (Ubuntu
# 22.04) it comes with clang.
if apt-cache show libclang-rt-dev >/dev/null 2>&1; then
	packages+=(libclang-rt-dev)
fi
# The MCP end-to-end test (tests/mcp) runs the official MCP TypeScript SDK
# client under Node.js 20+.  A node and npm already there are used as they
# are: Debian's npm would fight a Node.js installed from elsewhere.
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
	packages+=(nodejs npm)
fi

missing=()
status=$(dpkg-query -W -f='${Package} ${Status}\n' "${packages[@]}" 2>/dev/null || true)
for p in "${packages[@]}"; do
	grep -qx "$p install ok installed" <<<"$status" || missing+=("$p")
done

if [ ${#missing[@]} -eq 0 ]; then
	echo "deps: all ${#packages[@]} packages installed"
	exit 0
fi

echo "deps: installing ${missing[*]}"
sudo=()
if [ "$(id -u)" -ne 0 ]; then
	command -v sudo >/dev/null ||
		{ echo "deps: not root and no sudo: install ${missing[*]} by hand" >&2; exit 1; }
	sudo=(sudo)
fi

# Keep maintainer scripts from starting docker/containerd: a policy-rc.d that
# says "no" (101), only if the machine has none of its own.
policy=/usr/sbin/policy-rc.d
own_policy=
if [ ! -e "$policy" ]; then
	printf '#!/bin/sh\n# written by hutch contrib/deps.sh for one apt-get run\nexit 101\n' |
		"${sudo[@]}" tee "$policy" >/dev/null
	"${sudo[@]}" chmod 755 "$policy"
	own_policy=1
fi
cleanup() { [ -z "$own_policy" ] || "${sudo[@]}" rm -f "$policy"; }
trap cleanup EXIT

export DEBIAN_FRONTEND=noninteractive
"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -q
"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive \
	apt-get install -y -q --no-install-recommends "${missing[@]}"
echo "deps: done"
