/*
 * handover.h: root hands directories and files to the user a daemon drops
 * to without trusting any path a user can change: no symlink followed, the
 * owner and mode checked on the fd, fchown and fchmod on that fd.  Runs in
 * croft run and in each daemon before its privilege drop.
 */
#ifndef CROFT_HANDOVER_H
#define CROFT_HANDOVER_H

#include <stdbool.h>
#include <sys/types.h>

/* What a directory is handed over as. */
struct handover_want {
	mode_t mode;         /* the directory's mode (made so, then set so) */
	mode_t parents_mode; /* directories made above it */
	uid_t owner;         /* (uid_t)-1: not root, nothing is handed over */
	gid_t group;
	uid_t daemon_uid; /* besides root, who may own it already */
};

/*
 * mkdir -p path and open it (O_RDONLY | O_DIRECTORY) into *ret_fd.  As root
 * (want->owner set): no component may be a symlink (-ELOOP), the directory
 * must be owned by root or want->daemon_uid and writable by no one else
 * (-EPERM), then it is given to owner:group with mode through the fd.  Not
 * root: made and opened, symlinks followed, nothing changed.  0 or -errno.
 */
int handover_dir(const char *path, const struct handover_want *want, int *ret_fd);

/*
 * As root, before fchown(fd, uid, gid): fd must be a regular file with one
 * link (a hard link to someone else's file is refused: -EMLINK), owned by
 * root or uid (-EPERM), not a symlink's target (open it O_NOFOLLOW).  Then
 * the fchown.  0 or -errno.
 */
int handover_file(int fd, uid_t uid, gid_t gid);

/* Why handover_dir or handover_file refused, in words for messages. */
const char *handover_strerror(int r);

#endif
