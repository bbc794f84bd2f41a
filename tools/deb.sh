#!/bin/bash
# SPDX-License-Identifier: MIT
# The Debian packages (debian/): built, checked with lintian, and tested as installed.
#   tools/deb.sh build   copies the tree's files (tracked, and new ones git does not ignore)
#                        to build-deb/wzero-VERSION/, runs dpkg-buildpackage -us -uc -b
#                        there (the packages land in build-deb/), then lintian on them,
#                        failing on any error or warning
#   tools/deb.sh test    installs build-deb/*.deb with apt-get, runs tools/deb-test.sh
#                        against the installed files only, purges the packages and checks
#                        that none of their files is left (tools/deb-test.sh says how)
# build needs the build dependencies of debian/control (tools/install-deps.sh installs
# them) and no root (Rules-Requires-Root: no); test needs root (apt-get). tools/test-all.sh
# runs both.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
out=$repo/build-deb
mode=${1:?usage: tools/deb.sh build|test}

upstream_version() {
	sed -n 's/^project(wzero VERSION \([0-9.]*\) .*/\1/p' "$repo/CMakeLists.txt"
}

build() {
	local version deb_version src
	version=$(upstream_version)
	deb_version=$(dpkg-parsechangelog -l "$repo/debian/changelog" -S Version)
	# debian/changelog names the version the project builds: 0.2.0 is 0.2.0-N.
	if [ "${deb_version%-*}" != "$version" ]; then
		echo "deb.sh: debian/changelog says $deb_version, CMakeLists.txt $version" >&2
		exit 1
	fi
	rm -rf "$out"
	src=$out/wzero-$version
	mkdir -p "$src"
	# What a clone holds (and what is new and not ignored), not build trees or results.
	(cd "$repo" && git ls-files -z --cached --others --exclude-standard |
		while IFS= read -r -d '' f; do [ -e "$f" ] && printf '%s\0' "$f"; done |
		cpio --quiet -0 -pdm "$src")
	echo "deb.sh: dpkg-buildpackage -us -uc -b in $src (log: $out/build.log)"
	if ! (cd "$src" && dpkg-buildpackage -us -uc -b) >"$out/build.log" 2>&1; then
		tail -n 60 "$out/build.log" >&2
		echo "deb.sh: dpkg-buildpackage failed (the whole log: $out/build.log)" >&2
		exit 1
	fi
	rm -rf "$src"
	local changes
	changes=$(echo "$out"/wzero_"$deb_version"_*.changes)
	echo "deb.sh: lintian --fail-on error,warning $(basename "$changes")"
	lintian --fail-on error,warning --info "$changes"
	(cd "$out" && for deb in *.deb; do
		printf '%-40s %s KiB installed, %s files\n' "$deb" "$(dpkg-deb -f "$deb" Installed-Size)" \
			"$(dpkg-deb -c "$deb" | grep -vc '^d')"
	done)
}

case $mode in
build) build ;;
test) exec bash "$repo/tools/deb-test.sh" "$out" ;;
*)
	echo "usage: tools/deb.sh build|test" >&2
	exit 1
	;;
esac
