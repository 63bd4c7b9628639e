/*
 * entry.h: the 64-byte ring entries of shm/entry.go, encoded and decoded
 * field by field (little-endian, whatever the host), and the checks of
 * shm.ParseCompletion and shm.ParseSubmission.
 */
#ifndef HM_ENTRY_H
#define HM_ENTRY_H

#include <stdint.h>

#define HM_ENTRY_SIZE 64

/* Submission ops (shm.Op). */
enum { HM_OP_BIND = 1, HM_OP_SEND, HM_OP_REPLY, HM_OP_ABORT, HM_OP_ABORT_ALL, HM_OP_RETURN_PAGES, HM_OP_END };
/* Completion ops (shm.CompOp). */
enum { HM_COMP_ACCEPTED = 1, HM_COMP_REQUEST, HM_COMP_RESPONSE, HM_COMP_ERROR, HM_COMP_RELEASED, HM_COMP_END };

#define HM_SUB_FLAG_QUIET 1u    /* shm.SubFlagQuiet */
#define HM_SUB_FLAG_PRIORITY 2u /* shm.SubFlagPriority: the level in bits 2-4 */
#define HM_SUB_PRIORITY_SHIFT 2
#define HM_SUB_PRIORITY_MASK (7u << HM_SUB_PRIORITY_SHIFT)
#define HM_COMP_FLAG_RELEASED 1u /* shm.CompFlagReleased */
#define HM_MAX_SERVER_PORT 0x7fff

/* An entry's fields, either direction (shm's fields struct). */
typedef struct hm_entry {
	uint8_t op, flags;
	uint16_t port;     /* Bind: port to bind; completion: local port */
	uint32_t length;   /* message or released bytes */
	uint64_t cookie;   /* the submission's, echoed */
	uint64_t rpc;      /* RPC id */
	uint8_t ip[4];     /* IPv4 peer, network order, or zero */
	uint16_t peer_port;
	uint16_t err;      /* completion: ErrCode */
	uint64_t offset;   /* arena offset */
	uint32_t page, pages;
	uint8_t ip6[16];   /* IPv6 peer, network order, or zero */
} hm_entry;

/* What entries are checked against (shm.Limits). */
typedef struct hm_limits {
	uint64_t arena_size; /* bytes */
	uint64_t pool_pages;
	uint32_t max_message; /* bytes */
} hm_limits;

void hm_entry_encode(const hm_entry *e, uint8_t dst[HM_ENTRY_SIZE]);
void hm_entry_decode(const uint8_t src[HM_ENTRY_SIZE], hm_entry *e);

/* shm.ParseCompletion: decode src and check it; 0 (ErrCodeNone) or the
 * code that says what is wrong. */
int hm_parse_completion(const uint8_t src[HM_ENTRY_SIZE], const hm_limits *lim, hm_entry *c);

/* shm.ParseSubmission (for the tests' golden vectors and the fake
 * engine's view): decode src and check it as the daemon does. */
int hm_parse_submission(const uint8_t src[HM_ENTRY_SIZE], const hm_limits *lim, hm_entry *s);

/* Names of ErrCodes as shm.ErrCode.String() (never NULL; codes without a
 * name give "error(N)" written into buf, which must hold 16 bytes). */
const char *hm_err_name(unsigned code, char buf[16]);

/* Names of completion ops ("accepted", ..., "comp(N)"). */
const char *hm_comp_name(unsigned op, char buf[16]);

/* Writes a short text form of c into buf (for last_bad). */
void hm_entry_format(const hm_entry *c, char *buf, unsigned len);

#endif
