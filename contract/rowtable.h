/*
 * rowtable.h: the row table, every field of a croft-dataset row in the
 * order rows list them, one list per object, each field with what it
 * means for a user: croft-dataset(5)'s FIELDS and the JSON Schema's
 * descriptions are generated from it at build time.  Included by
 * rowdef.h, which defines the columns' types.
 *
 * X(object, id, "name", type, omit, left_by, description):
 * - object: the field's object (ROOT, or the id of a field of type
 *   RT_OBJECT or RT_OBJECT_ARRAY, whose fields are ROW_FIELDS_<id>);
 * - omit: when rows leave it out (enum row_omit);
 * - left_by: who lists it in a status's left_out when it cannot be given
 *   on this host (enum row_left_by bits);
 * - description: scdoc text, starting with the type as a reader sees it;
 *   "\n" starts a new paragraph; NULL for an object (named by its fields)
 *   and for a field described with the one before it (one heading names
 *   both, as usage.read_bytes_s and usage.write_bytes_s).
 */
#ifndef CROFT_ROWTABLE_H
#define CROFT_ROWTABLE_H

/* The prefix of an object's fields in their dotted names ("usage.cpu_cores"). */
#define ROW_PATH_ROOT         ""
#define ROW_PATH_PROCESS      "process."
#define ROW_PATH_USAGE        "usage."
#define ROW_PATH_CGROUP_USAGE "cgroup_usage."
#define ROW_PATH_SYSCALLS     "syscalls[]."

#define ROW_FIELDS_ROOT(X)                                                                         \
	X(ROOT, UNIX_MS, "unix_ms", RT_INT, RO_NEVER, RL_NONE,                                     \
		"Integer, milliseconds since the Unix epoch: the poll's wall clock, the "          \
		"same for every row of a poll.")                                                   \
	X(ROOT, SPAN_MS, "span_ms", RT_INT, RO_OLDER, RL_NONE,                                     \
		"Integer, milliseconds: the time this row's rates cover, from the process's "      \
		"previous row to this one (for its first row, what the sampler counted it "        \
		"over). Over any process's rows, rate times *span_ms* / 1000 adds up to "          \
		"what it did, and *span_ms* adds up to the time it was watched. Rows of "          \
		"older datasets lack it (see READING IT).")                                        \
	X(ROOT, TGID, "tgid", RT_INT, RO_NEVER, RL_NONE,                                           \
		"Integer: the process id. A process is (*host*, *tgid*, "                          \
		"*process.start_ms*); a reused tgid starts over.")                                 \
	X(ROOT, HOST, "host", RT_STRING, RO_OLDER, RL_NONE,                                        \
		"String: the host that wrote the row: *host* in *croft.conf*(5), by default "      \
		"the kernel's node name (uname -n; on a Kubernetes node the node name). "          \
		"Rows of older datasets lack it.")                                                 \
	X(ROOT, PROCESS, "process", RT_OBJECT, RO_NEVER, RL_NONE, NULL)                            \
	X(ROOT, WORKLOAD, "workload", RT_STRING, RO_NONE, RL_NONE,                                 \
		"String: *no-gpu*, *gpu-onset* or *gpu-held* (see GPU STATES). Left out in "       \
		"the *vanished* row of a process no poll read (see *exited*): what the probe "     \
		"saw of its GPU use goes with its final figures, which never came. *croft "        \
		"stats* counts such a row with the no-gpu rows.")                                  \
	X(ROOT, IOCTL_COUNT, "ioctl_count", RT_INT, RO_NO_GPU, RL_PROBE_IOCTL | RL_GPU_DEVICE,     \
		"Integer: GPU ioctls the process made this poll. From the probe. Left out "        \
		"for no-gpu processes, without the probe, on a host without a GPU device, "        \
		"and in a poll whose probe answer lost counts (a full map: the probe's "           \
		"figures are left out, never written as 0).")                                      \
	X(ROOT, SINCE_LAST_GPU_IOCTL_MS, "since_last_gpu_ioctl_ms", RT_INT, RO_NONE,               \
		RL_PROBE_IOCTL | RL_GPU_DEVICE,                                                    \
		"Integer, milliseconds from the process's last GPU ioctl to this poll. From "      \
		"the probe. Left out while none has been seen.")                                   \
	X(ROOT, GPU_WAIT_COUNT, "gpu_wait_count", RT_INT, RO_NO_GPU, RL_PROBE_GPUFILE,             \
		"Integer: waits on GPU files this poll: poll, ppoll, select and pselect6 "         \
		"calls on a set holding a GPU fd, and epoll waits on an epoll set a GPU fd "       \
		"was added to, each counted when it begins; and GPU ioctls the thread slept "      \
		"in, counted when they return (*croft-probe*(8), GPU FILES, says what this "       \
		"cannot tell). From the probe. Left out as *ioctl_count* is, where the "           \
		"probe cannot count them (*croftctl status* left_out), and in a poll whose "       \
		"answer lost counts (a full probe map).")                                          \
	X(ROOT, GPU_MMAP_COUNT, "gpu_mmap_count", RT_INT, RO_NO_GPU, RL_PROBE_GPUFILE,             \
		"Integer: mmap calls on GPU files this poll. From the probe; left out as "         \
		"*gpu_wait_count*.")                                                               \
	X(ROOT, GPU_BLOCKED_THREADS, "gpu_blocked_threads", RT_INT, RO_NO_GPU, RL_PROBE_GPUFILE,   \
		"Integer: the process's threads that were inside a GPU ioctl or a wait on a "      \
		"GPU file when the probe answered the poll (work outstanding on the GPU, as "      \
		"a blocking-sync cudaStreamSynchronize). A process with one is never "             \
		"skipped as idle. From the probe; left out as *gpu_wait_count*.")                  \
	X(ROOT, GPU_ACTIVITY, "gpu_activity", RT_STRING, RO_NO_GPU, RL_NONE,                       \
		"String: *busy*, *idle* or *unknown*: whether the GPUs the process holds "         \
		"were used over the row's span (see GPU ACTIVITY). In every row of a GPU "         \
		"state; left out for no-gpu rows. Rows of older datasets lack it and read "        \
		"as *unknown*.")                                                                   \
	X(ROOT, GPU_ACTIVITY_SOURCE, "gpu_activity_source", RT_STRING, RO_NO_GPU, RL_NONE,         \
		"String: the evidence *gpu_activity* rests on: *nvml_process*, "                   \
		"*nvml_device*, *kernel* or *none* (see GPU ACTIVITY).")                           \
	X(ROOT, GPU_MEMORY_BYTES, "gpu_memory_bytes", RT_INT, RO_UNREADABLE, RL_NONE,              \
		"Integer, bytes: the GPU memory NVML reports for the process, all its GPUs "       \
		"together. Left out without NVML.")                                                \
	X(ROOT, GPU_SM_PERCENT, "gpu_sm_percent", RT_FLOAT, RO_UNREADABLE, RL_NONE,                \
		"Float, percent (0 to 100): the process's SM utilisation over the span: at "       \
		"each poll the mean of NVML's samples for it newer than NVML's round before "      \
		"(0 for a process NVML lists without one; a process on several GPUs: the "         \
		"mean over them), averaged over the span's polls. Left out without NVML and "      \
		"on GPUs in MIG mode (NVML gives none there).")                                    \
	X(ROOT, GPUS, "gpus", RT_INT_ARRAY, RO_NO_GPU, RL_GPU_DEVICE,                              \
		"Array of integers, ascending: the GPUs whose device files the process "           \
		"holds open at this poll, from reading /proc/_pid_/fd. /dev/nvidia_N_ is "         \
		"GPU _N_ (its device minor: \"Device Minor\" in "                                  \
		"/proc/driver/nvidia/gpus/\\*/information, which nvidia-smi's index follows "      \
		"on most hosts). A DRM render or card node or an accel node is the place of "      \
		"its device (/sys/dev/char/_MAJOR_:_MINOR_/device) among the devices behind "      \
		"the host's render and accel nodes, in PCI address order; a card node of a "       \
		"display-only device (a server's BMC) names none. Files shared by every GPU "      \
		"name none: nvidiactl (minor 255), nvidia-modeset (254), nvidia-uvm, "             \
		"nvidia-caps, nvidia-nvlink, nvidia-nvswitch and AMD's kfd (ROCm also opens "      \
		"the render node of each GPU it uses, and those name the GPUs); so do "            \
		"devices in the GPU set that are none of these. \"gpus\":[] is a process "         \
		"holding only such files. Left out for no-gpu rows and where the fds cannot "      \
		"be read."                                                                         \
		"\nIt lists files held, not GPUs computed on: a process that calls NVML or "       \
		"initialises CUDA on every visible GPU holds every GPU's file. Closing the "       \
		"last file of a GPU drops it at the next poll. A file opened later is seen "       \
		"at the next poll during onset and on kernels 6.2 and later (which count a "       \
		"process's open fds), otherwise within *idle_every* polls.")                       \
	X(ROOT, GPUS_ALLOCATED, "gpus_allocated", RT_INT_ARRAY, RO_UNREADABLE, RL_NONE,            \
		"Array of integers, ascending: the GPUs the kubelet allocated to the "             \
		"process's pod, all its containers together (the kubelet's device-plugin "         \
		"checkpoint, *kubelet_checkpoint* of *croft.conf*(5): each *nvidia.com/gpu* "      \
		"device's UUID, mapped to the GPU's index, as *gpus* counts it, through "          \
		"/proc/driver/nvidia/gpus/\\*/information); *[]* for a pod given none. Left "      \
		"out outside pods, where no checkpoint could be read, and for a pod whose "        \
		"devices include one the driver's files do not name (a MIG slice, "                \
		"*nvidia.com/mig-\\**): unknown, not none.")                                       \
	X(ROOT, MIG, "mig", RT_STRING_ARRAY, RO_NONE, RL_GPU_DEVICE,                               \
		"Array of strings, sorted: the MIG compute instances the process holds, "          \
		"each \"_gpu_/_gi_/_ci_\": the /dev/nvidia-caps/nvidia-cap_N_ files it holds "     \
		"open (the *nvidia-caps* major of /proc/devices) by the compute instance "         \
		"/proc/driver/nvidia-caps/mig-minors gives minor _N_. *gpus* still names "         \
		"the parent GPU. Left out otherwise, and for *no-gpu* rows.")                      \
	X(ROOT, USAGE, "usage", RT_OBJECT, RO_NEVER, RL_NONE, NULL)                                \
	X(ROOT, CGROUP_USAGE, "cgroup_usage", RT_OBJECT, RO_UNREADABLE, RL_NONE, NULL)             \
	X(ROOT, SYSCALLS, "syscalls", RT_OBJECT_ARRAY, RO_NO_PROBE, RL_PROBE_SYSCALLS,             \
		"Array of objects, one per syscall the process made this poll, highest rate "      \
		"first. From the probe.")                                                          \
	X(ROOT, LABEL, "label", RT_STRING, RO_NONE, RL_NONE,                                       \
		"String: the CROFT_LABEL variable in the process's environment, or what "          \
		"*croftctl label* set for its container. Left out otherwise.")                     \
	X(ROOT, LABEL_SOURCE, "label_source", RT_STRING, RO_NONE, RL_NONE,                         \
		"String: where *label* came from: *env* (CROFT_LABEL) or *croftctl* (which "       \
		"wins where both are set). With *label*.")                                         \
	X(ROOT, EXIT_MS, "exit_ms", RT_INT, RO_NONE, RL_PROBE_EXIT,                                \
		"Integer, milliseconds since the epoch: a last row's, when the process "           \
		"exited (its last thread's exit; a parent that reaps late does not move "          \
		"it). Its *span_ms* runs from its previous row to the exit, in whole "             \
		"milliseconds (the row's *unix_ms* is still the poll's). Left out while it "       \
		"lives, and in a *vanished* row.")                                                 \
	X(ROOT, EXIT_CODE, "exit_code", RT_INT, RO_NONE, RL_PROBE_EXIT,                            \
		"Integer: a last row's, the exit status its parent's wait(2) gives "               \
		"(WEXITSTATUS). Left out while it lives and for a process a signal ended.")        \
	X(ROOT, EXIT_SIGNAL, "exit_signal", RT_INT, RO_NONE, RL_PROBE_EXIT,                        \
		"Integer: a last row's, the signal that ended the process. Left out "              \
		"otherwise.")                                                                      \
	X(ROOT, EXITED, "exited", RT_STRING, RO_NONE, RL_NONE,                                     \
		"String: the row is the process's last. *probe*: its final figures, "              \
		"captured by the probe when the kernel freed it (after its parent's "              \
		"wait(2): the CPU time, I/O bytes and peak RSS its parent's wait4(2) rusage "      \
		"gives) over the span from its previous row to its exit; its "                     \
		"*usage.cpu_cores* x *span_ms* is the CPU time it used since that row, "           \
		"*usage.rss_bytes* is its peak RSS and *usage.threads* 0. The syscalls, "          \
		"switches, run-queue wait, network bytes and GPU ioctls it made since the "        \
		"probe's last answer are in it; its *workload* and *gpus* are those of its "       \
		"previous row. *between_polls*: the one row of a process born and gone "           \
		"between two polls, from what the probe saw: *process.start_ms*, *comm*, "         \
		"*uid*, *exe* (the path its exec(2) was given, not resolved; left out where "      \
		"it did not exec while the probe ran), *cgroup* (and so *container_id* and "       \
		"the pod), *framework* from the arguments its exec(2) was given (see "             \
		"*process.framework*), over the span from its start to its exit; *cwd* and "       \
		"*label* are left out. *vanished*: the "                                           \
		"process was gone at a poll and no final figures came for it (no probe, a "        \
		"probe without the exit concern, or its final cut or dropped: croft-probe's "      \
		"status *finals* counts those): the row says what /proc last showed, over "        \
		"the span from its previous row to the last poll that read it (0 when that "       \
		"poll wrote its row; it had done nothing since otherwise, or that poll "           \
		"would have), with *cpu_cores* 0 and no probe figures; what it did after "         \
		"that poll is unknown and no *exit_ms*, *exit_code* or *exit_signal* is "          \
		"given. A process no poll read is written vanished from the probe's record "       \
		"of its exit when its final never comes: its *comm* and *process.start_ms*, "      \
		"*span_ms* 0, nothing else. A process gone from /proc waits for its final "        \
		"figures 3 polls and at least 10 s (the kernel frees a process an RCU grace "      \
		"period after its reap, which can lag under load) before it is written as "        \
		"vanished. Left out while the process lives.")
#define ROW_FIELDS_PROCESS(X)                                                                      \
	X(PROCESS, START_MS, "start_ms", RT_INT, RO_OLDER, RL_NONE,                                \
		"Integer, milliseconds since the Unix epoch: when the process started "            \
		"(starttime of /proc/_pid_/stat plus the boot time), the same in every row "       \
		"of the process. Rows of older datasets lack it.")                                 \
	X(PROCESS, UID, "uid", RT_INT, RO_UNREADABLE, RL_NONE,                                     \
		"Integer: the process's real uid (the first Uid of /proc/_pid_/status), "          \
		"read with its identity. Left out where it could not be read. Names are the "      \
		"reader's business (*croft stats* shows them where the host's files resolve "      \
		"them).")                                                                          \
	X(PROCESS, COMM, "comm", RT_STRING, RO_NEVER, RL_NONE,                                     \
		"String: /proc/_pid_/comm, read once per process and again when it changes "       \
		"(an exec).")                                                                      \
	X(PROCESS, EXE, "exe", RT_STRING, RO_UNREADABLE, RL_NONE,                                  \
		"String: the target of /proc/_pid_/exe, read once (again at a comm change). "      \
		"Left out where it cannot be read. Kernel threads get no row.")                    \
	X(PROCESS, CGROUP, "cgroup", RT_STRING, RO_UNREADABLE, RL_NONE,                            \
		"String: the cgroup v2 path from /proc/_pid_/cgroup (on v1 and hybrid hosts "      \
		"the memory or cpu controller's path).")                                           \
	X(PROCESS, CONTAINER_ID, "container_id", RT_STRING, RO_NONE, RL_NONE,                      \
		"String: parsed from the cgroup path where the runtimes put containers, "          \
		"from the root: /system.slice/ or /machine.slice/ followed by "                    \
		"docker-_id_.scope, cri-containerd-_id_.scope, crio-_id_.scope or "                \
		"libpod-_id_.scope; /libpod_parent/libpod-_id_; /docker/_id_; and the "            \
		"cgroup right under a pod's (below). Left out for host processes. Every row "      \
		"of a container carries it, so experiments join their runs to the dataset "        \
		"by id."                                                                           \
		"\nA name counts only there, and only when root owns every directory from the "    \
		"hierarchy's root down to it (runtimes and the kubelet run as root; a "            \
		"delegated subtree, such as systemd's user@_uid_.service on cgroup v2 or a "       \
		"v1 cgroup chowned to a user, is its user's). A look-alike anywhere else (a "      \
		"user's docker-_id_.scope under user.slice, a name a container makes in its "      \
		"own cgroup) is a host process: its row shows the path in *process.cgroup* "       \
		"and has no *container_id*, *pod_uid* or *croftctl* label. A process inside "      \
		"a container is that container's, whatever it names below it (Docker in "          \
		"Docker is the outer container; so are a kind node's pods). Rootless "             \
		"containers (podman and Docker run by a user) live in the user's subtree "         \
		"and count as the user's host processes.")                                         \
	X(PROCESS, POD_UID, "pod_uid", RT_STRING, RO_NONE, RL_NONE,                                \
		"String: the UID of the Kubernetes pod the process runs in, with dashes, as "      \
		"the Kubernetes API prints *.metadata.uid*, from the kubelet's cgroup "            \
		"layout: the systemd driver's kubepods-_qos_-pod_uid_.slice (the UID's "           \
		"dashes as underscores; kubepods-pod_uid_.slice for a guaranteed pod) and "        \
		"the cgroupfs driver's /kubepods/_qos_/pod_uid_ (/kubepods/pod_uid_), "            \
		"whatever the runtime (containerd, CRI-O, cri-dockerd), from the root (a "         \
		"kubelet whose cgroup root is /kubelet: "                                          \
		"/kubelet.slice/kubelet-kubepods.slice/..., /kubelet/kubepods/...), in "           \
		"directories root made, as for *container_id*. A static pod's is the hash "        \
		"of its manifest, 32 hex digits, which its mirror pod shows in the "               \
		"annotation kubernetes.io/config.mirror. Left out outside pods.")                  \
	X(PROCESS, POD_QOS, "pod_qos", RT_STRING, RO_NONE, RL_NONE,                                \
		"String: the pod's QoS class, *guaranteed*, *burstable* or *besteffort*, "         \
		"from the same path (a guaranteed pod's slice or directory names no class). "      \
		"Left out outside pods.")                                                          \
	X(PROCESS, CWD, "cwd", RT_STRING, RO_UNREADABLE, RL_NONE,                                  \
		"String: the target of /proc/_pid_/cwd, read once (again at a comm change): "      \
		"it names the project of a host process.")                                         \
	X(PROCESS, FRAMEWORK, "framework", RT_STRING, RO_NONE, RL_NONE,                            \
		"String: the first entry of the framework catalog that matches "                   \
		"(*croft-frameworks*(5)). Left out when none matches. In a process's first "       \
		"minute it may change to an earlier entry as more is loaded (pytorch, then "       \
		"vllm); *croft stats* and *croft profile* take the process's last one for "        \
		"all its rows. A process born and gone between two polls (*exited* "               \
		"between_polls) has it from the arguments its latest exec(2) was given, the "      \
		"first 512 bytes the probe kept of them, by the catalog's *cmdline* patterns "     \
		"alone (its maps were never read); left out where none matches or the probe "      \
		"did not see its exec (it began before the probe, or was forked without one).")
#define ROW_FIELDS_USAGE(X)                                                                        \
	X(USAGE, CPU_CORES, "cpu_cores", RT_FLOAT, RO_NEVER, RL_NONE,                              \
		"Float, cores: the CPU time of all the process's threads (the kernel's "           \
		"process CPU clock, in nanoseconds, exited threads included) over the time "       \
		"the row stands for (1.0 is one core busy). Where /proc is not the "               \
		"sampler's own pid namespace, utime+stime of /proc/_pid_/stat, whole clock "       \
		"ticks.")                                                                          \
	X(USAGE, RSS_BYTES, "rss_bytes", RT_INT, RO_NEVER, RL_NONE,                                \
		"Integer, bytes: resident set size (/proc/_pid_/stat).")                           \
	X(USAGE, THREADS, "threads", RT_INT, RO_NEVER, RL_NONE,                                    \
		"Integer: threads (/proc/_pid_/stat).")                                            \
	X(USAGE, CTX_VOLUNTARY_S, "ctx_voluntary_s", RT_FLOAT, RO_NO_PROBE, RL_PROBE_SCHED,        \
		"Float, per second: context switches of all the process's threads (the "           \
		"probe: its task iterator reads each thread's counters, or sched_switch "          \
		"where the kernel has no iterator; *croft-probe*(8)).")                            \
	X(USAGE, CTX_INVOLUNTARY_S, "ctx_involuntary_s", RT_FLOAT, RO_NO_PROBE, RL_PROBE_SCHED,    \
		NULL)                                                                              \
	X(USAGE, READ_BYTES_S, "read_bytes_s", RT_FLOAT, RO_UNREADABLE, RL_NONE,                   \
		"Float, bytes per second: read_bytes and write_bytes of /proc/_pid_/io "           \
		"(storage I/O). Left out where io cannot be read.")                                \
	X(USAGE, WRITE_BYTES_S, "write_bytes_s", RT_FLOAT, RO_UNREADABLE, RL_NONE, NULL)           \
	X(USAGE, NETWORK_RX_BYTES_S, "network_rx_bytes_s", RT_FLOAT, RO_UNREADABLE, RL_PROBE_NET,  \
		"Float, bytes per second: what recvmsg and sendmsg returned on the "               \
		"process's IPv4 and IPv6 sockets (the probe: the sock_recv_length and "            \
		"sock_send_length tracepoints, or before Linux 6.3 the same values from "          \
		"inet_recvmsg/inet_sendmsg and their IPv6 twins). Left out where the probe "       \
		"can hook neither; see *croft-probe*(8).")                                         \
	X(USAGE, NETWORK_TX_BYTES_S, "network_tx_bytes_s", RT_FLOAT, RO_UNREADABLE, RL_PROBE_NET,  \
		NULL)                                                                              \
	X(USAGE, RUNQUEUE_S, "runqueue_s", RT_FLOAT, RO_NO_PROBE, RL_PROBE_SCHED,                  \
		"Float, seconds per second: time the process's threads waited runnable on a "      \
		"run queue (the probe). 0.5 means half a CPU's worth of waiting.")
#define ROW_FIELDS_CGROUP_USAGE(X)                                                                 \
	X(CGROUP_USAGE, CG_CPU_CORES, "cpu_cores", RT_FLOAT, RO_UNREADABLE, RL_NONE,               \
		"Float, cores: cpu.stat usage_usec of the process's cgroup over the elapsed "      \
		"time.")                                                                           \
	X(CGROUP_USAGE, CG_CPU_THROTTLED_FRACTION, "cpu_throttled_fraction", RT_FLOAT,             \
		RO_UNREADABLE, RL_NONE,                                                            \
		"Float, 0 to 1: the change of nr_throttled over the change of nr_periods in "      \
		"cpu.stat.")                                                                       \
	X(CGROUP_USAGE, CG_MEMORY_BYTES, "memory_bytes", RT_INT, RO_UNREADABLE, RL_NONE,           \
		"Integer, bytes: memory.current.")                                                 \
	X(CGROUP_USAGE, CG_OOM_KILLS, "oom_kills", RT_INT, RO_UNREADABLE, RL_NONE,                 \
		"Integer: oom_kill in memory.events, cumulative.")                                 \
	X(CGROUP_USAGE, CG_CPU_PRESSURE_AVG10, "cpu_pressure_avg10", RT_FLOAT, RO_UNREADABLE,      \
		RL_NONE,                                                                           \
		"Float, percent: \"some avg10\" of cpu.pressure, memory.pressure and "             \
		"io.pressure."                                                                     \
		"\nEach cgroup is read once per poll; v1 and hybrid hosts give the v1 "            \
		"equivalents, and a figure the host cannot give is left out.")                     \
	X(CGROUP_USAGE, CG_MEMORY_PRESSURE_AVG10, "memory_pressure_avg10", RT_FLOAT,               \
		RO_UNREADABLE, RL_NONE, NULL)                                                      \
	X(CGROUP_USAGE, CG_IO_PRESSURE_AVG10, "io_pressure_avg10", RT_FLOAT, RO_UNREADABLE,        \
		RL_NONE, NULL)
#define ROW_FIELDS_SYSCALLS(X)                                                                     \
	X(SYSCALLS, SYSCALL_NAME, "name", RT_STRING, RO_NEVER, RL_NONE,                            \
		"String: the syscall's name, from the running architecture's table.")              \
	X(SYSCALLS, SYSCALL_RATE_PER_SEC, "rate_per_sec", RT_FLOAT, RO_NEVER, RL_NONE,             \
		"Float, calls per second.")

#endif
