# SPDX-License-Identifier: MIT
# shellcheck shell=bash
# Sourced by tools/build.sh and tools/sanitize.sh: ccache as the compiler launcher of every
# build dir, with one cache that outlives the checkout (CI clones to the same path each time,
# so a warm cache hits across runs). Sets ccache_args for cmake's configure step; empty, and
# the build plain, where ccache is not installed. WZERO_CCACHE_DIR overrides the cache dir.
ccache_args=()
if command -v ccache >/dev/null; then
	export CCACHE_DIR=${WZERO_CCACHE_DIR:-${CCACHE_DIR:-/var/cache/wzero-ccache}}
	# Paths under the repository hash as relative ones: the same tree in another directory
	# hits too (with -g the working directory still enters the hash; CI's path is fixed).
	export CCACHE_BASEDIR=${repo:?sourced without repo}
	export CCACHE_MAXSIZE=${CCACHE_MAXSIZE:-3G}
	if mkdir -p "$CCACHE_DIR" 2>/dev/null && [ -w "$CCACHE_DIR" ]; then
		# shellcheck disable=SC2034 # used by the scripts that source this file
		ccache_args=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
	else
		echo "ccache: $CCACHE_DIR is not writable; building without ccache" >&2
	fi
fi
