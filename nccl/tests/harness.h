/*
 * harness.h: the conformance harness. It loads the plugin with dlopen and
 * calls one of its tables (v8, v9 or v10) as NCCL does, from 2 to 8
 * processes (ranks) forked per case, which pass connect handles through
 * pipes. Each rank is a fresh process: the plugin's state is its own.
 */
#ifndef HARNESS_H
#define HARNESS_H

#include <stddef.h>
#include <stdint.h>

#include "nccl_net.h"

#include "ranks.h"

/* The ranks of a case: rank r of n runs fn. */
typedef int (*case_fn)(int rank, int n);
/* The pid of a rank forked before this one (a lower rank). */
#include <sys/types.h>
pid_t h_peer_pid(int rank);

void h_fill(uint8_t *b, size_t n, uint64_t seed);
int h_check(const uint8_t *b, size_t n, uint64_t seed, const char *what);


/* The cases (cases.c): name, ranks, function. */
typedef struct h_case {
	const char *name;
	int ranks;
	case_fn fn;
	const char *what;
	const char *env; /* NAME=VALUE set in each rank before init, or NULL */
} h_case;

/* Allocations made in this process since h_count_allocs(1) (malloc,
 * calloc, realloc, any thread); -1 under the sanitizers (not counted). */
void h_count_allocs(int on);
long h_allocs(void);
extern const h_case h_cases[];

#endif
