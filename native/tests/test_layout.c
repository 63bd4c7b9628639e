/*
 * test_layout: homa_layout_parse against headers refused for every field
 * (python's test_layout.py, shm's layout_test.go: the same field names and
 * reasons), MaxMessage 0 from an older daemon, the host fields read only
 * under FeatureHostInfo; then homa_attach against a scripted control
 * socket: "error <text>", no descriptors, a bad header (HOMA_ELAYOUT,
 * "layout FIELD = VALUE: REASON"), a good one with and without a host
 * (homa_host_info_get), an IPv6-only host.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "layout.h"
#include "util.h"

/* NewLayout(SQ 64, CQ 256, arena 1 MB, pool 16) */
static const homa_layout L = {.version = 1, .max_message = 1000000, .region_size = 2129920, .sq_offset = 4096,
			      .sq_entries = 64, .cq_offset = 12288, .cq_entries = 256, .arena_offset = 32768,
			      .arena_size = 1 << 20, .pool_offset = 1081344, .pool_pages = 16};

static void put(uint8_t *h, int off, int size, uint64_t v)
{
	for (int i = 0; i < size; i++)
		h[off + i] = (uint8_t)(v >> (8 * i));
}

struct field {
	const char *name;
	int off, size;
};

static const struct field fields[] = {
	{"Magic", 0, 8},        {"Version", 8, 4},      {"HeaderSize", 12, 4}, {"RegionSize", 16, 8},
	{"SQOffset", 24, 8},    {"SQEntries", 32, 8},   {"CQOffset", 40, 8},   {"CQEntries", 48, 8},
	{"ArenaOffset", 56, 8}, {"ArenaSize", 64, 8},   {"PoolOffset", 72, 8}, {"PoolPages", 80, 8},
	{"EntrySize", 88, 4},   {"PageSize", 92, 4},    {"MaxMessage", 96, 4}, {"Features", 100, 4},
	{"HostIPv4", 104, 4},   {"LinkMbps", 108, 4},   {"MTU", 128, 4}, /* HostIPv6 (112, 16 bytes): set6 */
};

static void set6(uint8_t *h, const uint8_t ip[16]) { memcpy(h + 112, ip, 16); }

/* fd00::5 */
static const uint8_t V6[16] = {0xfd, [15] = 5};

static void setf(uint8_t *h, const char *name, uint64_t v)
{
	for (unsigned i = 0; i < sizeof(fields) / sizeof(fields[0]); i++)
		if (strcmp(fields[i].name, name) == 0) {
			put(h, fields[i].off, fields[i].size, v);
			return;
		}
	abort();
}

static void header(uint8_t *h, const homa_layout *l)
{
	memset(h, 0, 4096);
	setf(h, "Magic", HM_MAGIC);
	setf(h, "Version", 1);
	setf(h, "HeaderSize", 4096);
	setf(h, "RegionSize", l->region_size);
	setf(h, "SQOffset", l->sq_offset);
	setf(h, "SQEntries", l->sq_entries);
	setf(h, "CQOffset", l->cq_offset);
	setf(h, "CQEntries", l->cq_entries);
	setf(h, "ArenaOffset", l->arena_offset);
	setf(h, "ArenaSize", l->arena_size);
	setf(h, "PoolOffset", l->pool_offset);
	setf(h, "PoolPages", l->pool_pages);
	setf(h, "EntrySize", 64);
	setf(h, "PageSize", 65536);
	setf(h, "MaxMessage", l->max_message);
	setf(h, "Features", 3);
}

/* host_fields: the header's host under FeatureHostInfo (HostIPv4 in
 * network order), nothing without it whatever the bytes, and the bit with
 * no address refused as shm refuses it. */
static void host_fields(uint8_t *h)
{
	homa_layout got;
	homa_layout_error e;
	hm_host host;
	header(h, &L);
	setf(h, "HostIPv4", 0x0500000a); /* 10.0.0.5, little-endian */
	setf(h, "LinkMbps", 25000);
	set6(h, V6);
	setf(h, "MTU", 9000);
	CHECK_EQ(hm_layout_parse(h, L.region_size, &got, &e, &host), 0); /* the bit clear: an older daemon's */
	CHECK_EQ(host.said, 0);
	CHECK_EQ(host.link_mbps, 0);
	CHECK(host.ipv4[0] == 0 && host.ipv6[0] == 0);
	setf(h, "Features", 3 | HM_FEATURE_HOST_INFO);
	CHECK_EQ(hm_layout_parse(h, L.region_size, &got, &e, &host), 0);
	CHECK(memcmp(&got, &L, sizeof(got)) == 0);
	static const uint8_t v4[4] = {10, 0, 0, 5};
	CHECK(host.said && memcmp(host.ipv4, v4, 4) == 0 && memcmp(host.ipv6, V6, 16) == 0);
	CHECK_EQ(host.link_mbps, 25000);
	CHECK_EQ(host.mtu, 9000);
	setf(h, "HostIPv4", 0); /* IPv6 alone is enough */
	CHECK_EQ(hm_layout_parse(h, L.region_size, &got, &e, &host), 0);
	static const uint8_t zero[16];
	set6(h, zero); /* no address at all */
	memset(&e, 0, sizeof(e));
	CHECK_EQ(hm_layout_parse(h, L.region_size, &got, &e, &host), HOMA_ELAYOUT);
	CHECK_EQ(homa_layout_parse(h, L.region_size, &got, &e), HOMA_ELAYOUT);
	CHECK(strcmp(e.field, "HostIPv4") == 0);
	CHECK_EQ(e.value, 0);
	CHECK(strcmp(e.reason, "zero, and HostIPv6 too, in a header with FeatureHostInfo") == 0);
}

static void parse(void)
{
	static uint8_t h[4096];
	homa_layout got;
	homa_layout_error e;
	header(h, &L);
	CHECK_EQ(homa_layout_parse(h, L.region_size, &got, &e), 0);
	CHECK(memcmp(&got, &L, sizeof(got)) == 0);
	setf(h, "MaxMessage", 0); /* an older daemon */
	CHECK_EQ(homa_layout_parse(h, L.region_size, &got, &e), 0);
	CHECK_EQ(got.max_message, 1000000);
	struct {
		const char *field;
		uint64_t value;
		const char *want, *reason;
	} cases[] = {
		{"Magic", 0x314D4853414D4F49ull, "Magic", "not \"HOMASHM1\""},
		{"Version", 2, "Version", "this build reads version 1"},
		{"HeaderSize", 8192, "HeaderSize", "want 4096"},
		{"EntrySize", 128, "EntrySize", "want 64"},
		{"PageSize", 4096, "PageSize", "want 65536"},
		{"RegionSize", L.region_size + 1, "RegionSize", "not in 4096..2129920 (the mapped length)"},
		{"RegionSize", 4095, "RegionSize", NULL},
		{"SQEntries", 63, "SQEntries", "not a power of two in 1..1048576"},
		{"SQEntries", 0, "SQEntries", NULL},
		{"CQEntries", 1 << 21, "CQEntries", NULL},
		{"ArenaSize", 0, "ArenaSize", "not in 1..1099511627776"},
		{"ArenaSize", (1ull << 40) + 1, "ArenaSize", NULL},
		{"PoolPages", 0, "PoolPages", "not in 1..16777216"},
		{"PoolPages", (1 << 24) + 1, "PoolPages", NULL},
		{"ArenaOffset", L.arena_offset + 8, "ArenaOffset", "not a multiple of 64 (cache line)"},
		{"PoolOffset", L.region_size, "PoolOffset", "part of 1048576 bytes ends beyond RegionSize 2129920"},
		{"PoolOffset", UINT64_MAX - 63, "PoolOffset", NULL},
		{"SQOffset", 0, "SQOffset", "overlaps the part at HeaderSize 0"},
		{"CQOffset", L.sq_offset + 64, "CQOffset", "overlaps the part at SQOffset 4096"},
		{"ArenaOffset", L.pool_offset - 64, "PoolOffset", "overlaps the part at ArenaOffset 1081280"},
		{"MaxMessage", 1u << 31, "MaxMessage", "not in 1..2147483647"},
		{"Features", 3 | HM_FEATURE_HOST_INFO, "HostIPv4", "zero, and HostIPv6 too, in a header with FeatureHostInfo"},
		{"Features", 3 | HM_FEATURE_HOST_INFO | 1u << 31, "HostIPv4", NULL}, /* unknown bits are the daemon's */
	};
	for (unsigned i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		header(h, &L);
		setf(h, cases[i].field, cases[i].value);
		memset(&e, 0, sizeof(e));
		int rc = homa_layout_parse(h, L.region_size, &got, &e);
		if (rc != HOMA_ELAYOUT || strcmp(e.field, cases[i].want) != 0 ||
		    (cases[i].reason && strcmp(e.reason, cases[i].reason) != 0)) {
			fprintf(stderr, "case %u (%s = %llu): rc %d field %s value %llu reason %s\n", i, cases[i].field,
				(unsigned long long)cases[i].value, rc, e.field, (unsigned long long)e.value, e.reason);
			exit(1);
		}
		if (strcmp(cases[i].field, cases[i].want) == 0)
			CHECK_EQ(e.value, cases[i].value);
	}
	CHECK_EQ(homa_layout_parse(h, 100, &got, &e), HOMA_ELAYOUT);
	CHECK(strcmp(e.field, "RegionSize") == 0);
	CHECK_EQ(e.value, 100);
	CHECK(strcmp(e.reason, "mapped length below the 4096-byte header") == 0);
	CHECK_EQ(homa_layout_parse(h, 100, NULL, NULL), HOMA_ELAYOUT);
	host_fields(h);
}

/* ---- a scripted control socket ---- */

struct script {
	int ls;
	const char *greeting;
	int nfds;              /* descriptors passed with it */
	const homa_layout *lay; /* the region's header; NULL: none */
	const char *bad_field;
	uint64_t bad_value;
	int host6; /* the header says an IPv6-only host: fd00::5, speed unknown, MTU 1500 */
};

static void *serve(void *arg)
{
	struct script *s = arg;
	int c = accept(s->ls, NULL, NULL);
	CHECK(c >= 0);
	int fds[2] = {-1, -1};
	if (s->nfds) {
		fds[0] = memfd_create("region", MFD_CLOEXEC);
		size_t size = s->lay ? s->lay->region_size : 4096;
		CHECK(ftruncate(fds[0], (off_t)size) == 0);
		if (s->lay) {
			uint8_t *m = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fds[0], 0);
			CHECK(m != MAP_FAILED);
			header(m, s->lay);
			if (s->bad_field)
				setf(m, s->bad_field, s->bad_value);
			if (s->host6) {
				setf(m, "Features", 3 | HM_FEATURE_HOST_INFO);
				set6(m, V6);
				setf(m, "MTU", 1500);
			}
			munmap(m, size);
		}
		fds[1] = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	}
	struct iovec iov = {(void *)s->greeting, strlen(s->greeting)};
	union {
		char b[CMSG_SPACE(2 * sizeof(int))];
		struct cmsghdr a;
	} ctl;
	struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1};
	if (s->nfds) {
		mh.msg_control = ctl.b;
		mh.msg_controllen = CMSG_SPACE((size_t)s->nfds * sizeof(int));
		struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN((size_t)s->nfds * sizeof(int));
		memcpy(CMSG_DATA(cm), fds, (size_t)s->nfds * sizeof(int));
	}
	CHECK(sendmsg(c, &mh, 0) >= 0);
	for (int i = 0; i < 2; i++)
		if (fds[i] >= 0)
			close(fds[i]);
	usleep(50000);
	close(c);
	return NULL;
}

static int try_attach(struct script *s, char *err, size_t errlen, homa_client **out)
{
	char dir[] = "/tmp/libhoma-layout-XXXXXX";
	CHECK(mkdtemp(dir) != NULL);
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/s.sock", dir);
	s->ls = socket(AF_UNIX, SOCK_STREAM, 0);
	CHECK(bind(s->ls, (struct sockaddr *)&sa, sizeof(sa)) == 0 && listen(s->ls, 1) == 0);
	pthread_t t;
	CHECK(pthread_create(&t, NULL, serve, s) == 0);
	int rc = homa_attach(sa.sun_path, NULL, out, err, errlen);
	pthread_join(t, NULL);
	close(s->ls);
	unlink(sa.sun_path);
	rmdir(dir);
	return rc;
}

static void attach(void)
{
	char err[256];
	homa_client *c = NULL;
	struct script s = {.greeting = "error session limit: uid 0 holds 4\n"};
	CHECK_EQ(try_attach(&s, err, sizeof(err), &c), HOMA_EATTACH);
	CHECK(strstr(err, "session limit: uid 0 holds 4") != NULL);
	s = (struct script){.greeting = ""};
	CHECK_EQ(try_attach(&s, err, sizeof(err), &c), HOMA_EATTACH);
	CHECK(strstr(err, "without a greeting") != NULL);
	s = (struct script){.greeting = "ok\n"};
	CHECK_EQ(try_attach(&s, err, sizeof(err), &c), HOMA_EATTACH);
	CHECK(strstr(err, "got 0 descriptors") != NULL);
	s = (struct script){.greeting = "ok\n", .nfds = 1, .lay = &L};
	CHECK_EQ(try_attach(&s, err, sizeof(err), &c), HOMA_EATTACH);
	s = (struct script){.greeting = "ok\n", .nfds = 2, .lay = &L, .bad_field = "ArenaOffset", .bad_value = 32776};
	CHECK_EQ(try_attach(&s, err, sizeof(err), &c), HOMA_ELAYOUT);
	CHECK(strcmp(err, "layout ArenaOffset = 32776: not a multiple of 64 (cache line)") == 0);
	CHECK(c == NULL);
	s = (struct script){.greeting = "ok\n", .nfds = 2, .lay = &L};
	CHECK_EQ(try_attach(&s, err, sizeof(err), &c), 0);
	homa_layout got;
	homa_get_layout(c, &got);
	CHECK(memcmp(&got, &L, sizeof(got)) == 0);
	CHECK_EQ(homa_max_message(c), 1000000);
	CHECK_EQ(homa_arena_size(c), 1 << 20);
	CHECK_EQ(homa_pool_pages(c), 16);
	homa_host_info hi = {.size = sizeof(hi), .mtu = 7};
	CHECK_EQ(homa_host_info_get(c, &hi), HOMA_ENOTSUP); /* a header without the bit */
	CHECK(hi.size == sizeof(hi) && hi.mtu == 0 && hi.ipv4.family == 0 && hi.ipv6.family == 0);
	homa_destroy(c);
	s = (struct script){.greeting = "ok\n", .nfds = 2, .lay = &L, .host6 = 1};
	CHECK_EQ(try_attach(&s, err, sizeof(err), &c), 0);
	hi = (homa_host_info){.size = sizeof(hi)};
	CHECK_EQ(homa_host_info_get(c, &hi), 0);
	CHECK(hi.ipv4.family == 0 && hi.ipv6.family == 6 && memcmp(hi.ipv6.ip, V6, 16) == 0 && hi.ipv6.port == 0);
	CHECK_EQ(hi.link_mbps, 0);
	CHECK_EQ(hi.mtu, 1500);
	homa_destroy(c);
}

int main(void)
{
	parse();
	attach();
	return 0;
}
