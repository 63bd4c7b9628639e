/*
 * util.h: what the test programs share: starting the Go fake engine
 * (shm/shmtest/cmd/shmfake) as a child process and steering it through
 * its standard input (one command a line, one JSON answer a line), and
 * small checks. Exit status 77 means skipped (no fake engine).
 */
#ifndef HM_TEST_UTIL_H
#define HM_TEST_UTIL_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/types.h>

#include "homa.h"

typedef struct fake {
	pid_t pid;
	FILE *in, *out;
	char path[256];
	char dir[128];
} fake;

/* Starts shmfake with extra flags (NULL-terminated), on a fresh socket.
 * Exits 77 when $SHMFAKE is not set or not executable. */
void fake_start(fake *f, const char *const *flags);
void fake_stop(fake *f);
/* Sends a command; returns its answer line (static buffer). */
const char *fake_cmd(fake *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* An integer field of a JSON answer, or -1. */
long long json_int(const char *ans, const char *key);

homa_client *attach_or_die(fake *f, const homa_options *o);
/* attach_or_die keeps only these of the header's feature bits (tests of
 * the version-1 paths: no quiet submissions, no pages riding on them). */
extern unsigned attach_features;
/* Echo server thread: binds port on its own client and answers every
 * request with its bytes until its client is closed. */
typedef struct echo echo;
echo *echo_start(fake *f, uint16_t port, unsigned reply_flags);
void echo_stop(echo *e);
uint64_t echo_served(echo *e);

int64_t now_ns(void);

#define CHECK(cond)                                                                                          \
	do {                                                                                                 \
		if (!(cond)) {                                                                               \
			fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond);             \
			exit(1);                                                                             \
		}                                                                                            \
	} while (0)
#define CHECK_EQ(a, b)                                                                                       \
	do {                                                                                                 \
		long long _a = (long long)(a), _b = (long long)(b);                                          \
		if (_a != _b) {                                                                              \
			fprintf(stderr, "%s:%d: %s = %lld, want %s = %lld\n", __FILE__, __LINE__, #a, _a, #b, _b); \
			exit(1);                                                                             \
		}                                                                                            \
	} while (0)

homa_stats stats_of(homa_client *c);

#endif
