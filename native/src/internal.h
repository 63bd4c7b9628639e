/*
 * internal.h: the client's state, shared by the files of src/ (one
 * concern each: attach.c, client.c, submit.c, complete.c, wait.c,
 * pool.c). Nothing here is exported.
 */
#ifndef HM_INTERNAL_H
#define HM_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "arena.h"
#include "entry.h"
#include "layout.h"
#include "homa.h"
#include "ring.h"
#include "table.h"

#define HM_EXPORT __attribute__((visibility("default")))

/* Cookies of ReturnPages: tag | page << 32 | pages (pending.py); no
 * other cookie has bit 63 (they count from 1). */
#define HM_RETURN_TAG (1ull << 63)

/* Page runs a client keeps back to ride on its next Send or Reply
 * (FeatureReturnOnSubmit) before it submits them on their own. */
#define HM_HOLD_RUNS 16

/* Completions read per pop (one head store per burst). */
#define HM_BURST 32

/* A submission's state (pending.py). */
enum { SUB_WAITING, SUB_ACCEPTED, SUB_FAILED };

/* A submission waiting for its completion, or holding an arena range the
 * engine may still read; found by cookie. */
typedef struct hm_sub {
	uint32_t link, gen; /* the slab's */
	uint64_t cookie;
	uint8_t kind;     /* HM_OP_* */
	uint8_t state;    /* SUB_* */
	uint8_t detached; /* no call awaits it: its refusal goes to the ready queue */
	uint8_t quiet;    /* sent with SubFlagQuiet: no Accepted comes */
	uint8_t has_range; /* holds [off, off+take) of the arena */
	uint8_t aborted;  /* a Send not answered yet when abort_all came: its outcome is dropped */
	uint8_t awaited;  /* a call waits for its answer (or is still staging it): the record stays */
	uint8_t pushed;   /* on the submission ring: completions may name its cookie */
	uint16_t err;     /* SUB_FAILED: the code */
	uint16_t port;    /* Bind */
	uint32_t length;  /* message bytes */
	uint64_t off, take; /* the arena range */
	uint64_t rpc_id;  /* Reply, Abort: the RPC; Send: its id once accepted */
	uint64_t tag;     /* Send: the caller's */
	uint32_t ride_page, ride_pages; /* pages given back on this Send or Reply */
	homa_addr peer;   /* Send: the destination; Reply: the client */
} hm_sub;

/* A client RPC (from a Send that was Accepted); found by id. */
typedef struct hm_rpc {
	uint32_t link, gen;
	uint64_t id;
	uint64_t cookie;  /* its Send's */
	uint64_t tag;
	homa_addr peer;
	uint8_t has_outcome; /* outcome holds its Response or failure */
	uint8_t aborted;     /* abort or abort_all: its outcome is dropped when it comes */
	homa_msg outcome;
} hm_rpc;

/* A request not answered yet; found by its (odd) id. */
typedef struct hm_req {
	uint32_t link, gen;
	homa_addr peer;
} hm_req;

/* One item of the ready queue. */
enum { ITEM_NONE, ITEM_MSG, ITEM_RPC };
typedef struct hm_item {
	uint8_t type;
	uint32_t idx, gen; /* ITEM_RPC: the record and its generation */
	homa_msg msg;      /* ITEM_MSG */
} hm_item;

/* A run of pool pages. */
typedef struct hm_run {
	uint32_t page, pages;
} hm_run;

/* Page states (pages[] below). */
enum { PAGE_DAEMON = 0, PAGE_HELD = 1, PAGE_RETURNING = 2 };

struct homa_client {
	pthread_mutex_t mu; /* serialises every call but wake, shutdown and fd */

	/* set at attach, then read-only */
	uint8_t *region;
	size_t region_len;
	homa_layout lay;
	uint32_t features; /* the header's, those this library uses */
	hm_host host;      /* what the header says of the daemon's host (homa_host_info_get) */
	hm_limits lim;
	int64_t spin_ns, op_timeout_ns, max_sleep_ns;
	uint8_t *arena_mem, *pool_mem;
	int sock; /* the control connection; -1 once closed */
	int bell; /* the daemon's doorbell eventfd (FeatureDoorbell), -1: none */

	/* lock-free flags and the eventfd (homa_wake, homa_shutdown) */
	atomic_int efd;      /* -1 once closed */
	atomic_int efd_users; /* wakers writing efd right now */
	atomic_int woken;    /* homa_wake: the current or next wait returns */
	atomic_int closing;  /* homa_shutdown or homa_close began */
	atomic_int rel_pending; /* rel_runs holds runs released without the lock */

	/* under mu */
	int closed;
	int dead;
	int64_t control_checked; /* when a wait that never sleeps last looked at sock (hm_control_check) */
	hm_ring sq, cq;
	hm_arena arena;
	uint64_t next_cookie;
	hm_slab subs, rpcs, reqs;
	hm_map sub_map, rpc_map, req_map;
	hm_item *ready;
	uint32_t ready_cap, ready_head, ready_len; /* a ring of ready_cap (power of two) */
	uint8_t *pages;       /* PAGE_* per pool page */
	uint64_t pages_held;  /* pages not PAGE_DAEMON */
	hm_run *returns;      /* runs to give back */
	uint32_t nreturns, returns_cap;
	uint64_t returns_pages; /* pages in returns[] */
	uint8_t bound[HOMA_MAX_SERVER_PORT / 8 + 1]; /* ports bound (bitmap) */
	homa_stats st;
	uint64_t messages_alive;
	char last_bad[256];
	uint8_t slots[HM_BURST * HM_ENTRY_SIZE]; /* completions copied out */

	/* runs released by another thread while one held mu */
	pthread_mutex_t rel_mu;
	hm_run *rel_runs;
	uint32_t rel_n, rel_cap;
};

/* client.c */
int64_t hm_now(void);
int hm_check_open(homa_client *c);
void hm_lock(homa_client *c);
void hm_unlock(homa_client *c);
void hm_signal(homa_client *c);

/* submit.c */
hm_sub *hm_new_sub(homa_client *c, uint8_t kind, uint32_t *idx);
void hm_free_sub(homa_client *c, hm_sub *s);
void hm_settle(homa_client *c, hm_sub *s);
void hm_free_range(homa_client *c, hm_sub *s);
int hm_push(homa_client *c, const hm_entry *e);

/* complete.c */
int hm_drain(homa_client *c);
int hm_has_ready(homa_client *c);
int hm_ready_push(homa_client *c, const hm_item *it);
/* pops the next live item into *m: 0 (a response or message), a code > 0
 * (a failure, *m FAILED), or -1 when none */
int hm_ready_pop(homa_client *c, homa_msg *m);
int hm_claim(homa_client *c, hm_rpc *r, homa_msg *m);
void hm_drop_rpc(homa_client *c, hm_rpc *r);
hm_rpc *hm_rpc_find(homa_client *c, uint64_t id);
void hm_reopen_request(homa_client *c, uint64_t id, const homa_addr *peer);
void hm_abort_everything(homa_client *c);

/* wait.c: processes completions until pred(c, arg) or the timeout; 0 when
 * pred holds, or HOMA_ETIMEDOUT, HOMA_EDEAD, HOMA_ECLOSED. wakeable: a
 * homa_wake ends it (the waits for outcomes); the waits for a
 * submission's answer or arena room leave the wake-up to the next one. */
typedef int (*hm_pred)(homa_client *c, void *arg);
int hm_wait_for(homa_client *c, hm_pred pred, void *arg, int64_t timeout_ns, int wakeable);
/* hm_control_check is hm_control_ended at most once a millisecond (now:
 * hm_now()), for waits that never sleep: 1 if the session has ended. */
int hm_control_check(homa_client *c, int64_t now);
/* 1 if the daemon closed the control connection (c->dead is set) */
int hm_control_ended(homa_client *c);

/* pool.c */
int hm_pages_free(homa_client *c, uint32_t page, uint32_t pages);
void hm_mark_held(homa_client *c, uint32_t page, uint32_t pages);
int hm_return_later(homa_client *c, uint32_t page, uint32_t pages);
void hm_drop_msg(homa_client *c, homa_msg *m);
int hm_flush_returns(homa_client *c, int all);
void hm_ride(homa_client *c, hm_entry *e, hm_sub *s);
void hm_unride(homa_client *c, hm_entry *e, hm_sub *s);
void hm_take_remote_releases(homa_client *c);

/* errors.c */
void hm_addr_from_entry(homa_addr *a, const uint8_t ip[4], const uint8_t ip6[16], uint16_t port);
void hm_addr_to_entry(const homa_addr *a, uint8_t ip[4], uint8_t ip6[16]);
void hm_bad(homa_client *c, const char *kind, const char *why, const hm_entry *e);

/* hm_ring_bell rings the daemon's doorbell after a push if its loop went
 * to sleep (hm_prod_take_waiter); a fence and a load otherwise. */
void hm_ring_bell(homa_client *c);

#endif
