/*
 * kernel.h: kernel ABI values both croft-probe's eBPF programs (task flags)
 * and croft-sampler (/proc/<pid>/stat flags) read; macros only (BPF side).
 */
#ifndef CROFT_KERNEL_H
#define CROFT_KERNEL_H

#define PF_KTHREAD_FLAG 0x00200000u /* include/linux/sched.h PF_KTHREAD: a kernel thread */

#endif
