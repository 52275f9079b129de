#!/bin/bash
# test-units-run.sh: the three units' own ExecStart lines, users and
# capability sets (read from systemd/*.service.in), run here without systemd
# through setpriv in a copy of their /run/croft layout: every daemon comes
# up, the sampler reaches the writer and the probe across the per-unit
# runtime directories, croftctl finds all three, and SIGTERM stops each with
# exit 0.  The writer's unit sets no data_dir: croft.conf's is the one
# (CROFT_CONFIG here), croft-generator opens the sandbox to it, and a
# data_dir the croft user cannot write is refused in one line naming it and
# the fix.  Root needed; without BPF the probe's unit is left out (a failure
# under CI=true).
# usage: test-units-run.sh SYSTEMD_SRC_DIR BUILD_ROOT CROFTCTL
set -u
. "$(dirname "$0")/../lib/testlib.sh"
. "$(dirname "$0")/opslib.sh"
src=$1 build=$2 CROFTCTL=$3 PROBE_BIN=$2/probe/croft-probe
require_root
require_cmd setpriv jq
ops_probe_expected; probe=$?
[ $probe = 2 ] && fail "the probe cannot run on this CI host"
[ $probe = 0 ] || echo "# the probe cannot run here: its unit is left out"
ops_setup
user=croft; getent passwd croft >/dev/null || user=nobody
group=$(id -gn "$user")
R=$TEST_TMP/run/croft
mkdir -p "$R" "$TEST_TMP/lib/croft"
chown "root:$group" "$R"; chmod 750 "$R"               # tmpfiles.d
chown "$user:$group" "$TEST_TMP/lib/croft"; chmod 750 "$TEST_TMP/lib/croft"
# the sampler's StateDirectory= (StateDirectoryMode=0700, User=croft)
mkdir -p "$TEST_TMP/lib/croft-sampler"
chown "$user:$group" "$TEST_TMP/lib/croft-sampler"; chmod 700 "$TEST_TMP/lib/croft-sampler"
echo "# running as $user:$group"
printf '[writer]\ndata_dir = %s\n' "$TEST_TMP/lib/croft" >"$C"
export CROFT_CONFIG=$C

# key VALUE of a unit (the last assignment; "" when absent)
unit_key() { sed -n "s/^$2=//p" "$src/$1.service.in" | tail -n 1; }
# ExecStart with continuations joined and the paths moved into $TEST_TMP
unit_exec() {
	sed -e ':a' -e '/\\$/N; s/\\\n[[:space:]]*/ /; ta' "$src/$1.service.in" |
		sed -n 's/^ExecStart=//p' |
		sed -e "s|@sbindir@/croft-\([a-z]*\)|$build/\1/croft-\1|" \
		    -e "s|/run/croft|$R|g" \
		    -e "s|/var/lib/croft-sampler|$TEST_TMP/lib/croft-sampler|g" \
		    -e "s|--user croft|--user $user|"
}
# "CAP_BPF CAP_PERFMON" -> "+bpf,+perfmon"
caps() { local out=; for c in $1; do out="$out,+$(echo "${c#CAP_}" | tr A-Z a-z)"; done; echo "${out#,}"; }

start_unit() { # start_unit NAME: as the unit would, per User=, caps, RuntimeDirectory=
	local name=$1 u rdir bound amb cmd
	u=$(unit_key "$name" User)
	rdir=$R/${name#croft-}
	mkdir -p "$rdir"; chmod 750 "$rdir"
	if [ -n "$u" ]; then chown "$user:$group" "$rdir"; else chown "root:$group" "$rdir"; fi
	bound=$(caps "$(unit_key "$name" CapabilityBoundingSet)")
	amb=$(caps "$(unit_key "$name" AmbientCapabilities)")
	cmd=$(unit_exec "$name")
	echo "# $name: ${u:-root}, bounding {$bound}, ambient {$amb}: $cmd"
	local opts=(--regid "$group" --clear-groups --bounding-set "-all${bound:+,$bound}"
		--inh-caps "-all${amb:+,$amb}")
	[ -n "$amb" ] && opts+=(--ambient-caps "$amb")
	[ -n "$u" ] && opts+=(--reuid "$user")
	setpriv "${opts[@]}" $cmd >"$TEST_TMP/$name.log" 2>&1 &
	eval "pid_${name#croft-}=\$!"
}

check "croft-writer.service sets no data_dir: croft.conf's is the one" \
	bash -c "! grep -q -- '--data-dir\|/var/lib/croft' <<<'$(unit_exec croft-writer)'"
gen=$TEST_TMP/generator
mkdir -p "$gen"
check "croft-generator: croft.conf's data_dir is writable by croft-writer.service" \
	bash -c "'$build/systemd/croft-generator' '$gen' &&
		grep -qxF 'ReadWritePaths=-$TEST_TMP/lib/croft' '$gen/croft-writer.service.d/croft-data-dir.conf' &&
		grep -qxF 'RequiresMountsFor=$TEST_TMP/lib/croft' '$gen/croft-writer.service.d/croft-data-dir.conf'"
: >"$TEST_TMP/empty.conf"
check "croft-generator: the default data_dir needs no drop-in" \
	bash -c "rm -rf '$gen'/* && CROFT_CONFIG='$TEST_TMP/empty.conf' '$build/systemd/croft-generator' '$gen' 2>&1 &&
		[ -z \"\$(ls '$gen')\" ]"

# A data_dir the croft user may not write: the writer refuses, naming it.
bad=$TEST_TMP/rootonly
mkdir -p "$bad"; chmod 755 "$bad"
printf '[writer]\ndata_dir = %s\n' "$bad" >"$TEST_TMP/bad.conf"
bad_out=$(CROFT_CONFIG=$TEST_TMP/bad.conf timeout 30 setpriv --reuid "$user" --regid "$group" --clear-groups \
	$(unit_exec croft-writer | sed "s|$R/writer|$TEST_TMP/badrun|") 2>&1)
bad_rc=$?
echo "$bad_out" | sed 's/^/# refused: /'
refused_well() {
	[ "$bad_rc" = 1 ] && [ "$(grep -c . <<<"$bad_out")" = 1 ] &&
		grep -qF "data_dir $bad: cannot write there (Permission denied)" <<<"$bad_out" &&
		grep -qF "install -d -o croft -g croft -m 0750 $bad" <<<"$bad_out"
}
check "croft-writer refuses a data_dir it cannot write: exit 1, one line naming it and the fix" refused_well

daemons="writer sampler"
[ $probe = 0 ] && daemons="writer probe sampler"
pid_probe=
for d in $daemons; do start_unit "croft-$d"; done
OPS_CLEANUP_EXTRA='kill $pid_sampler $pid_probe $pid_writer 2>/dev/null'
for d in $daemons; do
	check "croft-$d up under its unit's user and capabilities" wait_for "ops_up croft-$d" 30
done
if [ $probe = 0 ]; then
	check "croftctl finds all three in their per-unit runtime directories" quiet ctl status
fi
check "the sampler reaches the writer across runtime directories" \
	wait_for '[ "$(ops_field croft-sampler .status.writer)" = connected ]' 30
if [ $probe = 0 ]; then
	check "the sampler reaches the probe across runtime directories" \
		wait_for '[ "$(ops_field croft-sampler .status.probe)" = connected ]' 30
fi
check "rows reach the dataset" wait_for "[ -s '$TEST_TMP/lib/croft/croft-dataset.jsonl' ]" 30
for d in sampler probe writer; do
	eval "p=\$pid_$d"
	[ -n "$p" ] || continue
	kill -TERM "$p"; wait "$p"; rc=$?
	check "croft-$d exits 0 on SIGTERM" [ $rc = 0 ]
done
if [ "$fails" -gt 0 ]; then
	for d in $daemons; do sed "s/^/# $d: /" "$TEST_TMP/croft-$d.log" | tail -n 15; done
fi
finish
