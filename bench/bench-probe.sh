#!/bin/sh
# bench-probe.sh: what croft-probe adds to a syscall and to a context switch,
# beside bpftrace and a minimal per-CPU-hash raw_tp counter, in one run:
# a getppid() loop and a pipe ping-pong, both pinned to CPU 0, best of
# ROUNDS.  The ping-pong makes two syscalls per switch, which croft counts
# too: it is compared with bpftrace counting sched_switch alone (the
# reference) and with bpftrace doing croft's work (sys_enter per (pid, id)
# and sched_switch per pid).  Needs root, BPF and bpftrace; BUILD names the
# build directory.
set -eu
. bench/benchlib.sh

BUILD=${BUILD:-build}
N=${N:-3000000}          # getppid() calls per round
PP=${PP:-200000}         # ping-pong round trips per round
ROUNDS=${ROUNDS:-5}
PROBE=$BUILD/probe/croft-probe
LOOP=$BUILD/bench/probe-bench
MINCOUNT=$BUILD/bench/probe-mincount

[ "$(id -u)" = 0 ] || { echo "bench-probe: needs root (eBPF)"; exit 0; }
[ -x "$PROBE" ] && [ -x "$MINCOUNT" ] || { echo "bench-probe: croft-probe not built"; exit 0; }
command -v bpftrace >/dev/null || { echo "bench-probe: needs bpftrace (apt-get install bpftrace)"; exit 0; }
# bpftrace's tracepoint: probes need tracefs
[ -d /sys/kernel/tracing/events ] || mount -t tracefs nodev /sys/kernel/tracing

tool_bench_setup bench-probe
TOOL_SIGNAL=INT # bpftrace prints its maps and detaches on Ctrl-C

# wait_line FILE TEXT: until FILE holds TEXT (the tool attached), 30 s at most
wait_line() {
	i=0
	until grep -q "$2" "$1" 2>/dev/null; do
		i=$((i + 1))
		[ $i -lt 600 ] || { echo "bench-probe: no '$2' in $1"; cat "$1"; exit 1; }
		sleep 0.05
	done
}

start_tool() {
	bpftool -j prog show 2>/dev/null | python3 -c '
import json, sys
print(" ".join(str(p["id"]) for p in json.load(sys.stdin)))' >"$TMP/ids"
	case $1 in
	nothing) TOOL_PID= ;;
	croft)
		: >"$TMP/croft.conf"
		"$PROBE" -c "$TMP/croft.conf" -r "$TMP/run" >"$TMP/out" 2>&1 &
		TOOL_PID=$!
		wait_line "$TMP/out" attached ;;
	mincount)
		"$MINCOUNT" >"$TMP/out" 2>&1 &
		TOOL_PID=$!
		wait_line "$TMP/out" ready ;;
	bpftrace-syscalls)
		bpftrace -e 'tracepoint:raw_syscalls:sys_enter { @[pid, args->id] = count(); }' \
			>"$TMP/out" 2>&1 &
		TOOL_PID=$!
		wait_line "$TMP/out" Attaching ;;
	bpftrace-switch)
		bpftrace -e 'tracepoint:sched:sched_switch { @[pid] = count(); }' >"$TMP/out" 2>&1 &
		TOOL_PID=$!
		wait_line "$TMP/out" Attaching ;;
	bpftrace-both)
		bpftrace -e 'tracepoint:raw_syscalls:sys_enter { @s[pid, args->id] = count(); }
			tracepoint:sched:sched_switch { @w[pid] = count(); }' >"$TMP/out" 2>&1 &
		TOOL_PID=$!
		wait_line "$TMP/out" Attaching ;;
	esac
	sleep 0.3
}

# Programs already attached by others (another croft-probe, bpftrace...) are
# paid by every run below, "nothing" included: say so.
foreign=$(bpftool link show 2>/dev/null | grep -cE "tp '(sys_enter|sched_switch)'" || true)
[ "${foreign:-0}" = 0 ] ||
	echo "bench-probe: warning: $foreign other programs on sys_enter/sched_switch; every figure pays them"


echo "bench-probe: getppid x $N and ping-pong x $PP, pinned to CPU 0 (SCHED_FIFO), fastest chunk, best of $ROUNDS interleaved rounds"
# Tools interleaved round by round, the fastest round per tool kept: a slow
# drift in what else the host runs then weighs on every tool alike.
round=0
while [ $round -lt "$ROUNDS" ]; do
	for tool in nothing croft bpftrace-syscalls mincount; do
		start_tool $tool
		echo "$tool $("$LOOP" getppid "$N")" >>"$TMP/syscall.all"
		if [ $round = 0 ]; then
			# the programs' own time per run, stats on only for this
			echo 1 >/proc/sys/kernel/bpf_stats_enabled
			"$LOOP" getppid "$N" >/dev/null
			case $tool in
			croft) echo "croft $(prog_ns "$TMP/ids" sys_enter_btf sys_enter_raw ioctl_btf ioctl_raw)" >>"$TMP/prog" ;;
			bpftrace-syscalls) echo "bpftrace $(prog_ns "$TMP/ids" sys_enter)" >>"$TMP/prog" ;;
			mincount) echo "mincount $(prog_ns "$TMP/ids" count_enter)" >>"$TMP/prog" ;;
			esac
			echo 0 >/proc/sys/kernel/bpf_stats_enabled
		fi
		stop_tool
	done
	for tool in nothing croft bpftrace-switch bpftrace-both; do
		start_tool $tool
		echo "$tool $("$LOOP" pingpong "$PP")" >>"$TMP/switch.all"
		if [ $round = 0 ] && [ $tool = croft ]; then
			echo 1 >/proc/sys/kernel/bpf_stats_enabled
			"$LOOP" pingpong "$PP" >/dev/null
			echo "croft-switch $(prog_ns "$TMP/ids" switch_btf switch_raw)" >>"$TMP/prog"
			echo 0 >/proc/sys/kernel/bpf_stats_enabled
		fi
		stop_tool
	done
	round=$((round + 1))
done
for f in syscall switch; do
	awk '!($1 in m) || $2 < m[$1] { m[$1] = $2 } END { for (t in m) print t, m[t] }' \
		"$TMP/$f.all" >"$TMP/$f"
done

awk '
	{ ns[$1] = $2 }
	END {
		base = ns["nothing"]
		printf "syscall  getppid bare                  %7.1f ns\n", base
		printf "syscall  + croft-probe                 %+7.1f ns\n", ns["croft"] - base
		printf "syscall  + bpftrace @[pid,id]=count()  %+7.1f ns\n", ns["bpftrace-syscalls"] - base
		printf "syscall  + minimal per-CPU-hash raw_tp %+7.1f ns\n", ns["mincount"] - base
		printf "syscall  croft / bpftrace  %.2f (goal <= 1)\n", (ns["croft"] - base) / (ns["bpftrace-syscalls"] - base)
		printf "syscall  croft / minimal   %.2f (goal <= 1.3)\n", (ns["croft"] - base) / (ns["mincount"] - base)
	}' "$TMP/syscall"
awk '{ ns[$1] = $2 } END {
	printf "program  own time per sys_enter (bpf_stats): croft %.1f ns (syscalls + ioctl programs), bpftrace %.1f ns, minimal %.1f ns\n", ns["croft"], ns["bpftrace"], ns["mincount"]
	if (ns["croft-switch"] > 0)
		printf "program  own time per sched_switch (bpf_stats): croft %.1f ns\n", ns["croft-switch"]
	else
		printf "program  own time per sched_switch: none, croft has no program there (tp_btf: it reads the kernel per-thread counts at each answer)\n"
}' "$TMP/prog"
awk -v sys_add="$(awk '$1=="croft"{c=$2} $1=="nothing"{n=$2} END{print c-n}' "$TMP/syscall")" '
	{ ns[$1] = $2 }
	END {
		base = ns["nothing"]
		printf "switch   pipe ping-pong bare           %7.1f ns per switch\n", base
		printf "switch   + croft-probe (all programs)  %+7.1f ns\n", ns["croft"] - base
		printf "switch   + croft, less its 2 syscalls  %+7.1f ns (sched programs alone)\n", ns["croft"] - base - 2 * sys_add
		printf "switch   + bpftrace sched_switch count %+7.1f ns\n", ns["bpftrace-switch"] - base
		printf "switch   + bpftrace sys_enter @[pid,id] and sched_switch @[pid] (croft'"'"'s work) %+7.1f ns\n", ns["bpftrace-both"] - base
		printf "switch   croft / bpftrace sched_switch  %.2f (goal <= 1)\n", (ns["croft"] - base) / (ns["bpftrace-switch"] - base)
		printf "switch   croft / bpftrace like for like %.2f\n", (ns["croft"] - base) / (ns["bpftrace-both"] - base)
	}' "$TMP/switch"
