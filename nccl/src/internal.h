/*
 * internal.h: the plugin's state (devices, comms, requests) and the
 * messages its ends exchange over Homa. One mutex (g.mu) guards it all;
 * see ../README.md ("Design").
 */
#ifndef HOMA_NCCL_INTERNAL_H
#define HOMA_NCCL_INTERNAL_H

#include <pthread.h>
#include <stdint.h>

#include "homa.h"
#include "plugin.h"

/* ------------------------------------------------------------ the wire */

/* Every message of the plugin starts with hn_wire (little-endian, as the
 * rings are): CONNECT (to a listen's port), DATA (one isend's bytes follow),
 * CREDIT and PROBE (a receiving end to its sender's port). Each is a Homa
 * request; its response is an hn_answer. */
#define HN_MAGIC 0x314e4348u /* "HCN1" */
#define HN_VERSION 1
enum hn_kind { HN_CONNECT = 1, HN_DATA = 2, HN_CREDIT = 3, HN_PROBE = 4 };

typedef struct hn_wire {
	uint32_t magic;
	uint8_t kind;
	uint8_t version;
	uint16_t flags;
	uint32_t to_id;   /* CONNECT: the listen's id; DATA: the receiving comm's; CREDIT, PROBE: the sending comm's */
	uint32_t from_id; /* the id of the object that sent it */
	uint64_t key;     /* the secret of the object named by to_id */
	uint64_t seq;     /* DATA: the message's number; CREDIT: the new credit; CONNECT: the sender's key */
	uint64_t arg;     /* CONNECT: the sender's port (bits 0-15) and traffic class + 1 (bits 16-31) */
} hn_wire;

/* An answer's status. */
enum hn_status {
	HN_OK = 0,
	HN_EBADKEY = 1,  /* no such listen or comm, or the wrong key: a stranger, or a handle of another job */
	HN_EBACKLOG = 2, /* the listen holds HN_BACKLOG connections not yet accepted */
	HN_ECREDIT = 3,  /* a message past the credit the receiver gave, or a number already used */
	HN_ECLOSED = 4,  /* the comm is closed or failed */
	HN_ETOOBIG = 5,  /* a message longer than the receive posted for it */
};

typedef struct hn_answer {
	uint32_t status;
	uint32_t id;     /* CONNECT: the receiving comm's id */
	uint64_t key;    /* CONNECT: its key */
	uint64_t credit; /* CONNECT, DATA: the sender may send the messages numbered below it */
} hn_answer;

/* The connect handle NCCL carries from listen to connect (<= 128 bytes). */
#define HN_HANDLE_MAGIC 0x484e4c48u /* "HLNH" */
typedef struct hn_handle {
	uint32_t magic;
	uint16_t version;
	uint8_t family; /* 4 or 6 */
	uint8_t dev;
	uint16_t port; /* the listening process's bound port */
	uint16_t reserved;
	uint32_t listen_id;
	uint64_t key;
	uint8_t ip[16];
} hn_handle;

/* ------------------------------------------------------------ the state */

#define HN_MAX_DEVS 8
#define HN_MAX_OBJS 4096 /* listens and comms of the process */
#define HN_MAX_REQS 128  /* requests in flight per comm */
#define HN_WIN 256       /* message numbers a receiving comm tracks: HN_MAX_REQS + the early window */
#define HN_BACKLOG 64    /* connections a listen holds before accept */
#define HN_RELEASES 512  /* received messages waiting for the progress thread to give them back */
#define HN_HANDOFF_NS 1000000 /* callers silent this long: the progress thread reads rx */

enum hn_type { HN_FREE = 0, HN_LISTEN, HN_SEND, HN_RECV };
enum hn_rstate { R_FREE = 0, R_PENDING, R_DONE, R_ERROR };

struct hn_obj;

typedef struct hn_req {
	struct hn_obj *comm;
	uint8_t kind;  /* HN_SEND or HN_RECV */
	uint8_t state; /* enum hn_rstate */
	uint8_t warned;
	uint64_t seq;
	void *buf;
	size_t size; /* a send's bytes, a receive's room */
	size_t got;  /* a receive's bytes */
	int64_t t0;
} hn_req;

typedef struct hn_counters {
	uint64_t requests, bytes, stalls, errors;
	uint64_t at_priority; /* send: messages sent at the class's priority */
	uint64_t lat_ns_sum, lat_ns_max, completed;
	uint64_t early; /* receive: messages that came before their irecv */
} hn_counters;

typedef struct hn_dev hn_dev;

typedef struct hn_obj {
	uint8_t type; /* enum hn_type */
	uint32_t id;  /* (generation << 12) | index */
	uint64_t key;
	hn_dev *dev;
	int failed;
	char why[200]; /* why it failed */
	hn_counters n;
	/* a listen */
	struct hn_obj *backlog[HN_BACKLOG];
	int nbacklog;
	/* a comm: the peer */
	homa_addr peer;     /* send: the listener's port; recv: where the sender's DATA comes from */
	homa_addr peer_rx;  /* recv: the sender's bound port (CREDIT, PROBE) */
	uint32_t peer_id;   /* the other end's object id */
	uint64_t peer_key;  /* the other end's key */
	int traffic_class;  /* send: NCCL's, or NCCL_NET_TRAFFIC_CLASS_UNDEF */
	unsigned send_flags; /* send: homa_send's flags for DATA (HOMA_SEND_PRIORITY) */
	struct hn_obj *listen; /* recv, until accepted */
	/* send */
	int ready;
	uint64_t next_seq, credit;
	int inflight;
	/* recv */
	uint64_t next_post, credit_told, arrived_to;
	int posted;
	int credit_owed;
	int64_t last_progress, last_probe;
	int probing;
	homa_msg early[HN_WIN]; /* arrived before their irecv (data NULL: none) */
	hn_req req[HN_WIN]; /* send: by seq % HN_MAX_REQS; recv: by seq % HN_WIN */
} hn_obj;

struct hn_dev {
	int index;
	char path[256];
	char name[64];
	homa_client *rx; /* bound port, requests in, answers out: read by a caller or the progress thread (rx_thread, below) */
	homa_client *tx; /* everyone's under g.mu: requests out, never blocking */
	homa_addr self;  /* the host's address and the bound port */
	uint32_t link_mbps;
	size_t max_bytes;
	pthread_t thread;
	pthread_cond_t idle; /* the progress thread's wait while callers read rx; signalled when the device dies */
	uint64_t strangers, late, refused; /* logged with each comm's counters at close */
	/* Who reads rx (changed only under g.mu): callers of test, isend and
	 * irecv poll it themselves, and the progress thread waits in it
	 * (without g.mu) once they have not called for HN_HANDOFF_NS; a caller
	 * that finds it there wakes it to hand rx over. See ../README.md
	 * ("Progress"). */
	int rx_thread;     /* 1: the progress thread is in (or entering) a wait on rx */
	int yield_asked;   /* a caller woke it for rx */
	int dead;          /* the daemon's session ended: nobody reads rx again */
	int64_t last_call; /* when a caller last polled or asked for rx */
	uint64_t handoffs; /* times a caller woke the thread for rx */
	homa_msg releases[HN_RELEASES]; /* for the progress thread to give back (rx is in its wait) */
	int nreleases;
};

typedef struct hn_global {
	pthread_mutex_t mu;
	int inited;
	ncclDebugLogger_t log;
	int ndev;
	hn_dev dev[HN_MAX_DEVS];
	hn_obj *objs[HN_MAX_OBJS];
	uint32_t gens[HN_MAX_OBJS];
	int hwm; /* the highest index of objs ever used */
	int early;        /* messages a sender may send ahead of the receives posted */
	int64_t warn_ns;  /* a request older than this is logged once */
	int64_t probe_ns; /* a receive waiting this long probes its sender */
} hn_global;

extern hn_global g;

#define HN_WARN(...) hn_log(NCCL_LOG_WARN, NCCL_NET, __FILE__, __LINE__, __VA_ARGS__)
#define HN_INFO(...) hn_log(NCCL_LOG_INFO, NCCL_NET, __func__, __LINE__, __VA_ARGS__)
void hn_log(ncclDebugLogLevel level, unsigned long flags, const char *file, int line, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));

int64_t hn_now(void);
const char *hn_peer_str(const homa_addr *a, char *buf, size_t len);

#endif
