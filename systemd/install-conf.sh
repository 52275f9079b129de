#!/bin/sh
# install-conf.sh: meson's install step for /etc/croft/croft.conf (run by
# `meson install` / `make install`, as the installing user, DESTDIR
# honoured).  An existing croft.conf is the operator's and is never
# replaced: the new default goes beside it as croft.conf.dist.  meson shows
# an install script's output only when it fails, so what was done also goes
# to install-conf.note in the build directory, which `make install` prints.
# usage: install-conf.sh DEFAULT_CONF ETC_CROFT_DIR
set -eu
default=$1
dir=${DESTDIR:-}$2
conf=$dir/croft.conf
note=${MESON_BUILD_ROOT:-.}/install-conf.note
say() { echo "croft: $*" | tee -a "$note"; }

mkdir -p "$dir"
if [ ! -e "$conf" ] && [ ! -L "$conf" ]; then
	install -m 0644 "$default" "$conf"
	say "installed the default $conf"
elif cmp -s "$default" "$conf"; then
	say "$conf is the default already, left as it is"
else
	install -m 0644 "$default" "$conf.dist"
	say "kept your $conf; this version's default is $conf.dist (diff them to see what is new)"
fi
