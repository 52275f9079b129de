/*
 * wctl.c: a minimal control client for the writer's tests: sends status or
 * reload to writer.ctl with common/ctl.h and prints the reply text; exits
 * with the reply's status (0 ok).  Test process, any user.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl.h"
#include "msg.h"

int main(int argc, char **argv)
{
	uint32_t type;
	int status = 0, ret;
	char *text = NULL;

	if (argc != 3 || (strcmp(argv[2], "status") && strcmp(argv[2], "reload"))) {
		fprintf(stderr, "usage: wctl CTL_SOCKET status|reload\n");
		return 2;
	}
	type = !strcmp(argv[2], "status") ? MT_CTL_STATUS : MT_CTL_RELOAD;
	ret = ctl_request(argv[1], type, NULL, 0, 5000, &status, &text);
	if (ret < 0) {
		fprintf(stderr, "wctl: %s: %s\n", argv[1], strerror(-ret));
		return 3;
	}
	printf("%s\n", text ? text : "");
	free(text);
	return status ? 1 : 0;
}
