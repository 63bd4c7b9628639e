/*
 * conform.c: the conformance scenarios of shm/testdata/conformance.txt,
 * which the Go client runs too (client/conform_test.go), run through
 * libhoma's public interface against the fake engine (shmfake, a process
 * driven over its standard input). Each scenario gets a fresh engine and
 * worker.
 *
 * $SHMFAKE names the fake engine, $CONFORMANCE the scenarios (the Makefile
 * sets both); exit status 77 (skipped) without them.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "homa.h"

#define SEC 1000000000ll

static const char *scenario = "";
static int line_no;

static void fail(const char *fmt, ...)
{
	va_list ap;
	fprintf(stderr, "conform: %s, line %d: ", scenario, line_no);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

/* The fake engine: a child process, commands on its stdin, JSON answers on
 * its stdout. */
struct engine {
	pid_t pid;
	FILE *in, *out;
	char sock[128];
};

static void engine_start(struct engine *e, const char *bin, int n)
{
	int to[2], from[2];
	snprintf(e->sock, sizeof e->sock, "/tmp/homa-conform-%d-%d.sock", (int)getpid(), n);
	unlink(e->sock);
	if (pipe(to) || pipe(from))
		fail("pipe: %s", strerror(errno));
	e->pid = fork();
	if (e->pid < 0)
		fail("fork: %s", strerror(errno));
	if (e->pid == 0) {
		dup2(to[0], 0);
		dup2(from[1], 1);
		close(to[1]);
		close(from[0]);
		execl(bin, bin, "-socket", e->sock, "-control", "-sq", "64", "-cq", "256", "-arena", "4194304",
		      "-pool-pages", "64", (char *)NULL);
		_exit(127);
	}
	close(to[0]);
	close(from[1]);
	e->in = fdopen(to[1], "w");
	e->out = fdopen(from[0], "r");
	char line[256];
	if (!fgets(line, sizeof line, e->out) || !strstr(line, "ready"))
		fail("the fake engine did not start (%s)", bin);
}

/* Sends cmd; returns the answer line (static). */
static const char *engine_cmd(struct engine *e, const char *cmd)
{
	static char line[4096];
	fprintf(e->in, "%s\n", cmd);
	fflush(e->in);
	if (!fgets(line, sizeof line, e->out))
		fail("the fake engine did not answer %s", cmd);
	if (strstr(line, "\"error\""))
		fail("the fake engine refused %s: %s", cmd, line);
	return line;
}

static long json_int(const char *json, const char *key)
{
	char pat[64];
	snprintf(pat, sizeof pat, "\"%s\":", key);
	const char *p = strstr(json, pat);
	if (!p)
		fail("no %s in %s", key, json);
	return strtol(p + strlen(pat), NULL, 10);
}

static void engine_stop(struct engine *e)
{
	fclose(e->in); /* its input's end ends it */
	int st;
	waitpid(e->pid, &st, 0);
	fclose(e->out);
	unlink(e->sock);
}

static const struct {
	const char *name;
	int code;
} codes[] = {
	{"timeout", HOMA_ERR_TIMEOUT},
	{"unreachable", HOMA_ERR_UNREACHABLE},
	{"port-unreachable", HOMA_ERR_PORT_UNREACHABLE},
	{"aborted", HOMA_ERR_ABORTED},
	{"no-rpc", HOMA_ERR_NO_RPC},
	{"port-in-use", HOMA_ERR_PORT_IN_USE},
	{"limit", HOMA_ERR_LIMIT},
	{"no-buffer-space", HOMA_ERR_NO_BUFFER_SPACE},
	{"peer-restarted", HOMA_ERR_PEER_RESTARTED},
	{"closed", HOMA_ERR_CLOSED},
};

static int code_of(const char *name)
{
	for (size_t i = 0; i < sizeof codes / sizeof codes[0]; i++)
		if (!strcmp(codes[i].name, name))
			return codes[i].code;
	fail("unknown error name %s", name);
	return 0;
}

/* A message of n bytes: byte i is (i*7 + n) mod 256. */
static unsigned char *message(size_t n)
{
	unsigned char *b = malloc(n);
	if (!b)
		fail("out of memory");
	for (size_t i = 0; i < n; i++)
		b[i] = (unsigned char)(i * 7 + n);
	return b;
}

/* Checks an outcome (rc, and m when rc is 0) against want: "ok",
 * "response N", "request N", "error CODE". */
static void check(const char *step, const char *want, int rc, const homa_msg *m)
{
	char kind[32] = "", arg[64] = "";
	sscanf(want, "%31s %63s", kind, arg);
	if (!strcmp(kind, "ok")) {
		if (rc != 0)
			fail("%s: %s", step, homa_strerror(rc));
		return;
	}
	if (!strcmp(kind, "error")) {
		if (rc != code_of(arg))
			fail("%s: got %s (%d), want %s", step, homa_strerror(rc), rc, arg);
		return;
	}
	if (rc != 0)
		fail("%s: %s", step, homa_strerror(rc));
	size_t n = strtoul(arg, NULL, 10);
	unsigned char *b = message(n);
	if (m->length != n || memcmp(m->data, b, n) != 0)
		fail("%s: %u bytes, not the %zu sent", step, m->length, n);
	free(b);
}

#define MAX_RPCS 64

static void run(const char *bin, char **steps, int nsteps, int index)
{
	struct engine e;
	engine_start(&e, bin, index);
	homa_client *c;
	char err[256];
	if (homa_attach(e.sock, NULL, &c, err, sizeof err) != 0)
		fail("attach: %s", err);
	struct {
		char name[64];
		uint64_t id;
	} rpcs[MAX_RPCS];
	int nrpcs = 0;
	for (int i = 0; i < nsteps; i++) {
		char step[256], *want;
		snprintf(step, sizeof step, "%s", steps[i]);
		want = strstr(step, " -> ");
		if (want) {
			*want = 0;
			want += 4;
		}
		char op[32] = "", a1[64] = "", a2[64] = "", a3[64] = "", a4[64] = "";
		sscanf(step, "%31s %63s %63s %63s %63s", op, a1, a2, a3, a4);
		homa_msg m;
		memset(&m, 0, sizeof m);
		if (!strcmp(op, "script")) {
			char cmd[128];
			if (!strcmp(a2, "echo"))
				snprintf(cmd, sizeof cmd, "script %s echo", a1);
			else
				snprintf(cmd, sizeof cmd, "script %s %d", a1, code_of(a3));
			engine_cmd(&e, cmd);
		} else if (!strcmp(op, "bind")) {
			check(steps[i], want, homa_bind(c, (uint16_t)atoi(a1)), NULL);
		} else if (!strcmp(op, "call") || !strcmp(op, "call-to") || !strcmp(op, "send")) {
			const char *ip = "127.0.0.1", *port = a1, *size = a2;
			if (!strcmp(op, "call-to"))
				ip = a1, port = a2, size = a3;
			homa_addr dst;
			if (homa_addr_parse(ip, (uint16_t)atoi(port), &dst) != 0)
				fail("%s: bad address", steps[i]);
			size_t n = strtoul(size, NULL, 10);
			unsigned char *b = message(n);
			struct iovec iov = {b, n};
			uint64_t id = 0;
			int rc = homa_send(c, &dst, &iov, 1, 0, 0, &id);
			free(b);
			if (!strcmp(op, "send")) {
				if (rc != 0 || nrpcs == MAX_RPCS)
					fail("%s: %s", steps[i], homa_strerror(rc));
				snprintf(rpcs[nrpcs].name, sizeof rpcs[nrpcs].name, "%s", a4);
				rpcs[nrpcs++].id = id;
				continue;
			}
			if (rc == 0)
				rc = homa_wait(c, id, &m, 10 * SEC);
			check(steps[i], want, rc, &m);
			homa_msg_release(c, &m);
		} else if (!strcmp(op, "wait")) {
			uint64_t id = 0;
			for (int k = 0; k < nrpcs; k++)
				if (!strcmp(rpcs[k].name, a1))
					id = rpcs[k].id;
			int rc = homa_wait(c, id, &m, 10 * SEC);
			check(steps[i], want, rc, &m);
			homa_msg_release(c, &m);
		} else if (!strcmp(op, "serve")) {
			int rc = homa_receive(c, &m, 10 * SEC);
			if (rc != 0 || m.kind != HOMA_MSG_REQUEST)
				fail("%s: %s, kind %d", steps[i], homa_strerror(rc), m.kind);
			check(steps[i], want, rc, &m);
			struct iovec iov = {(void *)m.data, m.length};
			if ((rc = homa_reply(c, &m, &iov, 1, 0)) != 0)
				fail("%s: reply: %s", steps[i], homa_strerror(rc));
			homa_msg_release(c, &m);
		} else if (!strcmp(op, "idle")) {
			int rc = homa_receive(c, &m, SEC / 1000);
			if (rc != HOMA_ETIMEDOUT)
				fail("%s: %s, want nothing", steps[i], homa_strerror(rc));
		} else if (!strcmp(op, "engine")) {
			const char *key = !strcmp(a1, "pages-held") ? "pages_held"
					  : !strcmp(a1, "rpcs")     ? "rpcs"
					  : !strcmp(a1, "bad-submissions") ? "bad_submissions"
									   : NULL;
			if (!key)
				fail("unknown engine figure %s", a1);
			long wantn = atol(a2), got = -1;
			for (int tries = 0; tries < 5000; tries++) { /* 5 s */
				got = json_int(engine_cmd(&e, "session 0"), key);
				if (got == wantn)
					break;
				homa_poll(c);
				usleep(1000);
			}
			if (got != wantn)
				fail("engine %s %ld, want %ld", a1, got, wantn);
		} else {
			fail("unknown step %s", steps[i]);
		}
	}
	homa_destroy(c);
	engine_stop(&e);
}

int main(void)
{
	const char *bin = getenv("SHMFAKE"), *file = getenv("CONFORMANCE");
	if (!bin || !file || access(bin, X_OK) != 0) {
		fprintf(stderr, "conform: set SHMFAKE and CONFORMANCE (make test does)\n");
		return 77;
	}
	signal(SIGPIPE, SIG_IGN);
	FILE *f = fopen(file, "r");
	if (!f) {
		fprintf(stderr, "conform: %s: %s\n", file, strerror(errno));
		return 1;
	}
	static char *steps[256];
	int nsteps = 0, count = 0;
	char name[128] = "", line[512];
	for (;;) {
		char *got = fgets(line, sizeof line, f);
		char *s = got ? line : NULL;
		if (s) {
			line_no++;
			s[strcspn(s, "\n")] = 0;
			while (*s == ' ' || *s == '\t')
				s++;
			if (!*s || *s == '#')
				continue;
		}
		if (!s || !strncmp(s, "scenario ", 9)) {
			if (name[0]) {
				scenario = name;
				run(bin, steps, nsteps, count++);
				printf("conform: %s passed\n", name);
				for (int i = 0; i < nsteps; i++)
					free(steps[i]);
				nsteps = 0;
			}
			if (!s)
				break;
			snprintf(name, sizeof name, "%s", s + 9);
			continue;
		}
		if (nsteps == 256)
			fail("too many steps");
		steps[nsteps++] = strdup(s);
	}
	fclose(f);
	if (!count) {
		fprintf(stderr, "conform: no scenario in %s\n", file);
		return 1;
	}
	printf("conform: %d scenarios passed\n", count);
	return 0;
}
