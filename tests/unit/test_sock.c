/*
 * test_sock.c: Unix socket helpers: mode and stale files on listen, peer
 * credentials, the peer policy helpers, and bad paths.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sock.h"
#include "testlib.h"

static char dir[64];

static void make_dir(void)
{
	snprintf(dir, sizeof(dir), "/tmp/croft-test-sock.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(dir));
}

START_TEST(test_listen_connect_peer)
{
	char path[128];
	struct sock_peer peer;
	struct stat st;
	int lfd, cfd, afd;

	make_dir();
	snprintf(path, sizeof(path), "%s/x.sock", dir);
	/* A file that is not a socket is never removed. */
	ck_assert_int_ge(close(open(path, O_CREAT | O_WRONLY, 0600)), 0);
	ck_assert_int_eq(sock_listen(path, SOCK_STREAM, (gid_t)-1), -EEXIST);
	unlink(path);
	/* A stale socket (its daemon gone) is replaced. */
	lfd = sock_listen(path, SOCK_STREAM, (gid_t)-1);
	ck_assert_int_ge(lfd, 0);
	close(lfd);
	lfd = sock_listen(path, SOCK_STREAM, (gid_t)-1);
	ck_assert_int_ge(lfd, 0);
	ck_assert_int_eq(stat(path, &st), 0);
	ck_assert(S_ISSOCK(st.st_mode));
	ck_assert_int_eq(st.st_mode & 0777, 0660);
	ck_assert(fcntl(lfd, F_GETFL) & O_NONBLOCK);
	ck_assert(fcntl(lfd, F_GETFD) & FD_CLOEXEC);

	/* A live one (a second instance starting) is left alone. */
	ck_assert_int_eq(sock_listen(path, SOCK_STREAM, (gid_t)-1), -EADDRINUSE);
	afd = accept(lfd, NULL, NULL); /* the probe connection */
	ck_assert_int_ge(afd, 0);
	close(afd);

	cfd = sock_connect(path, SOCK_STREAM);
	ck_assert_int_ge(cfd, 0);
	afd = accept(lfd, NULL, NULL);
	ck_assert_int_ge(afd, 0);
	ck_assert_int_eq(sock_peer(afd, &peer), 0);
	ck_assert_int_eq(peer.pid, getpid());
	ck_assert_uint_eq(peer.uid, geteuid());
	ck_assert_uint_eq(peer.gid, getegid());
	ck_assert(sock_peer_is(&peer, 12345)); /* own uid */
	ck_assert(sock_peer_in_group(&peer, getegid()));
	close(afd);
	close(cfd);
	close(lfd);
	unlink(path);
	rmdir(dir);
}
END_TEST

START_TEST(test_policy_helpers)
{
	struct sock_peer root = { 1, 0, 0 }, other = { 1, 54321, 54321 };

	ck_assert(sock_peer_is(&root, 77));
	ck_assert(sock_peer_is(&other, 54321));
	if (geteuid() != 54321)
		ck_assert(!sock_peer_is(&other, 77));
	ck_assert(sock_peer_in_group(&other, 54321));  /* primary gid */
	ck_assert(!sock_peer_in_group(&other, 54322)); /* unknown uid: no supplementary groups */
}
END_TEST

START_TEST(test_bad_paths)
{
	char path[200];

	memset(path, 'a', sizeof(path) - 1);
	path[0] = '/';
	path[sizeof(path) - 1] = '\0';
	ck_assert_int_eq(sock_listen(path, SOCK_STREAM, (gid_t)-1), -ENAMETOOLONG);
	ck_assert_int_eq(sock_connect(path, SOCK_STREAM), -ENAMETOOLONG);
	ck_assert_int_eq(sock_connect("/nonexistent/x.sock", SOCK_STREAM), -ENOENT);
	ck_assert_int_eq(sock_connect("/nonexistent/x.sock", SOCK_STREAM | SOCK_NONBLOCK), -ENOENT);
	ck_assert_int_eq(sock_connect(path, SOCK_STREAM | SOCK_NONBLOCK), -ENAMETOOLONG);
	ck_assert_int_eq(sock_listen("/nonexistent/x.sock", SOCK_STREAM, (gid_t)-1), -ENOENT);
	ck_assert_int_lt(sock_peer(-1, &(struct sock_peer){ 0 }), 0);
}
END_TEST

START_TEST(test_seqpacket)
{
	char path[128];
	int lfd, cfd;

	make_dir();
	snprintf(path, sizeof(path), "%s/p.sock", dir);
	lfd = sock_listen(path, SOCK_SEQPACKET, (gid_t)-1);
	ck_assert_int_ge(lfd, 0);
	ck_assert_int_eq(sock_connect(path, SOCK_STREAM), -EPROTOTYPE);
	cfd = sock_connect(path, SOCK_SEQPACKET);
	ck_assert_int_ge(cfd, 0);
	close(cfd);
	close(lfd);
	unlink(path);
	rmdir(dir);
}
END_TEST

static Suite *sock_suite(void)
{
	Suite *s = suite_create("sock");
	TCase *tc = tcase_create("sock");

	tcase_add_test(tc, test_listen_connect_peer);
	tcase_add_test(tc, test_policy_helpers);
	tcase_add_test(tc, test_bad_paths);
	tcase_add_test(tc, test_seqpacket);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return tl_run(sock_suite());
}
