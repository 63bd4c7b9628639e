// Interrupt handles freed while their callback is still registered. See
// intrfix.go for why; this file replaces four of EAL's functions for the
// whole process (the linker exports them, so DPDK's drivers, loaded as
// plugins, bind to them) and calls EAL's own through RTLD_NEXT.
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <rte_interrupts.h>

typedef int (*register_fn)(const struct rte_intr_handle *, rte_intr_callback_fn, void *);
typedef int (*unregister_fn)(const struct rte_intr_handle *, rte_intr_callback_fn, void *);
typedef int (*unregister_pending_fn)(const struct rte_intr_handle *, rte_intr_callback_fn, void *,
				     rte_intr_unregister_callback_fn);
typedef void (*free_fn)(struct rte_intr_handle *);

// One registration made through rte_intr_callback_register and not yet
// undone: the caller's handle (not EAL's copy of it), callback and
// argument.
struct intr_reg {
	const struct rte_intr_handle *h;
	rte_intr_callback_fn cb;
	void *arg;
};

#define INTR_REGS 1024
static struct intr_reg regs[INTR_REGS];
static unsigned nregs;
static pthread_mutex_t regs_mu = PTHREAD_MUTEX_INITIALIZER;

static uint64_t stale_unregistered; // callbacks unregistered at their handle's free
static uint64_t regs_overflow;	    // registrations not recorded: the table was full

static void *real(const char *name) { return dlsym(RTLD_NEXT, name); }

static void record(const struct rte_intr_handle *h, rte_intr_callback_fn cb, void *arg) {
	pthread_mutex_lock(&regs_mu);
	if (nregs < INTR_REGS)
		regs[nregs++] = (struct intr_reg){h, cb, arg};
	else
		__atomic_fetch_add(&regs_overflow, 1, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&regs_mu);
}

// forget drops the records of h matching cb and arg ((void *)-1: any).
static void forget(const struct rte_intr_handle *h, rte_intr_callback_fn cb, void *arg) {
	pthread_mutex_lock(&regs_mu);
	for (unsigned i = 0; i < nregs;) {
		if (regs[i].h == h && regs[i].cb == cb && (arg == (void *)-1 || regs[i].arg == arg))
			regs[i] = regs[--nregs];
		else
			i++;
	}
	pthread_mutex_unlock(&regs_mu);
}

int rte_intr_callback_register(const struct rte_intr_handle *h, rte_intr_callback_fn cb, void *arg) {
	static register_fn fn;
	if (fn == NULL)
		fn = (register_fn)real("rte_intr_callback_register");
	int rc = fn(h, cb, arg);
	if (rc == 0)
		record(h, cb, arg);
	return rc;
}

int rte_intr_callback_unregister(const struct rte_intr_handle *h, rte_intr_callback_fn cb, void *arg) {
	static unregister_fn fn;
	if (fn == NULL)
		fn = (unregister_fn)real("rte_intr_callback_unregister");
	int rc = fn(h, cb, arg);
	if (rc > 0)
		forget(h, cb, arg);
	return rc;
}

int rte_intr_callback_unregister_sync(const struct rte_intr_handle *h, rte_intr_callback_fn cb, void *arg) {
	static unregister_fn fn;
	if (fn == NULL)
		fn = (unregister_fn)real("rte_intr_callback_unregister_sync");
	int rc = fn(h, cb, arg);
	if (rc > 0)
		forget(h, cb, arg);
	return rc;
}

int rte_intr_callback_unregister_pending(const struct rte_intr_handle *h, rte_intr_callback_fn cb, void *arg,
					 rte_intr_unregister_callback_fn ucb) {
	static unregister_pending_fn fn;
	if (fn == NULL)
		fn = (unregister_pending_fn)real("rte_intr_callback_unregister_pending");
	int rc = fn(h, cb, arg, ucb);
	if (rc > 0)
		forget(h, cb, arg); // EAL removes it once the running callback returns
	return rc;
}

// rte_intr_instance_free unregisters whatever the caller still has
// registered on h before freeing it. Its fd may be closed already: EAL
// finds the source by the fd's number and never uses the fd itself.
void rte_intr_instance_free(struct rte_intr_handle *h) {
	static free_fn fn;
	static unregister_fn unreg;
	if (fn == NULL) {
		fn = (free_fn)real("rte_intr_instance_free");
		unreg = (unregister_fn)real("rte_intr_callback_unregister");
	}
	for (;;) {
		struct intr_reg r = {0};
		pthread_mutex_lock(&regs_mu);
		for (unsigned i = 0; i < nregs; i++)
			if (regs[i].h == h) {
				r = regs[i];
				regs[i] = regs[--nregs];
				break;
			}
		pthread_mutex_unlock(&regs_mu);
		if (r.h == NULL)
			break;
		if (unreg(h, r.cb, r.arg) > 0)
			__atomic_fetch_add(&stale_unregistered, 1, __ATOMIC_RELAXED);
	}
	fn(h);
}

void homa_intrfix_stats(uint64_t *stale, uint64_t *overflow) {
	*stale = __atomic_load_n(&stale_unregistered, __ATOMIC_RELAXED);
	*overflow = __atomic_load_n(&regs_overflow, __ATOMIC_RELAXED);
}

// homa_intrfix_test_bound reports whether the process's
// rte_intr_instance_free is this file's: 1, or 0.
int homa_intrfix_test_bound(void) {
	return dlsym(RTLD_DEFAULT, "rte_intr_instance_free") == (void *)rte_intr_instance_free;
}
