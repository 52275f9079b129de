#!/bin/bash
# test-generator.sh: croft-generator opens croft-writer.service's sandbox to
# croft.conf's data_dir, but never to a system directory or one directly
# below it (security review finding 13: data_dir = / wrote ReadWritePaths=-/,
# undoing ProtectSystem=strict).  Needs no root.
# usage: test-generator.sh (GENERATOR and TESTLIB from meson)
set -u
. "$TESTLIB"
make_tmpdir
n=0 failed=0
dropin=$TEST_TMP/gen/croft-writer.service.d/croft-data-dir.conf
generate() { # generate DATA_DIR: runs the generator on a croft.conf naming it
	rm -rf "$TEST_TMP/gen"
	mkdir -p "$TEST_TMP/gen"
	printf '[writer]\ndata_dir = %s\n' "$1" >"$TEST_TMP/croft.conf"
	CROFT_CONFIG=$TEST_TMP/croft.conf "$GENERATOR" "$TEST_TMP/gen" 2>"$TEST_TMP/err"
}
result() { # result OK WHAT
	n=$((n + 1))
	if [ "$1" = 0 ]; then echo "ok $n - $2"; else echo "not ok $n - $2"; failed=1; fi
}
for dir in / /etc /etc/ /usr /usr/local /var /var/lib /var/lib/ /run/croft /proc /sys/fs \
	/dev/shm /boot /home/alice /root /data /var/lib/../../etc /var/lib/./x/../.. /srv//x; do
	generate "$dir"
	[ ! -e "$dropin" ] && grep -q 'system directory' "$TEST_TMP/err"
	result $? "data_dir = $dir: no drop-in, refused in words"
done
for dir in /var/lib/croft-data /srv/croft /data/croft /mnt/disk1/croft; do
	generate "$dir"
	grep -qxF "ReadWritePaths=-$dir" "$dropin" 2>/dev/null
	result $? "data_dir = $dir: the writer may write there"
done
echo "1..$n"
exit $failed
