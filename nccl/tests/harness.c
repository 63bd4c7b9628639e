/*
 * harness.c: loads the plugin and runs the cases of cases.c in forked
 * ranks, for each table version asked (the wrappers and pipes: ranks.c).
 *
 *   harness PLUGIN.so [-v 8,9,10] [CASE...]
 *
 * HOMA_NCCL_SOCKET (read by the plugin) names the daemon; or
 * HARNESS_SOCKETS, a comma-separated list, gives rank r the (r mod n)-th
 * (ranks on two hosts of a daemon). Exit status 0 when every case passed.
 */
#include "harness.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static int nranks;
static pid_t pids[8];

pid_t h_peer_pid(int rank) { return pids[rank]; }

/* Counting allocations: the harness's malloc family wraps glibc's (the
 * plugin, loaded into this executable's process, resolves to them: the
 * executable is linked with -rdynamic). Not under ASan, which has its own. */
#if defined(__SANITIZE_ADDRESS__)
void h_count_allocs(int on) { (void)on; }
long h_allocs(void) { return -1; }
#else
extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
static volatile int counting;
static long allocs;
void *malloc(size_t n)
{
	if (counting)
		__atomic_add_fetch(&allocs, 1, __ATOMIC_RELAXED);
	return __libc_malloc(n);
}
void *calloc(size_t a, size_t b)
{
	if (counting)
		__atomic_add_fetch(&allocs, 1, __ATOMIC_RELAXED);
	return __libc_calloc(a, b);
}
void *realloc(void *p, size_t n)
{
	if (counting)
		__atomic_add_fetch(&allocs, 1, __ATOMIC_RELAXED);
	return __libc_realloc(p, n);
}
void h_count_allocs(int on)
{
	allocs = 0;
	counting = on;
}
long h_allocs(void) { return __atomic_load_n(&allocs, __ATOMIC_RELAXED); }
#endif

void h_fill(uint8_t *b, size_t n, uint64_t seed)
{
	uint64_t x = seed * 0x9e3779b97f4a7c15ull + 1;
	for (size_t i = 0; i < n; i++) {
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		b[i] = (uint8_t)x;
	}
}

int h_check(const uint8_t *b, size_t n, uint64_t seed, const char *what)
{
	uint64_t x = seed * 0x9e3779b97f4a7c15ull + 1;
	for (size_t i = 0; i < n; i++) {
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		if (b[i] != (uint8_t)x)
			FAILF("%s: byte %zu of %zu differs", what, i, n);
	}
	return 0;
}

/* run_case forks c->ranks ranks of c and waits for them (120 s at most). */
static int run_case(const char *plugin, const h_case *c)
{
	nranks = c->ranks;
	if (h_open_pipes(nranks))
		return 1;
	for (int r = 0; r < nranks; r++) {
		pids[r] = fork();
		if (pids[r] == 0) {
			int rc = h_start_rank(plugin, r, c->env);
			if (rc)
				_exit(rc);
			int st = c->fn(r, nranks);
			if (st == 0 && !strstr(c->name, "killed")) {
				/* no rank leaves before all are done: a session that
				 * ends takes its unanswered RPCs with it */
				for (int k = 0; k < nranks; k++)
					if (k != r)
						h_signal(k);
				for (int k = 0; k < nranks; k++)
					if (k != r)
						h_wait(k);
			}
			fflush(stderr);
			if (strstr(c->name, "killed"))
				_exit(st); /* LeakSanitizer's tracer crashes in a rank whose peer it killed (signal 11) */
			exit(st); /* not _exit: LeakSanitizer looks at exit */
		}
	}
	h_close_pipes(nranks);
	int failed = 0, left = nranks;
	int64_t t0 = h_now();
	while (left > 0) {
		int st;
		pid_t p = waitpid(-1, &st, WNOHANG);
		if (p > 0) {
			left--;
			if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
				int r = 0;
				while (r < nranks && pids[r] != p)
					r++;
				if (!(c->ranks > 1 && WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL && strstr(c->name, "killed"))) {
					fprintf(stderr, "    rank %d: %s %d\n", r, WIFEXITED(st) ? "exit" : "signal",
						WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
					failed = 1;
					for (int k = 0; k < nranks; k++) /* the others would wait for it */
						if (pids[k] != p)
							kill(pids[k], SIGKILL);
				}
			}
			continue;
		}
		if (h_now() - t0 > 120000000000ll) {
			fprintf(stderr, "    the case ran past 120 s: killed\n");
			for (int r = 0; r < nranks; r++)
				kill(pids[r], SIGKILL);
			failed = 1;
			t0 = INT64_MAX / 2;
		}
		usleep(2000);
	}
	return failed;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: harness PLUGIN.so [-v 8,9,10] [CASE...]\n");
		return 2;
	}
	const char *plugin = argv[1];
	const char *versions = "10,9,8";
	int ai = 2;
	if (ai + 1 < argc && strcmp(argv[ai], "-v") == 0) {
		versions = argv[ai + 1];
		ai += 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	int failed = 0, ran = 0;
	char vs[64];
	snprintf(vs, sizeof vs, "%s", versions);
	for (char *save = NULL, *v = strtok_r(vs, ",", &save); v; v = strtok_r(NULL, ",", &save)) {
		h_version = atoi(v);
		if (h_version < 8 || h_version > 10) {
			fprintf(stderr, "harness: version %s: 8, 9 or 10\n", v);
			return 2;
		}
		for (const h_case *c = h_cases; c->name; c++) {
			int want = ai >= argc && !(getenv("HARNESS_SKIP") && strstr(getenv("HARNESS_SKIP"), c->name));
			for (int i = ai; i < argc; i++)
				want |= strcmp(argv[i], c->name) == 0;
			if (!want)
				continue;
			int64_t t0 = h_now();
			int f = run_case(plugin, c);
			printf("%s v%d %-22s %d ranks  %6.2f s  %s\n", f ? "FAIL" : "ok  ", h_version, c->name, c->ranks,
			       (double)(h_now() - t0) / 1e9, c->what);
			failed += f;
			ran++;
		}
	}
	printf("harness: %d cases, %d failed\n", ran, failed);
	return failed ? 1 : 0;
}
