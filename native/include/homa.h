/*
 * homa.h: libhoma, the worker side of homa-dpdk's shared-memory protocol
 * for every client that is not Go (Python, the C++ torch.distributed
 * backend, a future NCCL net plugin). The protocol itself (the region, its
 * rings and their entries) is defined by the Go package shm/ (shm/doc.go,
 * layout.go, ring.go, entry.go); this library is its one C implementation
 * and speaks none of it through its interface: callers see a client,
 * messages and error codes, never ring entries.
 *
 * Conventions
 *
 *   - Every function returns an int status unless it says otherwise:
 *       0           success;
 *       < 0         a local status, one of enum homa_status below;
 *       > 0         the daemon's answer: a protocol error code (enum
 *                   homa_errcode, the numbers of shm.ErrCode): 1..15 the
 *                   daemon found a submission malformed, 16 and up the RPC or
 *                   the submission failed (timeout, aborted, ...).
 *     homa_strerror() names both kinds.
 *   - Times are nanoseconds as int64_t; a negative timeout means "no limit",
 *     0 means "do not wait" (one look, then HOMA_ETIMEDOUT). A wait that
 *     sleeps sees the daemon end the session at once; one that does not
 *     (timeout 0, homa_poll) looks at the daemon's connection once a
 *     millisecond at most, so a caller that only polls gets HOMA_EDEAD
 *     within a millisecond of its polls too.
 *   - Threads: a client's calls are serialised by a mutex in the client; a
 *     blocking call holds it while it waits, so concurrent callers wait for
 *     each other (use a client per thread for concurrency).
 *     homa_wake(), homa_shutdown() and homa_fd() take no lock and may be
 *     called from any thread at any time before homa_destroy().
 *   - Received bytes are not copied: a message's data points into the
 *     receive pool of the shared region, valid until the message is given
 *     to homa_msg_release() (and after homa_close(), until homa_destroy()).
 *   - Sent bytes are copied once, into the transmit arena, before the send
 *     call returns: the caller's buffers may be reused at once.
 *   - Every exported function is a real symbol (no inline-only API), so
 *     ctypes and cffi can call it; the ABI is versioned by the soname
 *     (libhoma.so.1) and a linker version script (libhoma.map: node HOMA_1,
 *     and HOMA_1.1 after it for the functions added since, each named
 *     there; functions are only ever added).
 */
#ifndef HOMA_H
#define HOMA_H

#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#ifdef __cplusplus
extern "C" {
#endif

/* HOMA_API_VERSION is the version of this interface; homa_api_version()
 * returns the library's, so a binding can check the two agree.
 *   1  the first (symbols of node HOMA_1)
 *   2  homa_host_info_get and HOMA_ENOTSUP (node HOMA_1.1)
 *   3  homa_send's HOMA_SEND_PRIORITY (no new symbol) */
#define HOMA_API_VERSION 3

/* Local statuses (negative). */
enum homa_status {
	HOMA_OK = 0,
	HOMA_EINVAL = -1,     /* a bad argument: address, port, buffer, RPC id, message */
	HOMA_ETIMEDOUT = -2,  /* the wait's timeout passed, or homa_wake() ended it */
	HOMA_ECLOSED = -3,    /* homa_close() or homa_shutdown() was called */
	HOMA_EDEAD = -4,      /* the daemon ended the session (it exited, or ended this worker) */
	HOMA_EARENA = -5,     /* no room in the transmit arena within op_timeout */
	HOMA_ESQFULL = -6,    /* the submission ring stayed full for op_timeout */
	HOMA_ENORPC = -7,     /* no such RPC of this client, or already claimed */
	HOMA_EATTACH = -8,    /* attaching failed: connect, greeting, descriptors, mapping */
	HOMA_EREFUSED = -9,   /* the daemon refused this process's credentials */
	HOMA_ELAYOUT = -10,   /* the region's header is invalid or of another version */
	HOMA_EPLATFORM = -11, /* not a machine the rings are defined for */
	HOMA_ENOMEM = -12,    /* the library could not allocate its own state */
	HOMA_EREPLIED = -13,  /* the request was already answered */
	HOMA_ENOTSUP = -14,   /* the daemon does not say this (its header lacks the feature) */
};

/* Protocol error codes (positive): shm.ErrCode's numbers. */
enum homa_errcode {
	HOMA_ERR_BAD_OP = 1,
	HOMA_ERR_BAD_FLAGS = 2,
	HOMA_ERR_BAD_RESERVED = 3,
	HOMA_ERR_BAD_PORT = 4,
	HOMA_ERR_BAD_PEER = 5,
	HOMA_ERR_BAD_LENGTH = 6,
	HOMA_ERR_BAD_ARENA = 7,
	HOMA_ERR_BAD_PAGE = 8,
	HOMA_ERR_BAD_RPC = 9,
	HOMA_ERR_BAD_COMP_ERROR = 10,
	HOMA_ERR_TIMEOUT = 16,
	HOMA_ERR_UNREACHABLE = 17,
	HOMA_ERR_PORT_UNREACHABLE = 18,
	HOMA_ERR_ABORTED = 19,
	HOMA_ERR_NO_BUFFER_SPACE = 20,
	HOMA_ERR_NO_RPC = 21,
	HOMA_ERR_PORT_IN_USE = 22,
	HOMA_ERR_LIMIT = 23,
	HOMA_ERR_PEER_RESTARTED = 24,
	HOMA_ERR_CLOSED = 25,
	HOMA_ERR_PEER_MESSAGE_LENGTH = 26,
};

/* The name of a status or error code: "timed out", "peer unreachable", ...
 * Never NULL; a static string. */
const char *homa_strerror(int status);

/* HOMA_API_VERSION of the library. */
int homa_api_version(void);

/* A Homa address: family 4 (ip[0..3] the IPv4 address, the rest zero) or
 * 6 (ip the IPv6 address; an IPv4-mapped one is taken as IPv4 by
 * homa_addr_parse), and a port. */
typedef struct homa_addr {
	uint8_t family; /* 4 or 6 */
	uint8_t reserved;
	uint16_t port; /* host byte order */
	uint8_t ip[16];
} homa_addr;

/* Parses "a.b.c.d" or an IPv6 address (no brackets, no port) and port into
 * a; HOMA_EINVAL when host is neither, or is the unspecified address. */
int homa_addr_parse(const char *host, uint16_t port, homa_addr *a);

/* Writes a's address (no port) as text into buf; returns buf, or NULL when
 * len is too small (46 bytes always suffice). */
const char *homa_addr_format(const homa_addr *a, char *buf, size_t len);

/* The largest server port (1..HOMA_MAX_SERVER_PORT); client ports are above. */
#define HOMA_MAX_SERVER_PORT 0x7fff
/* The receive pool's page size (kernel Homa's bpage). */
#define HOMA_PAGE_SIZE 65536

/* Options of homa_attach. Call homa_options_init first, then change what
 * you need: fields added later keep their defaults for old callers (size
 * says how much of the struct the caller knows). */
typedef struct homa_options {
	uint32_t size;          /* sizeof(homa_options), set by homa_options_init */
	uint32_t max_message;   /* largest message to send or take; 0: the region's (its header) */
	int64_t spin_ns;        /* how long a wait spins on the completion ring before it sleeps; 50 us */
	int64_t op_timeout_ns;  /* wait for a submission's completion, arena or ring space; 10 s */
	int64_t max_sleep_ns;   /* longest single sleep before the ring is checked again; 1 s */
} homa_options;

void homa_options_init(homa_options *o);

/* A worker's session with the daemon. Opaque. */
typedef struct homa_client homa_client;

/* Attaches to the daemon's control socket at path (the "ok" greeting, the
 * memfd and eventfd, the mapping, the header checked). On failure returns a
 * status and, when err is not NULL, writes why into err (at most errlen
 * bytes, NUL-terminated). o may be NULL (the defaults). */
int homa_attach(const char *path, const homa_options *o, homa_client **out, char *err, size_t errlen);

/* Ends the session: closes the control connection (the daemon aborts this
 * worker's RPCs and unbinds its ports; the replies it submitted, those
 * still in the submission ring too, still go out until acked or the
 * daemon's workers.linger, as a TCP close delivers what was written) and
 * the eventfd; waits in other threads return HOMA_ECLOSED. Messages the caller still holds stay
 * readable until homa_destroy(). Idempotent. */
void homa_close(homa_client *c);

/* Makes every current and future blocking call return HOMA_ECLOSED, without
 * taking the lock (for a signal handler or another thread); homa_close()
 * must still be called. */
void homa_shutdown(homa_client *c);

/* Closes c if it is open and frees it, unmapping the region: every
 * message's data becomes invalid. No other call on c may be in progress or
 * follow. */
void homa_destroy(homa_client *c);

/* Makes a wait in progress in another thread (homa_wait, homa_receive, ...)
 * return HOMA_ETIMEDOUT as if its timeout had passed -- or, if none is in
 * progress, the next one, once. The waits it ends are those for outcomes
 * (homa_wait, homa_receive, homa_receive_burst); a call that waits for the
 * daemon's answer to its own submission (homa_bind, homa_send without
 * HOMA_SEND_DETACHED, homa_reply, homa_abort, homa_abort_all) or for arena
 * room is not ended by it and leaves the wake-up to the next such wait. */
void homa_wake(homa_client *c);

/* The wake-up eventfd (readable when the daemon woke a sleeping wait). */
int homa_fd(const homa_client *c);

/* The region's facts. */
uint32_t homa_max_message(const homa_client *c); /* options' max_message or the region's */
uint64_t homa_arena_size(const homa_client *c);
uint64_t homa_pool_pages(const homa_client *c);

/* Where each part of a region lives (shm/layout.go's header, checked). */
typedef struct homa_layout {
	uint32_t version;      /* the layout version of the header */
	uint32_t max_message;  /* the region's largest message, bytes */
	uint64_t region_size;
	uint64_t sq_offset, sq_entries;
	uint64_t cq_offset, cq_entries;
	uint64_t arena_offset, arena_size;
	uint64_t pool_offset, pool_pages;
} homa_layout;

/* Why a header was refused: the header field as shm/layout.go names it
 * ("ArenaOffset", ...), the value found, and what is wrong with it. */
typedef struct homa_layout_error {
	char field[32];
	uint64_t value;
	char reason[128];
} homa_layout_error;

/* Parses and checks the header at hdr of a mapping of mapped bytes (as
 * shm.ParseHeader does): 0, or HOMA_ELAYOUT with *e filled (e may be NULL). */
int homa_layout_parse(const void *hdr, size_t mapped, homa_layout *l, homa_layout_error *e);

/* The client's layout (checked at attach). */
void homa_get_layout(const homa_client *c, homa_layout *l);

/* What the daemon says of the host whose socket the client attached to
 * (the port it opened it for): its Homa addresses, which peers reach this
 * worker at, and its link. Fields are only ever added at the end (size
 * says how many bytes the library filled). */
typedef struct homa_host_info {
	uint32_t size;      /* the caller sets sizeof(homa_host_info) (or less, at least 8) */
	uint32_t link_mbps; /* the port's link speed, Mbit/s; 0: unknown */
	uint32_t mtu;       /* the port's IP MTU, bytes; 0: unknown */
	uint32_t reserved;
	homa_addr ipv4;     /* family 4, port 0; family 0 when the host has none */
	homa_addr ipv6;     /* family 6, port 0; family 0 when the host has none */
} homa_host_info;

/* Fills *h up to h->size bytes (size set to what was filled): 0, and at
 * least one address has its family set; HOMA_ENOTSUP when the daemon does
 * not say its host (a daemon from before the header's FeatureHostInfo),
 * with every field filled zero; HOMA_EINVAL when c or h is NULL or
 * h->size is below 8. Read from the header at attach: any thread, no lock.
 * Since HOMA_API_VERSION 2 (node HOMA_1.1). */
int homa_host_info_get(const homa_client *c, homa_host_info *h);

/* The client's mapping of the whole region and its size: for diagnostics
 * and tests (a test that corrupts the region to see the client survive). */
void *homa_region(const homa_client *c, size_t *size);

/* Binds server port (1..HOMA_MAX_SERVER_PORT): requests to it arrive
 * through homa_receive(). Waits for the daemon's answer. */
int homa_bind(homa_client *c, uint16_t port);

/* homa_send's flags. */
#define HOMA_SEND_DETACHED 1u /* return once on the submission ring; the outcome comes through homa_receive */
/* The request's unscheduled packets go at priority level l (0 lowest to 7
 * highest) instead of the level its length gives; the receiver still
 * chooses the level of the bytes it grants. HOMA_ENOTSUP when the daemon
 * does not take it (its header lacks the feature). */
#define HOMA_SEND_PRIORITY(l) (2u | (((unsigned)(l) & 7u) << 4))

/* Sends a request: the bytes of iov[0..iovcnt) one after the other, copied
 * into the transmit arena once, to dst (a server port). tag is the
 * caller's, returned in the response's or failure's homa_msg.
 *
 * Without flags: waits for the daemon's acceptance and stores the new RPC
 * id (even) in *rpc_id (may be NULL); its outcome is claimed with
 * homa_wait(rpc_id), or, unclaimed, comes through homa_receive().
 * HOMA_SEND_DETACHED: returns as soon as the request is on the submission
 * ring (*rpc_id, if given, is set to 0); the outcome (response, or failure,
 * the daemon refusing the send included) comes through homa_receive() only. */
int homa_send(homa_client *c, const homa_addr *dst, const struct iovec *iov, int iovcnt, uint64_t tag,
	      unsigned flags, uint64_t *rpc_id);

/* What a homa_msg is. */
enum homa_msg_kind {
	HOMA_MSG_REQUEST = 1,  /* a request to a bound port: answer with homa_reply */
	HOMA_MSG_RESPONSE = 2, /* the response of a client RPC */
	HOMA_MSG_FAILED = 3,   /* a client RPC failed, or a detached send or reply was refused: err says why */
};

/* A received message, or a failure handed out by homa_receive / homa_wait.
 * The caller owns it until homa_msg_release(). */
typedef struct homa_msg {
	uint64_t id;     /* RPC id: odd for a request (the server id), even for a client RPC; 0 for a refused send */
	uint64_t tag;    /* RESPONSE/FAILED of a send: the tag given to homa_send; 0 otherwise */
	homa_addr peer;  /* the other end: the client of a request, the server of a client RPC */
	uint16_t port;   /* the local port it concerns (the bound port for a request) */
	uint8_t kind;    /* enum homa_msg_kind */
	uint8_t refused; /* FAILED: 1 a detached send was refused, 2 a detached reply was refused, 0 an RPC failed */
	uint16_t err;    /* FAILED: the protocol error code (enum homa_errcode); 0 otherwise */
	uint16_t reserved;
	uint32_t length;  /* bytes of data */
	const uint8_t *data; /* REQUEST/RESPONSE: the bytes, in the receive pool; NULL for FAILED */
	uint64_t handle;  /* the library's: which pool pages to give back */
} homa_msg;

/* Waits for the outcome of client RPC rpc_id (from homa_send without
 * HOMA_SEND_DETACHED): 0 and the response in *m, or the protocol error
 * code (> 0) and m->kind == HOMA_MSG_FAILED, or HOMA_ETIMEDOUT (the RPC
 * goes on: wait again or abort it), HOMA_ENORPC (unknown or claimed), or
 * another status. */
int homa_wait(homa_client *c, uint64_t rpc_id, homa_msg *m, int64_t timeout_ns);

/* The next request to a bound port, or the next ended client RPC that no
 * homa_wait claimed, or the next refused detached send or reply, in
 * arrival order: 0 with *m filled (check m->kind), or HOMA_ETIMEDOUT. */
int homa_receive(homa_client *c, homa_msg *m, int64_t timeout_ns);

/* Like homa_receive for up to n items: returns how many it stored in m
 * (waiting up to timeout_ns for the first only), or a status < 0. */
int homa_receive_burst(homa_client *c, homa_msg *m, int n, int64_t timeout_ns);

/* homa_reply's flags. */
#define HOMA_REPLY_DETACHED 1u /* return once on the submission ring; a refusal comes through homa_receive */

/* Answers request req (a HOMA_MSG_REQUEST of this client, not released
 * yet or released: only its id and peer are used) with the bytes of
 * iov[0..iovcnt), copied into the arena before it returns. Without flags
 * waits for the daemon's acceptance; HOMA_EREPLIED if req was answered
 * already. A reply refused with HOMA_ERR_PEER_MESSAGE_LENGTH leaves the
 * request unanswered: it may be answered again, shorter. */
int homa_reply(homa_client *c, const homa_msg *req, const struct iovec *iov, int iovcnt, unsigned flags);

/* Gives a message's pool pages back to the daemon and clears *m. The pages
 * ride on the next send or reply where the daemon takes them there, or go
 * back on their own when a wait finds nothing (as it sleeps, or as it
 * returns at its deadline), or once 16 runs or a quarter of the pool wait:
 * a client that calls nothing holds them meanwhile. A FAILED message holds no pages; releasing it only clears it.
 * Idempotent on a cleared message. */
void homa_msg_release(homa_client *c, homa_msg *m);

/* Ends client RPC rpc_id and forgets it (a response that still arrives is
 * dropped): returns 1 if the daemon aborted it, 0 if it had already ended
 * (its unclaimed outcome is dropped too), or a status. */
int homa_abort(homa_client *c, uint64_t rpc_id);

/* Aborts every client RPC of this worker and drops their outcomes,
 * including ended ones nobody claimed yet. */
int homa_abort_all(homa_client *c);

/* Does what can be done without waiting: reads the completion ring and
 * submits pending page returns. Returns the number of completions read, or
 * a status (HOMA_EDEAD, HOMA_ECLOSED). */
int homa_poll(homa_client *c);

/* A session's counters. Fields are only ever added at the end (size says
 * how many bytes the library filled). */
typedef struct homa_stats {
	uint32_t size;
	uint32_t reserved;
	uint64_t sends, send_refused, replies, reply_refused, aborts;
	uint64_t requests, responses, rpc_errors;
	uint64_t bad_completions, unexpected_completions;
	uint64_t page_returns, page_return_errors;
	uint64_t spins, sleeps, wakeups, arena_waits, sq_full_waits;
	uint64_t sq_corrupt, cq_corrupt;
	uint64_t arena_size, arena_used, arena_ranges, arena_largest_free;
	uint64_t pool_pages, pool_pages_held, messages_alive;
	uint64_t rpcs_outstanding, ready, submissions_pending;
	uint64_t submissions, completions; /* ring entries pushed and read, all kinds */
	uint64_t doorbells; /* submissions that found the daemon's loop asleep and rang its doorbell */
} homa_stats;

/* Fills *s (s->size must be set by the caller to sizeof(*s) or less). */
int homa_stats_get(homa_client *c, homa_stats *s);

/* What the last bad or unexpected completion was (for diagnostics; empty
 * if none). Copied into buf (NUL-terminated); returns buf. */
const char *homa_last_bad(homa_client *c, char *buf, size_t len);

#ifdef __cplusplus
}
#endif

#endif /* HOMA_H */
