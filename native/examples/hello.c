/*
 * hello: the smallest C worker. It attaches to the homa-dpdk daemon's
 * worker socket, sends one Homa RPC and prints the response.
 *
 *	make -C native examples
 *	native/build/examples/hello /run/homa-dpdk/demo/10.0.0.1.sock 10.0.0.2 99
 *
 * Against `homa-dpdk demo --workers /run/homa-dpdk/demo`, with the echo
 * example serving port 99 on 10.0.0.2, it prints the request echoed, as
 * examples/hello (Go) does: 10.0.0.2:99 answered "hello".
 */
#include <stdio.h>
#include <stdlib.h>

#include "homa.h"

/* fail prints what went wrong, in libhoma's words, ends the session if
 * there is one (c not NULL) and returns 1, the exit status. */
static int fail(homa_client *c, const char *what, int rc)
{
	fprintf(stderr, "hello: %s: %s\n", what, homa_strerror(rc));
	if (c)
		homa_destroy(c);
	return 1;
}

int main(int argc, char **argv)
{
	if (argc != 4) {
		fprintf(stderr, "usage: %s SOCKET ADDRESS PORT\n", argv[0]);
		return 2;
	}
	const char *sock = argv[1], *host = argv[2];
	char *end;
	unsigned long port = strtoul(argv[3], &end, 10);
	if (*argv[3] == '\0' || *end != '\0' || port < 1 || port > HOMA_MAX_SERVER_PORT) {
		fprintf(stderr, "hello: port %s: want 1..%d\n", argv[3], HOMA_MAX_SERVER_PORT);
		return 2;
	}
	char to[128]; /* "10.0.0.2:99", for messages */
	snprintf(to, sizeof to, "%s:%lu", host, port);
	// #region call
	homa_client *c;
	char why[256];
	int rc = homa_attach(sock, NULL, &c, why, sizeof why); /* NULL: the default options */
	if (rc != 0)
		return fail(NULL, why, rc); /* why: the socket, and what attaching it met */
	homa_addr dst;
	uint64_t id;
	homa_msg resp;
	struct iovec req = {"hello", 5}; /* copied into the transmit arena before homa_send returns */
	if ((rc = homa_addr_parse(host, port, &dst)) != 0 || (rc = homa_send(c, &dst, &req, 1, 0, 0, &id)) != 0 ||
	    (rc = homa_wait(c, id, &resp, 5000000000)) != 0) /* 5 s, in ns */
		return fail(c, to, rc);
	printf("%s answered \"%.*s\"\n", to, (int)resp.length, (const char *)resp.data); /* a view of the pool */
	homa_msg_release(c, &resp); /* gives the receive pool's pages back */
	homa_destroy(c);            /* ends the session and unmaps the region */
	// #endregion
	return 0;
}
