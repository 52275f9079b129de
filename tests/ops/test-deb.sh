#!/bin/bash
# test-deb.sh: `make deb`'s script builds the Debian package from this tree
# (with another version, as the VM suite's upgrade test does) into a
# temporary directory; lintian reports no error or warning; the .deb holds
# croft.conf as its one conffile, the units where dh_installsystemd found
# them, the sysusers and tmpfiles files, and maintainer scripts that make
# the user, apply tmpfiles, enable and start the units, restart them on
# upgrade, stop them on remove only, and keep the dataset and the user on
# purge; dpkg -x gives the files and programs of that version.  Host, any
# user; the package is installed for real in the VM suite (tests/vm).
# usage: test-deb.sh SOURCE_ROOT
set -u
. "$(dirname "$0")/../lib/testlib.sh"
. "$(dirname "$0")/opslib.sh"
src=$1
require_cmd dpkg-buildpackage dh dpkg-deb lintian
ops_setup
base=$(dpkg-parsechangelog -l "$src/debian/changelog" -S Version)
version=$base+opstest1
deb=$TEST_TMP/croft_${version}_amd64.deb

if out=$("$src/debian/build-deb.sh" "$TEST_TMP" "$version" 2>&1) && [ -s "$deb" ]; then
	ok "build-deb.sh $version: $(basename "$deb")"
else
	not_ok "build-deb.sh $version failed"; echo "$out" | sed 's/^/# /'
	finish
fi
# what dpkg-buildpackage writes beside the tree it builds
check "the checkout's parent directory holds none of this build's results" \
	bash -c "! ls -d '$src/..'/croft*_${version}_* >/dev/null 2>&1"

lint=$(lintian --tag-display-limit 0 "$deb" 2>&1 | grep -v 'running with root privileges')
lint_rc=$?
if ! grep -Eq '^[EW]: ' <<<"$lint"; then
	ok "lintian: no error, no warning"
else
	not_ok "lintian:"; echo "$lint" | sed 's/^/# /'
fi

check "the one conffile is /etc/croft/croft.conf" \
	[ "$(dpkg-deb -f "$deb" Package)/$(dpkg-deb --ctrl-tarfile "$deb" | tar -xOf - ./conffiles)" = \
	  "croft//etc/croft/croft.conf" ]
root=$TEST_TMP/root
dpkg-deb -x "$deb" "$root"
files=(usr/bin/croft usr/bin/croftctl usr/sbin/croft-writer usr/sbin/croft-sampler
	usr/sbin/croft-probe lib/systemd/system/croft-writer.service
	lib/systemd/system/croft-sampler.service lib/systemd/system/croft-probe.service
	lib/systemd/system-generators/croft-generator
	usr/lib/sysusers.d/croft.conf usr/lib/tmpfiles.d/croft.conf etc/croft/croft.conf
	usr/share/croft/frameworks.json usr/share/croft/croft-dataset.schema.json
	usr/share/man/man5/croft.conf.5.gz usr/share/man/man8/croft-writer.8.gz)
missing=
for f in "${files[@]}"; do [ -s "$root/$f" ] || missing+=" $f"; done
check "dpkg -x: daemons, commands, units, generator, sysusers, tmpfiles, croft.conf, man pages${missing:+ (missing:$missing)}" \
	[ -z "$missing" ]
check "the packaged croft.conf is systemd/croft.conf" cmp -s "$root/etc/croft/croft.conf" "$src/systemd/croft.conf"
check "the packaged sysusers file is systemd/sysusers.d/croft.conf" \
	cmp -s "$root/usr/lib/sysusers.d/croft.conf" "$src/systemd/sysusers.d/croft.conf"
for d in writer sampler probe; do
	check "croft-$d.service starts /usr/sbin/croft-$d" \
		grep -q "^ExecStart=/usr/sbin/croft-$d " "$root/lib/systemd/system/croft-$d.service"
done
check "croft --version says $version" [ "$("$root/usr/bin/croft" --version 2>&1)" = "croft $version" ]
check "croft-writer --version says $version" \
	[ "$("$root/usr/sbin/croft-writer" --version 2>&1)" = "croft-writer $version" ]
check "croft-writer -n accepts the packaged croft.conf" \
	quiet "$root/usr/sbin/croft-writer" -n --config "$root/etc/croft/croft.conf"

ctrl=$TEST_TMP/ctrl
dpkg-deb -e "$deb" "$ctrl"
# script_has SCRIPT PATTERN: an extended regex matching one of its lines
script_has() { grep -Eq "$2" "$ctrl/$1"; }
check "postinst: systemd-sysusers makes the croft user (dh_installsysusers)" \
	script_has postinst '^ *systemd-sysusers .* croft\.conf$'
check "postinst: systemd-tmpfiles --create applies croft.conf" \
	script_has postinst 'systemd-tmpfiles .*--create croft\.conf'
for u in croft-probe croft-sampler croft-writer; do
	check "postinst: enables $u.service" script_has postinst "deb-systemd-helper enable '$u\.service'"
done
# invoked ACTION SCRIPT: the units the script's deb-systemd-invoke ACTION lines name, in order
invoked() { grep -o "deb-systemd-invoke $1 '[a-z-]*\.service'" "$ctrl/$2" | sed "s/.* '//; s/'$//" | paste -sd' '; }
# one at a time (debian/rules), so that an upgrade costs the sampler's rows only its own
# restart: not the writer's stop and start too (issue 32 item 6)
check "postinst: starts the units on install, restarts them on upgrade, one at a time: writer, probe, sampler" \
	bash -c "grep -q '_dh_action=restart' '$ctrl/postinst' && grep -q '_dh_action=start' '$ctrl/postinst' &&
		[ \"\$1\" = 'croft-writer.service croft-probe.service croft-sampler.service' ]" _ \
	"$(invoked '\$_dh_action' postinst)"
check "prerm: stops the units on remove only (an upgrade restarts them): sampler, probe, writer" \
	bash -c "grep -qF '\"\$1\" = remove' '$ctrl/prerm' && ! grep -q upgrade '$ctrl/prerm' &&
		[ \"\$1\" = 'croft-sampler.service croft-probe.service croft-writer.service' ]" _ \
	"$(invoked stop prerm)"
# the postrm's commands: comments and the message's here-document left out
awk '/<<.MSG.$/ { msg = 1 } !msg && !/^[[:space:]]*#/ { print } /^MSG$/ { msg = 0 }' \
	"$ctrl/postrm" >"$TEST_TMP/postrm.code"
check "postrm: purge removes /run/croft, not /var/lib/croft, /var/lib/croft-sampler or the user" \
	bash -c "grep -q 'rm -rf /run/croft' '$TEST_TMP/postrm.code' &&
		! grep -Eq '(rm|rmdir) .*/var/lib/croft' '$TEST_TMP/postrm.code' &&
		! grep -Eq '(userdel|deluser|groupdel)' '$TEST_TMP/postrm.code'"
check "postrm: the purge message names what is kept" \
	bash -c "sh -n '$ctrl/postrm' && grep -q '/var/lib/croft  ' '$ctrl/postrm' &&
		grep -q '/var/lib/croft-sampler' '$ctrl/postrm' && grep -q 'croft user' '$ctrl/postrm'"
finish
