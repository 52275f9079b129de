/*
 * sock.h: Unix socket helpers shared by the daemons and croftctl: listen
 * with the right mode and group, connect, and who is on the other end
 * (SO_PEERCRED).  Any process, any privilege.
 */
#ifndef CROFT_SOCK_H
#define CROFT_SOCK_H

#include <stdbool.h>
#include <sys/types.h>

#define SOCK_LISTEN_BACKLOG 16

struct sock_peer {
	pid_t pid;
	uid_t uid;
	gid_t gid;
};

/*
 * Binds a fresh socket of type (SOCK_STREAM or SOCK_SEQPACKET) at path,
 * replacing a stale socket file, mode 0660 and group gid (gid (gid_t)-1:
 * unchanged), non-blocking and close-on-exec.  Returns the fd or -errno:
 * -EADDRINUSE when a live socket answers at path, -EEXIST when path is not
 * a socket.
 */
int sock_listen(const char *path, int type, gid_t gid);
/*
 * Connects (close-on-exec); returns the fd or -errno.  With SOCK_NONBLOCK
 * in type it never blocks: -EAGAIN when the listener's backlog is full (it
 * stopped accepting).
 */
int sock_connect(const char *path, int type);
int sock_peer(int fd, struct sock_peer *ret_peer);
/*
 * True when the peer is root, or runs as this process's own uid or as uid;
 * after sock_shared_identity, a peer of that shared uid only when it is our
 * sibling (our parent, not init, started it: croft run's other daemons).
 */
bool sock_peer_is(const struct sock_peer *peer, uid_t uid);
/* True when the peer's uid is in group gid (primary or supplementary);
 * never for the shared gid of sock_shared_identity. */
bool sock_peer_in_group(const struct sock_peer *peer, gid_t gid);
/*
 * The daemon runs as a uid and gid that other processes may run as too
 * (nobody where no croft user exists, or any --user but croft): from now
 * on that uid alone does not make a peer, and that group grants nothing.
 * The pid a peer had at connect() is checked when it is accepted: a peer
 * that passes its socket on and exits before is refused, as its pid is gone
 * or is no longer our sibling.
 */
void sock_shared_identity(uid_t uid, gid_t gid);

#endif
