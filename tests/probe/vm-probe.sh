#!/bin/bash
# vm-probe.sh: croft-probe on the kernel it boots, run inside the Debian 12
# VM (tests/vm/vm.sh --run, with --copy of tests/probe and the build's
# probe-work and net-work), as root under systemd.  The unit itself: starts,
# its fallbacks logged and in croftctl status, CapEff after the drop; the
# probe tests with the unit's capability set (no CAP_SYS_ADMIN); and rows:
# a 1 MiB/s loopback TCP sender shows network_tx_bytes_s 1 MiB/s +-10%.
# Prints TAP; exits 1 on any failure.
set -u
cd "$(dirname "$0")"
n=0 failed=0
ok() { # ok COND-STATUS NAME [DETAIL]
	n=$((n + 1))
	if [ "$1" = 0 ]; then echo "ok $n - $2${3:+  # $3}"; else echo "not ok $n - $2${3:+  # $3}"; failed=$((failed + 1)); fi
}
PROBE=/usr/local/sbin/croft-probe
WORK=$PWD/probe-work NETWORK=$PWD/net-work
# croft-probe.service's bounding set, plus CAP_CHOWN for the tests' own runtime
# directory (the unit's is made by systemd): no CAP_SYS_ADMIN either way
CAPS=-all,+bpf,+perfmon,+setuid,+setgid,+setpcap,+chown
echo "# kernel $(uname -r)"

systemd-sysusers >/dev/null && systemd-tmpfiles --create >/dev/null 2>&1
systemctl daemon-reload
systemctl start croft-writer croft-probe croft-sampler
sleep 3
active=$(systemctl is-active croft-probe)
ok "$([ "$active" = active ]; echo $?)" "croft-probe.service is active" "$active"
journalctl -b -u croft-probe --no-pager -o cat | sed 's/^/# journal: /'
pid=$(systemctl show -p MainPID --value croft-probe)
capeff=$(awk '/^CapEff/ {print $2}' /proc/"$pid"/status 2>/dev/null)
echo "# croft-probe pid $pid CapEff $capeff"
croftctl status | sed -n '/^croft-probe/,$p' | grep -E 'programs|fallbacks|net\.|capabilities' |
	sed 's/^/# status: /'

# rows from the units: 1 MiB/s for 12 s over loopback TCP
"$WORK" recv 47313 >recv.out &
recv=$!
while ! grep -q listening recv.out 2>/dev/null; do sleep 0.2; done
"$WORK" send 47313 1048576 12 &
send=$!
wait $send $recv
sleep 5 # two polls past the end
python3 - "$send" <<'EOF'
import glob, json, sys
pid = int(sys.argv[1])
rows = []
for path in sorted(glob.glob('/var/lib/croft/**/*.jsonl', recursive=True)):
    with open(path) as f:
        rows += [r for r in map(json.loads, f) if r.get('tgid') == pid]
rows.sort(key=lambda r: r['unix_ms'])
vals = [r['usage']['network_tx_bytes_s'] for r in rows[2:-1] if 'network_tx_bytes_s' in r['usage']]
mean = sum(vals) / len(vals) if vals else 0
print('# sender rows %d, network_tx_bytes_s %s' % (len(rows), ' '.join('%.0f' % v for v in vals)))
print('# mean %.0f' % mean)
sys.exit(0 if abs(mean - 1048576) <= 0.1 * 1048576 else 1)
EOF
ok $? "rows from the units: a 1 MiB/s sender has network_tx_bytes_s 1048576 +-10%"
systemctl stop croft-sampler croft-probe croft-writer

# the probe tests, croft-probe run with the unit's capability set
printf '#!/bin/sh\nexec setpriv --bounding-set=%s --inh-caps=-all %s "$@"\n' "$CAPS" "$PROBE" >capped-probe
chmod +x capped-probe
for t in lifecycle exact gpu-ioctl net; do
	arg=$WORK
	[ $t = net ] && arg=$NETWORK
	out=$(python3 probe/test-$t.py ./capped-probe "$arg" 2>&1)
	rc=$?
	echo "$out" | sed 's/^/# /'
	ok $rc "tests/probe/test-$t.py, capped as the unit"
done

# kretprobes need perf_event_open, which this kernel's paranoid level may
# keep from the capped probe: as full root here
echo "# kernel.perf_event_paranoid $(cat /proc/sys/kernel/perf_event_paranoid)"
out=$(TEST_NET_SOURCES=kretprobe python3 probe/test-net.py "$PROBE" "$NETWORK" 2>&1)
rc=$?
echo "$out" | sed 's/^/# /'
ok $rc "tests/probe/test-net.py, kretprobe as full root"
echo "1..$n"
[ $failed = 0 ]
