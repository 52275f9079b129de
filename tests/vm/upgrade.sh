# upgrade.sh: sourced by checks.sh (root, in the VM) on the kernel vm.sh
# gave two packages, N (installed by croft-vm-run) and N+1, built from the
# same tree.  Boot 1: croft.conf edited, a busy process in a container's
# scope, N+1 installed over N with apt -> the edit kept, the units running
# the new binaries, the busy process's rows continuous across the restart
# (none doubled, none lost beyond one poll, their CPU time the kernel's);
# then the writer stopped while the sampler spools, the sampler stopped,
# a label set, and a reboot (exit 200).  Boot 2: the spooled polls' rows in
# the dataset exactly once, the label still on the container's rows, then
# apt remove and apt purge keep what the README says.  Prints TAP, going on
# from checks.sh's count.
state=/croft-vm/upgrade-state
read -r _ deb_next _ <<<"$CROFT_VM_DEBS"
next_version=$(dpkg-deb -f "/croft-vm/debs/$deb_next" Version)
up_id=5eb00f1e$(printf '%056d' 0)
up_unit=docker-$up_id.scope
up_cg=/system.slice/$up_unit
# 1 s polls: the upgrade's restart must cost at most one (continuity.py's POLL_MS)
edited_conf='[sampler]
poll_interval = 1s
[probe]
gpu_devices = 1:7
[writer]
retention_age = 90d'

# status_figure DAEMON KEY: a top-level key of croftctl status --json's row
# for DAEMON, or of its figures ("status.KEY")
status_figure() {
	croftctl status --json 2>/dev/null | python3 -c '
import json, sys
row = next(r for r in json.load(sys.stdin)["daemons"] if r["daemon"] == sys.argv[1])
for k in sys.argv[2].split("."):
    row = row.get(k, "") if isinstance(row, dict) else ""
print(row)' "$1" "$2"
}

# check runs each test in a subshell: what the next one needs goes to files.
# start_busy: a CPUQuota=20% loop in the container's scope (a row every
# poll), its pid in /croft-vm/up-busy.pid, its schedstat CPU time logged to
# /tmp/up-cpu.log
start_busy() {
	local pid
	systemd-run -q --scope --unit "$up_unit" -p CPUQuota=20% \
		python3 -c 'while True: pass' </dev/null >/dev/null 2>&1 &
	pid=$!
	echo "$pid" >/croft-vm/up-busy.pid
	wait_until 60 test -d "$cpu_root/$up_unit" || { echo "no $up_unit"; return 1; }
	python3 "$here/continuity.py" cpulog "$pid" /tmp/up-cpu.log >/dev/null 2>&1 &
	echo "busy loop: pid $pid in $up_cg"
}
busy_pid() { cat /croft-vm/up-busy.pid; }

sampler_start_ms() { # the realtime ms the running croft-sampler was started at
	local mono_us up_s
	mono_us=$(prop croft-sampler ExecMainStartTimestampMonotonic)
	read -r up_s _ </proc/uptime
	echo $(($(now_ms) - ${up_s/./}0 + mono_us / 1000))
}

t_up_running() {
	printf '%s\n' "$edited_conf" >"$conf"
	cp "$conf" /croft-vm/edited.conf
	systemctl start "${units[@]}" || return 1
	for u in "${units[@]}"; do wait_until 120 is_active "$u" || { unit_diag "$u"; return 1; }; done
	start_busy || return 1
	python3 "$here/rows.py" wait "$up_cg" 3 180 >/tmp/up-before.json ||
		{ echo "fewer than 3 rows of $up_cg"; return 1; }
	echo "$(wc -l </tmp/up-before.json) rows of the busy loop under $(status_figure croft-writer version)"
}

t_up_install() {
	local u
	for u in "${units[@]}"; do echo "$u $(prop "$u" MainPID)"; done >/tmp/up-old-pids
	(cd /croft-vm/debs && DEBIAN_FRONTEND=noninteractive apt-get install -y -q \
		-o APT::Default-Release= -o Dpkg::Use-Pty=0 --no-install-recommends "./$deb_next" </dev/null 2>&1) | tail -n 12
	[ "${PIPESTATUS[0]}" = 0 ] &&
		[ "$(dpkg-query -W -f='${Version} ${db:Status-Status}' croft)" = "$next_version installed" ]
}

t_up_conf_kept() {
	ls /etc/croft/
	cmp "$conf" /croft-vm/edited.conf && ! ls /etc/croft/croft.conf.dpkg-* 2>/dev/null
}

t_up_new_binaries() {
	local u pid old exe ver ok=0
	for u in "${units[@]}"; do
		wait_until 120 is_active "$u" || { unit_diag "$u"; ok=1; continue; }
		pid=$(prop "$u" MainPID)
		old=$(sed -n "s/^$u //p" /tmp/up-old-pids)
		exe=$(readlink "/proc/$pid/exe")
		ver=$(status_figure "$u" version)
		echo "$u: MainPID $old -> $pid, exe $exe, croftctl status version $ver"
		[ "$pid" != "$old" ] && [ "$exe" = "/usr/sbin/$u" ] && [ "$ver" = "$next_version" ] || ok=1
	done
	return $ok
}

t_up_edit_in_force() {
	local t
	t=$(date +%s)
	croftctl reload >/dev/null || return 1
	wait_until 60 eval 'journal_since croft-writer "$t" | grep -q "retention 7776000000 ms"' ||
		{ journal_since croft-writer "$t" | tail -n 3; return 1; }
	journal_since croft-writer "$t" | grep retention
}

t_up_rows_across() {
	local start_ms
	start_ms=$(sampler_start_ms)
	python3 "$here/rows.py" wait "$up_cg" 4 180 --since "$start_ms" >/dev/null ||
		{ echo "fewer than 4 rows after the upgrade"; return 1; }
	python3 "$here/continuity.py" across "$(busy_pid)" /tmp/up-cpu.log "$start_ms"
}

t_spooled() {
	local b
	wait_until 60 eval '[ "$(status_figure croft-sampler status.batches_unacked)" -ge 5 ]'
	b=$(status_figure croft-sampler status.batches_unacked)
	echo "$b" >/tmp/up-batches
	echo "croftctl status: $b batches unacked, spool_bytes $(status_figure croft-sampler status.spool_bytes), spool_persistent $(status_figure croft-sampler status.spool_persistent)"
	[ "$b" -ge 5 ]
}

t_label_set() {
	local since
	since=$(now_ms)
	croftctl label "$up_id" exp-reboot || return 1
	wait_until 60 eval 'python3 "$here/continuity.py" labelled "$up_cg" exp-reboot "$since" >/dev/null'
	python3 "$here/continuity.py" labelled "$up_cg" exp-reboot "$since"
}

if [ "${CROFT_VM_BOOT:-1}" = 1 ]; then
	echo "# --- the upgrade: croft $deb_version -> $next_version, then a reboot ---"
	check "croft $deb_version running with an edited croft.conf (retention_age = 90d), a busy loop's rows" t_up_running
	check "apt-get install ./$deb_next over $deb_version: croft $next_version installed" t_up_install
	check "the upgrade kept the edited croft.conf (no .dpkg-dist beside it)" t_up_conf_kept
	check "each unit restarted on the new binary: /proc/<MainPID>/exe, croftctl status version $next_version" \
		t_up_new_binaries
	check "the new croft-writer runs the kept edit: retention 90 d after croftctl reload" t_up_edit_in_force
	check "the busy loop's rows across the upgrade: none doubled, at most one poll lost, CPU = schedstat" \
		t_up_rows_across
	check "croftctl label before the reboot: the container's rows carry it" t_label_set
	systemctl stop croft-writer
	writer_stop_ms=$(now_ms)
	check "croft-writer stopped: the sampler spools its polls (croftctl status batches_unacked >= 5)" t_spooled
	# the last count read before the stop: one more poll may come before it
	systemctl stop croft-sampler
	sampler_stop_ms=$(now_ms)
	echo "# croft-sampler's last lines: $(journal_since croft-sampler $((writer_stop_ms / 1000)) | tail -n 3 | tr '\n' '|')"
	printf 'n=%s failed=%s busy_pid=%s writer_stop_ms=%s sampler_stop_ms=%s batches=%s\n' \
		"$n" "$failed" "$(busy_pid)" "$writer_stop_ms" "$sampler_stop_ms" \
		"$(cat /tmp/up-batches 2>/dev/null || echo 0)" >"$state"
	echo "# rebooting with croft-writer and croft-sampler stopped"
	exit 200
fi

# --- boot 2 ---
. <(tr ' ' '\n' <"$state")
t_units_back() {
	local u
	for u in "${units[@]}"; do wait_until 180 is_active "$u" || { unit_diag "$u"; return 1; }; done
	echo "all three active after the reboot"
}

# every poll the sampler spooled while the writer was down: the busy loop
# had a row in each; once written they are there exactly once ($batches
# read before the sampler's stop, one more poll may have come before it)
spooled_rows() { python3 "$here/continuity.py" window "$busy_pid" "$writer_stop_ms" "$sampler_stop_ms" "$1"; }
t_spool_written() {
	[ "$batches" -ge 5 ] || { echo "only $batches batches were spooled before the reboot"; return 1; }
	wait_until 120 eval 'spooled_rows "$batches" >/dev/null'
	echo "croftctl status said $batches batches unacked before the sampler's stop"
	spooled_rows "$batches"
}

t_label_kept() {
	local since
	since=$(now_ms)
	start_busy || return 1
	wait_until 60 eval 'python3 "$here/continuity.py" labelled "$up_cg" exp-reboot "$since" >/dev/null'
	python3 "$here/continuity.py" labelled "$up_cg" exp-reboot "$since"
}

# croft.conf(5)'s steps to move the dataset (data_dir): first without daemon-reload (the
# unit's sandbox refuses, and the writer says so in one line), then with it.
moved=/srv/croft
t_move_refused() {
	local t
	install -d -o croft -g croft -m 0750 "$moved" || return 1
	systemctl stop croft-sampler croft-writer
	mv /var/lib/croft/croft-dataset* "$moved"/
	printf '%s\ndata_dir = %s\n' "$edited_conf" "$moved" >"$conf"
	cp "$conf" /croft-vm/edited.conf
	t=$(date +%s)
	systemctl start croft-writer
	wait_until 60 eval 'journal_since croft-writer "$t" | grep -qF "data_dir $moved: cannot write there"'
	journal_since croft-writer "$t" | grep -F "data_dir $moved" | tail -n 1
	! is_active croft-writer && journal_since croft-writer "$t" | grep -qF "data_dir $moved: cannot write there"
}

t_move_works() {
	local since
	systemctl stop croft-writer # its Restart= loop
	systemctl reset-failed croft-writer
	systemctl daemon-reload
	systemctl cat croft-writer | grep -E "ReadWritePaths|RequiresMountsFor"
	systemctl start croft-writer croft-sampler || { unit_diag croft-writer; return 1; }
	since=$(now_ms)
	wait_until 120 eval '[ "$(tail -n 1 "$moved/croft-dataset.jsonl" 2>/dev/null | python3 -c "import json,sys; print(json.loads(sys.stdin.read())[\"unix_ms\"])" 2>/dev/null || echo 0)" -ge "$since" ]' ||
		{ echo "no new rows in $moved"; ls -l "$moved"; return 1; }
	croft stats --json >/croft-vm/stats.json 2>/dev/null || return 1
	python3 - /croft-vm/stats.json <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
inp = doc["input"]
print(f"croft stats with no path: {inp['files']} files, {inp['rows_read']} rows")
sys.exit(0 if inp["files"] >= 1 and inp["rows_read"] > 0 else 1)
PY
}

t_remove() {
	DEBIAN_FRONTEND=noninteractive apt-get remove -y -q -o Dpkg::Use-Pty=0 -o APT::Default-Release= croft </dev/null 2>&1 | tail -n 4
	local u ok=0
	for u in "${units[@]}"; do
		echo "$u: $(systemctl is-active "$u")"
		[ "$(systemctl is-active "$u")" != active ] || ok=1
	done
	cmp "$conf" /croft-vm/edited.conf && ls "$moved" | head -n 4 && [ -s "$moved/croft-dataset.jsonl" ] &&
		[ -d /var/lib/croft ] && getent passwd croft && [ $ok = 0 ]
}

t_purge() {
	local out
	out=$(DEBIAN_FRONTEND=noninteractive apt-get purge -y -q -o Dpkg::Use-Pty=0 -o APT::Default-Release= croft </dev/null 2>&1)
	echo "$out" | tail -n 9
	grep -q 'Kept, as data' <<<"$out" && [ ! -e /etc/croft/croft.conf ] && [ ! -e /run/croft ] &&
		[ -s "$moved/croft-dataset.jsonl" ] && [ -d /var/lib/croft ] && getent passwd croft >/dev/null
}

echo "# --- after the reboot ---"
check "croft-writer, croft-sampler and croft-probe start at boot" t_units_back
check "the polls spooled while croft-writer was down are in the dataset, once each" t_spool_written
check "the label set before the reboot is on the container's rows after it" t_label_kept
check "data_dir moved to $moved without daemon-reload: croft-writer refuses in one line naming it" t_move_refused
check "after daemon-reload the writer writes $moved (croft-generator's drop-in); croft stats reads it" t_move_works
kill "$(busy_pid)" 2>/dev/null
check "apt remove: units stopped; croft.conf, the dataset and the croft user kept" t_remove
check "apt purge: croft.conf and /run/croft gone; the dataset and the croft user kept, the message says so" t_purge
echo "1..$n"
echo "# $((n - failed)) passed, $failed failed"
exit $((failed > 0))
