#!/bin/sh
# SPDX-License-Identifier: MIT
# Install the Debian packages that building and testing gputrace need.
# Fast when everything is already there: dpkg-query decides, and apt-get
# (with one `apt-get update`) only runs for what is missing.
set -e

# build tools, the libraries the Makefile links statically (libtinfo.a
# comes from libncurses-dev, libbsd.a/libmd.a are libedit's dependencies),
# bpftrace for the differential suite (systemtap-sdt-dev: <sys/sdt.h> for
# its usdt test program), time for the benchmarks, man-db
# and groff-base for the man page checks of tests/accept/install.sh,
# clang 14 and its libFuzzer runtime for tests/fuzz/, libc6-dbg for -l's
# separate debug symbols (tests/accept/list_parity.sh), chromium for the
# timeline's viewer test (tests/accept/timeline_browser.sh, which fetches
# speedscope with npm), libmicrohttpd-dev
# for --metrics (its header at build time, libmicrohttpd12 dlopen'd) and
# curl, python3 and prometheus (promtool too) for tests/accept/metrics_*.sh,
# strace for a target another tracer holds (tests/accept/cuda_hostattach.sh).
PKGS="build-essential gcc make pkg-config flex bison
libbpf-dev libelf-dev libdw-dev libbz2-dev liblzma-dev zlib1g-dev libedit-dev libzstd-dev liblz4-dev libzydis-dev
libiberty-dev libncurses-dev libbsd-dev libmd-dev
bpftrace time coreutils diffutils man-db groff-base systemtap-sdt-dev libc6-dbg
clang-14 libclang-rt-14-dev chromium
libmicrohttpd-dev curl python3 prometheus strace"

missing=
for p in $PKGS; do
	st=$(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null) || st=
	[ "$st" = installed ] || missing="$missing $p"
done

if [ -z "$missing" ]; then
	echo "install-deps: all packages present"
	exit 0
fi

echo "install-deps: installing:$missing"
if [ "$(id -u)" -ne 0 ]; then
	echo "install-deps: not root, cannot install:$missing" >&2
	exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -q
# shellcheck disable=SC2086
apt-get install -y -q --no-install-recommends $missing
