/*
 * boottime.c: the boot's unix ms, which process.start_ms is reckoned
 * from, the same for the whole boot whatever the wall clock does.  The
 * kernel's btime is now minus the time since boot, so a clock step moves
 * it: a sampler started after a step would give a running process another
 * start_ms (another identity).  The first sampler of a boot keeps what it
 * read in <state>/sampler.boot with the boot's id; later ones of the same
 * boot take it from there.  croft-sampler, croft user (its state dir).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "host.h"

#define BOOT_FILE   "sampler.boot"
#define BOOT_ID_LEN 36 /* a UUID, as /proc/sys/kernel/random/boot_id says it */
#define BOOT_REC    64 /* bytes of the record: "<boot id> <unix ms>\n" */

static int boot_id(int procfd, char ret[BOOT_ID_LEN + 1])
{
	char buf[64];
	ssize_t n = procfs_read_at(procfd, "sys/kernel/random/boot_id", buf, sizeof(buf));

	if (n < BOOT_ID_LEN)
		return n < 0 ? (int)n : -EINVAL;
	memcpy(ret, buf, BOOT_ID_LEN);
	ret[BOOT_ID_LEN] = '\0';
	return 0;
}

/* The kept record's ms when it is this boot's. */
static bool kept_ms(int fd, const char *id, uint64_t *ret_ms)
{
	char rec[BOOT_REC + 1], kept_id[BOOT_ID_LEN + 1];
	unsigned long long ms;
	ssize_t n = pread(fd, rec, BOOT_REC, 0);

	if (n <= 0)
		return false;
	rec[n] = '\0';
	if (sscanf(rec, "%36s %llu", kept_id, &ms) != 2 || strcmp(kept_id, id) || !ms)
		return false;
	*ret_ms = ms;
	return true;
}

uint64_t boottime_unix_ms(int state_dirfd, int procfd)
{
	char id[BOOT_ID_LEN + 1] = "", rec[BOOT_REC];
	uint64_t ms = 0;
	int fd = -1, len;

	if (boot_id(procfd, id) == 0 && state_dirfd >= 0)
		fd = openat(
			state_dirfd, BOOT_FILE, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd >= 0 && kept_ms(fd, id, &ms)) {
		close(fd);
		return ms;
	}
	if (procfs_boot_unix_ms(procfd, &ms))
		log_warnx("/proc/stat has no btime: the boot time for start_ms from the clocks");
	len = snprintf(rec, sizeof(rec), "%s %" PRIu64 "\n", id, ms);
	if (fd >= 0 && (pwrite(fd, rec, (size_t)len, 0) != len || ftruncate(fd, len) < 0 ||
			       fdatasync(fd) < 0))
		log_warn("%s: the boot time is not kept (a clock step, then a restart, moves "
			 "start_ms)",
			BOOT_FILE);
	else if (fd < 0)
		log_warnx("%s: cannot keep the boot time (a clock step, then a restart, moves "
			  "start_ms)",
			BOOT_FILE);
	if (fd >= 0)
		close(fd);
	return ms;
}
