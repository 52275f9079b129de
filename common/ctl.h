/*
 * ctl.h: the control socket (<runtime>/<daemon>.ctl) every daemon serves
 * and croftctl talks to.  One request per connection, one reply.  Peers are
 * checked with SO_PEERCRED: status for root, the daemon's own user and the
 * croft group; reload and label for root only.  Refusals are answered with
 * a clear message and logged with the peer's uid and pid.
 */
#ifndef CROFT_CTL_H
#define CROFT_CTL_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct event_base;
struct evbuffer;
struct msg_cursor;
struct ctl_server;

#define CTL_TIMEOUT_MS 5000 /* a control client gets this long to send its request */

/*
 * Called for an authorised request; payload is positioned after the header.
 * Writes the reply text (JSON for MT_CTL_STATUS, a message otherwise) to
 * reply and returns 0 or -errno.
 */
typedef int (*ctl_handler_fn)(
	void *ctx, uint32_t type, struct msg_cursor *payload, struct evbuffer *reply);

/* Listens at path (mode 0660, group croft_gid).  Returns 0 or -errno. */
int ctl_server_new(struct event_base *base, const char *path, gid_t croft_gid,
	ctl_handler_fn handler, void *ctx, struct ctl_server **ret_server);
void ctl_server_free(struct ctl_server *server);

/*
 * Client side, blocking: connects to path, sends one request and waits for
 * the reply.  Returns 0 with *ret_status (0 or a positive errno) and a
 * malloc'd *ret_text, or -errno when no reply came.
 */
int ctl_request(const char *path, uint32_t type, const void *payload, size_t len, int timeout_ms,
	int *ret_status, char **ret_text);

#endif
