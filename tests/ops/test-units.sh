#!/bin/bash
# test-units.sh: the three systemd units pass `systemd-analyze verify` (with
# the built daemons as ExecStart and the built man pages as Documentation)
# and `systemd-analyze security --offline=yes` rates each at or under its
# threshold: writer 1.0, probe 1.5, sampler 2.0.
# usage: test-units.sh SYSTEMD_SRC_DIR MAN_BUILD_DIR DAEMON_BUILD_ROOT
set -u
. "$(dirname "$0")/../lib/testlib.sh"
src=$1 man_build=$2 build_root=$3
require_cmd systemd-analyze
make_tmpdir

# A fake sbindir holding the built daemons (a daemon not built here, such as
# the probe without BPF tooling, stands in as /bin/true: its unit is still
# checked, only not against its binary).
mkdir -p "$TEST_TMP/sbin" "$TEST_TMP/units" "$TEST_TMP/man"/man{1,5,8}
for d in writer sampler probe; do
	bin="$build_root/$d/croft-$d"
	[ -x "$bin" ] || { echo "# croft-$d not built; its unit runs /bin/true here"; bin=/bin/true; }
	ln -s "$bin" "$TEST_TMP/sbin/croft-$d"
done
for page in "$man_build"/*.[158]; do
	[ -e "$page" ] || continue
	ln -s "$page" "$TEST_TMP/man/man${page##*.}/$(basename "$page")"
done

fails=0
n=0
for d in writer sampler probe; do
	# the units as meson configured them, their binaries here
	sed "s|^ExecStart=[^ ]*/croft-$d|ExecStart=$TEST_TMP/sbin/croft-$d|" \
		"$build_root/systemd/croft-$d.service" >"$TEST_TMP/units/croft-$d.service"
done
cd "$TEST_TMP/units" || fail "cd"
n=$((n + 1))
man_check=yes
if ! ls "$TEST_TMP"/man/man8/croft-writer.8 >/dev/null 2>&1; then
	echo "# man pages not built: Documentation= not checked"
	man_check=no
fi
# nothing said about our units (the host's own units may draw remarks)
if out=$(MANPATH="$TEST_TMP/man" systemd-analyze verify --man=$man_check ./croft-*.service 2>&1) &&
   ! grep -q 'croft' <<<"$out"; then
	echo "ok $n - systemd-analyze verify: the three units"
else
	echo "not ok $n - systemd-analyze verify:"; echo "$out" | sed 's/^/# /'
	fails=$((fails + 1))
fi

# the daemons' one seccomp policy (common/meson.build), as croft run applies it
for d in writer sampler probe; do
	n=$((n + 1))
	denied=$(sed -n 's/^SystemCallFilter=~//p' "croft-$d.service" | tr ' ' '\n')
	missing=
	for call in ptrace process_vm_readv process_vm_writev pidfd_getfd kcmp open_by_handle_at \
		io_uring_setup userfaultfd; do
		grep -qx "$call" <<<"$denied" || missing="$missing $call"
	done
	if [ -z "$missing" ]; then
		echo "ok $n - croft-$d.service denies pidfd_getfd, process_vm_*, ptrace, kcmp, open_by_handle_at, io_uring"
	else
		echo "not ok $n - croft-$d.service allows$missing"
		fails=$((fails + 1))
	fi
done

# issue 32 item 6: an upgrade restarts all three; the sampler works without
# the probe and reconnects, so it must not wait for the probe's stop and attach
n=$((n + 1))
if ! grep -q '^After=.*croft-probe' croft-sampler.service &&
   ! grep -q '^Before=.*croft-sampler' croft-probe.service &&
   grep -q '^After=.*croft-writer.service' croft-sampler.service; then
	echo "ok $n - croft-sampler.service is ordered after the writer only, not after the probe"
else
	echo "not ok $n - croft-sampler.service waits for croft-probe.service: $(grep -h '^After=\|^Before=' croft-sampler.service croft-probe.service | tr '\n' ' ')"
	fails=$((fails + 1))
fi

declare -A limit=([writer]=1.0 [probe]=1.5 [sampler]=2.0)
for d in writer probe sampler; do
	n=$((n + 1))
	line=$(systemd-analyze security --offline=yes "./croft-$d.service" 2>&1 | grep 'Overall exposure level')
	score=$(echo "$line" | sed -n 's/.*: \([0-9.]*\) .*/\1/p')
	if [ -n "$score" ] && awk -v s="$score" -v l="${limit[$d]}" 'BEGIN { exit !(s <= l) }'; then
		echo "ok $n - croft-$d.service exposure $score <= ${limit[$d]}"
	else
		echo "not ok $n - croft-$d.service exposure '${score:-?}' above ${limit[$d]}: $line"
		fails=$((fails + 1))
	fi
done

# The snippets parse: systemd-sysusers and systemd-tmpfiles against a root dir.
n=$((n + 1))
mkdir -p "$TEST_TMP/root/etc"
if command -v systemd-sysusers >/dev/null; then
	: >"$TEST_TMP/root/etc/passwd"; : >"$TEST_TMP/root/etc/group"
	if systemd-sysusers --root="$TEST_TMP/root" "$src/sysusers.d/croft.conf" >/dev/null 2>&1 &&
	   grep -q '^croft:' "$TEST_TMP/root/etc/passwd" && grep -q '^croft:' "$TEST_TMP/root/etc/group"; then
		echo "ok $n - sysusers.d/croft.conf creates the croft user and group"
	else
		echo "not ok $n - sysusers.d/croft.conf did not create croft"; fails=$((fails + 1))
	fi
else
	echo "ok $n - # SKIP systemd-sysusers not installed"
fi
n=$((n + 1))
croft_uid=$(awk -F: '$1 == "croft" { print $3 }' "$TEST_TMP/root/etc/passwd")
croft_gid=$(awk -F: '$1 == "croft" { print $3 }' "$TEST_TMP/root/etc/group")
if [ "$(id -u)" != 0 ] && [ "${CI:-}" != true ]; then
	echo "ok $n - # SKIP tmpfiles.d/croft.conf: systemd-tmpfiles --root chowns, which needs root"
elif command -v systemd-tmpfiles >/dev/null &&
   out=$(systemd-tmpfiles --root="$TEST_TMP/root" --create "$src/tmpfiles.d/croft.conf" 2>&1) &&
   [ "$(stat -c '%a %u %g' "$TEST_TMP/root/run/croft")" = "750 0 $croft_gid" ] &&
   [ "$(stat -c '%a %u %g' "$TEST_TMP/root/var/lib/croft")" = "750 $croft_uid $croft_gid" ]; then
	echo "ok $n - tmpfiles.d/croft.conf makes /run/croft 0750 root:croft and /var/lib/croft 0750 croft:croft"
else
	echo "not ok $n - tmpfiles.d/croft.conf: ${out:-}"; fails=$((fails + 1))
fi
# croft.prom (the security review's 14): croft writes its own 0755 directory;
# node_exporter's is root's, croft gets no ACL on it, only root's link to its
# file; and a host without node_exporter's directory applies the file cleanly
n=$((n + 1))
NE=$TEST_TMP/root/var/lib/prometheus/node-exporter
if [ "$(id -u)" != 0 ] && [ "${CI:-}" != true ]; then
	echo "ok $n - # SKIP tmpfiles.d/croft.conf and node_exporter's directory: needs root"
elif mkdir -p "$NE" && chmod 755 "$NE" &&
   out=$(systemd-tmpfiles --root="$TEST_TMP/root" --create "$src/tmpfiles.d/croft.conf" 2>&1) &&
   [ "$(stat -c '%a %u %g' "$TEST_TMP/root/var/lib/croft-textfile")" = "755 $croft_uid $croft_gid" ] &&
   [ "$(stat -c '%u' "$NE/croft.prom")" = 0 ] &&
   [ "$(readlink "$NE/croft.prom")" = /var/lib/croft-textfile/croft.prom ] &&
   ! python3 -c 'import os, sys; os.getxattr(sys.argv[1], "system.posix_acl_access")' "$NE" 2>/dev/null; then
	echo "ok $n - tmpfiles.d/croft.conf: croft.prom in croft's /var/lib/croft-textfile, root's link in node_exporter's directory, no ACL there"
else
	echo "not ok $n - tmpfiles.d/croft.conf and node_exporter's directory: ${out:-}"
	ls -la "$NE" | sed 's/^/# /'
	fails=$((fails + 1))
fi
echo "1..$n"
exit $((fails > 0))
