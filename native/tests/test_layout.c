/*
 * test_layout: homa_layout_parse against headers refused for every field
 * (python's test_layout.py, shm's layout_test.go: the same field names and
 * reasons), MaxMessage 0 from an older daemon; then homa_attach against a
 * scripted control socket: "error <text>", no descriptors, a bad header
 * (HOMA_ELAYOUT, "layout FIELD = VALUE: REASON"), a good one.
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
};

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
}

/* ---- a scripted control socket ---- */

struct script {
	int ls;
	const char *greeting;
	int nfds;              /* descriptors passed with it */
	const homa_layout *lay; /* the region's header; NULL: none */
	const char *bad_field;
	uint64_t bad_value;
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
	homa_destroy(c);
}

int main(void)
{
	parse();
	attach();
	return 0;
}
