#!/bin/bash
# build-deb.sh: `make deb`: croft_<version>_amd64.deb built by
# `dpkg-buildpackage -us -uc -b` on a scratch copy of this tree (it writes
# its results to the parent of the tree it builds, so the checkout's
# parent stays clean), results moved to OUT_DIR.  Build host, any user.
# usage: build-deb.sh OUT_DIR [VERSION]
#   VERSION (e.g. 0.1.0+vmtest1, for an upgrade test) adds a changelog
#   entry to the scratch copy only; the programs then report VERSION.
set -euo pipefail
# `make deb DEB_VERSION=...` would hand its variables down to debian/rules
unset MAKEFLAGS MFLAGS MAKELEVEL
src=$(cd "$(dirname "$0")/.." && pwd)
out=${1:?usage: build-deb.sh OUT_DIR [VERSION]}
version=${2:-}
for tool in dpkg-buildpackage dh dpkg-parsechangelog; do
	command -v "$tool" >/dev/null ||
		{ echo "make deb: needs $tool (make deps installs dpkg-dev and debhelper)" >&2; exit 1; }
done
mkdir -p "$out"
out=$(cd "$out" && pwd)
work=$(mktemp -d "$out/.work.XXXXXX")
trap 'rm -rf "$work"' EXIT
tree=$work/croft
mkdir "$tree"

# The tree as git sees it (tracked and new files, nothing ignored: no build
# directory, no croft-data); a tree without git, less its build outputs.
if git -C "$src" rev-parse --show-toplevel 2>/dev/null | grep -qxF "$src"; then
	git -C "$src" ls-files -z -co --exclude-standard |
		(cd "$src" && tar --null -T - -cf - 2>/dev/null) | tar -xf - -C "$tree"
else
	tar -C "$src" --exclude=./build\* --exclude=./croft-data --exclude=node_modules \
		--exclude=.git -cf - . | tar -xf - -C "$tree"
fi

if [ -n "$version" ]; then
	entry=$work/changelog
	{
		printf 'croft (%s) unstable; urgency=medium\n\n' "$version"
		printf '  * This tree, built as version %s (make deb DEB_VERSION=).\n\n' "$version"
		printf ' -- croft developers <croft@example.org>  %s\n\n' "$(date -uR)"
		cat "$tree/debian/changelog"
	} >"$entry"
	mv "$entry" "$tree/debian/changelog"
fi
version=$(dpkg-parsechangelog -l "$tree/debian/changelog" -S Version)
log=$out/croft_${version}_amd64.build.log
echo "make deb: building croft $version (log: $log)"
if ! (cd "$tree" && nice dpkg-buildpackage -us -uc -b) >"$log" 2>&1; then
	tail -n 40 "$log" >&2
	echo "make deb: dpkg-buildpackage failed (the whole log: $log)" >&2
	exit 1
fi
mv -f "$work"/*.deb "$work"/*.buildinfo "$work"/*.changes "$out"/
echo "make deb: built $out/croft_${version}_amd64.deb"
