#!/bin/bash
# test-install.sh: `meson install --destdir` (what `make install DESTDIR=`
# runs) puts every file croft ships where it belongs: binaries, units,
# sysusers/tmpfiles snippets, man pages, the default croft.conf and the
# catalog; the units start the installed daemons; the man pages name the
# files of this prefix (every .../share/croft/ path they give is installed);
# a second install over an edited croft.conf keeps it and puts the new
# default beside it as croft.conf.dist, saying so.
# usage: test-install.sh BUILD_ROOT PREFIX BINDIR SBINDIR MANDIR SYSCONFDIR DATADIR PROBE(true|false) MAN(true|false)
set -u
. "$(dirname "$0")/../lib/testlib.sh"
build=$1 prefix=$2 bindir=$3 sbindir=$4 mandir=$5 sysconfdir=$6 datadir=$7 with_probe=$8 with_man=$9
make_tmpdir
dest=$TEST_TMP/dest

n=1
rm -f "$build/install-conf.note"
if out=$(meson install -C "$build" --no-rebuild --quiet --destdir "$dest" 2>&1); then
	cp "$build/install-conf.note" "$TEST_TMP/first.note"
	echo "ok $n - meson install --destdir"
else
	echo "not ok $n - meson install --destdir failed"; echo "$out" | sed 's/^/# /'
	echo "1..$n"; exit 1
fi

# absolute option values stay as they are; relative ones are under the prefix
under() { case $1 in /*) echo "$1" ;; *) echo "$prefix/$1" ;; esac; }
bin=$(under "$bindir") sbin=$(under "$sbindir") man=$(under "$mandir")
etc=$(under "$sysconfdir") share=$(under "$datadir")
expected=(
	"$bin/croft" "$bin/croftctl" "$sbin/croft-writer" "$sbin/croft-sampler"
	"$prefix/lib/systemd/system/croft-writer.service"
	"$prefix/lib/systemd/system/croft-sampler.service"
	"$prefix/lib/systemd/system/croft-probe.service"
	"$prefix/lib/systemd/system-generators/croft-generator"
	"$prefix/lib/sysusers.d/croft.conf" "$prefix/lib/tmpfiles.d/croft.conf"
	"$etc/croft/croft.conf" "$share/croft/frameworks.json" "$share/croft/croft-alerts.yml"
)
[ "$with_probe" = true ] && expected+=("$sbin/croft-probe")
if [ "$with_man" = true ]; then
	for p in man1/croft.1 man1/croftctl.1 man5/croft.conf.5 man5/croft-dataset.5 \
		man5/croft-frameworks.5 man8/croft-probe.8 man8/croft-sampler.8 man8/croft-writer.8; do
		expected+=("$man/$p")
	done
fi
fails=0
for f in "${expected[@]}"; do
	n=$((n + 1))
	if [ -s "$dest$f" ]; then
		echo "ok $n - installed $f"
	else
		echo "not ok $n - missing $f"; fails=$((fails + 1))
	fi
done
for f in "$bin/croft" "$bin/croftctl" "$sbin/croft-writer" "$sbin/croft-sampler"; do
	n=$((n + 1))
	if [ -x "$dest$f" ]; then echo "ok $n - $f is executable"; else
		echo "not ok $n - $f not executable"; fails=$((fails + 1)); fi
done
for d in writer sampler probe; do
	n=$((n + 1))
	unit=$dest$prefix/lib/systemd/system/croft-$d.service
	if grep -q "^ExecStart=$sbin/croft-$d " "$unit" 2>/dev/null; then
		echo "ok $n - croft-$d.service starts $sbin/croft-$d"
	else
		echo "not ok $n - croft-$d.service ExecStart: $(grep ExecStart= "$unit" 2>/dev/null)"
		fails=$((fails + 1))
	fi
done
# The shipped croft.conf is valid and the shipped catalog is the built-in one.
n=$((n + 1))
if [ -x "$dest$sbin/croft-writer" ] &&
   out=$("$dest$sbin/croft-writer" -n --config "$dest$etc/croft/croft.conf" 2>&1); then
	echo "ok $n - the installed croft.conf passes croft-writer -n"
else
	echo "not ok $n - croft-writer -n on the installed croft.conf: ${out:-}"
	fails=$((fails + 1))
fi
n=$((n + 1))
if command -v jq >/dev/null; then
	names=$(jq -r '.[].name' "$dest$share/croft/frameworks.json" | tr '\n' ' ')
	want="sglang vllm ollama ray spark transformers pytorch tensorflow jax onnxruntime xgboost scikit-learn pandas "
	if [ "$names" = "$want" ]; then echo "ok $n - frameworks.json holds the built-in order"
	else echo "not ok $n - frameworks.json names: $names"; fails=$((fails + 1)); fi
else
	echo "ok $n - # SKIP jq not installed"
fi
# The man pages name the paths this install uses, not those of another prefix.
if [ "$with_man" = true ] && command -v man >/dev/null; then
	named=$(for p in "$dest$man"/man[158]/croft*.[158]; do MANWIDTH=1000 man -l "$p" 2>/dev/null; done |
		grep -oE '(/[A-Za-z0-9._-]+)*/share/croft/[A-Za-z0-9._-]*[A-Za-z0-9]' | sort -u)
	for f in $named; do
		n=$((n + 1))
		if [ -e "$dest$f" ]; then echo "ok $n - the man pages name $f, installed"
		else echo "not ok $n - the man pages name $f, not installed"; fails=$((fails + 1)); fi
	done
	n=$((n + 1))
	if [ -n "$named" ] && MANWIDTH=1000 man -l "$dest$man/man5/croft.conf.5" 2>/dev/null |
		grep -qF "$etc/croft/croft.conf"; then
		echo "ok $n - croft.conf(5) names $etc/croft/croft.conf"
	else
		echo "not ok $n - croft.conf(5) does not name $etc/croft/croft.conf (or no share/croft path named)"
		fails=$((fails + 1))
	fi
fi
# An operator's croft.conf survives `make install` again.
conf=$dest$etc/croft/croft.conf
n=$((n + 1))
# what install-conf.sh did, which make install prints
note=$TEST_TMP/first.note
if grep -q "croft: installed the default $conf" "$note"; then
	echo "ok $n - a fresh install puts the default croft.conf and says so"
else
	echo "not ok $n - a fresh install said:"; sed 's/^/# /' "$note"; fails=$((fails + 1))
fi
default=$(cat "$conf")
printf '[writer]\nretention_age = 90d\n' >>"$conf"
edited=$(cat "$conf")
rm -f "$build/install-conf.note"
meson install -C "$build" --no-rebuild --quiet --destdir "$dest" >/dev/null 2>&1
n=$((n + 1))
if [ "$(cat "$conf")" = "$edited" ] && [ "$(cat "$conf.dist" 2>/dev/null)" = "$default" ]; then
	echo "ok $n - installing again keeps the edited croft.conf, the default goes to croft.conf.dist"
else
	echo "not ok $n - after a second install: croft.conf $(grep -c 'retention_age = 90d' "$conf") edits, croft.conf.dist $(ls "$conf.dist" 2>&1)"
	fails=$((fails + 1))
fi
n=$((n + 1))
note=$build/install-conf.note
if grep -qF "kept your $conf; this version's default is $conf.dist" "$note"; then
	echo "ok $n - the second install says it kept croft.conf"
else
	echo "not ok $n - the second install said:"; sed 's/^/# /' "$note"; fails=$((fails + 1))
fi
echo "1..$n"
exit $((fails > 0))
