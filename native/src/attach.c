/*
 * attach.c: homa_attach. Connect to the daemon's control socket, read its
 * one-line greeting and, after "ok\n", the two descriptors it passes with
 * SCM_RIGHTS (the region's memfd, the worker's eventfd); map the region,
 * check its header (homa_layout_parse) and set up the client's state.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "internal.h"
#include "layout.h"

__attribute__((format(printf, 4, 5))) static int fail(char *err, size_t errlen, int rc, const char *fmt, ...)
{
	if (err && errlen) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	return rc;
}

/* The rings' 64-bit indices are read and written as native words: the
 * region's are little-endian, and they must be lock-free atomics. */
static int platform_ok(void)
{
	const uint16_t one = 1;
	_Atomic uint64_t probe;
	return *(const uint8_t *)&one == 1 && atomic_is_lock_free(&probe);
}

/* greet reads the greeting (up to its newline) and up to two descriptors;
 * returns the bytes read, or -1 (errno). */
static ssize_t greet(int s, char *buf, size_t len, int fds[2], int *nfds, int *ctrunc, int64_t timeout_ns)
{
	size_t got = 0;
	*nfds = 0;
	*ctrunc = 0;
	while (got < len - 1) {
		struct pollfd p = {.fd = s, .events = POLLIN};
		int ms = timeout_ns < 0 ? -1 : (int)(timeout_ns / 1000000 + 1);
		int r = poll(&p, 1, ms);
		if (r < 0 && errno == EINTR)
			continue;
		if (r == 0) {
			errno = ETIMEDOUT;
			return -1;
		}
		if (r < 0)
			return -1;
		union {
			char b[CMSG_SPACE(sizeof(int) * 4)];
			struct cmsghdr align;
		} ctl;
		struct iovec iov = {.iov_base = buf + got, .iov_len = len - 1 - got};
		struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl.b, .msg_controllen = sizeof(ctl.b)};
		ssize_t n = recvmsg(s, &mh, MSG_CMSG_CLOEXEC);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -1;
		if (mh.msg_flags & MSG_CTRUNC)
			*ctrunc = 1;
		for (struct cmsghdr *cm = CMSG_FIRSTHDR(&mh); cm; cm = CMSG_NXTHDR(&mh, cm)) {
			if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
				continue;
			size_t k = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
			int *p = (int *)CMSG_DATA(cm);
			for (size_t i = 0; i < k; i++) {
				int fd;
				memcpy(&fd, p + i, sizeof(fd));
				if (*nfds < 2)
					fds[(*nfds)++] = fd;
				else {
					close(fd); /* more than we asked for */
					*ctrunc = 1;
				}
			}
		}
		got += (size_t)n;
		if (n == 0 || memchr(buf, '\n', got) || *nfds)
			break;
	}
	buf[got] = 0;
	return (ssize_t)got;
}

static int setup(homa_client *c, const homa_options *o, char *err, size_t errlen)
{
	homa_layout *l = &c->lay;
	c->features = hm_layout_features(c->region) & (HM_FEATURE_QUIET_ACCEPT | HM_FEATURE_RETURN_ON_SUBMIT | HM_FEATURE_PRIORITY);
	c->lim.arena_size = l->arena_size;
	c->lim.pool_pages = l->pool_pages;
	c->lim.max_message = l->max_message;
	if (o->max_message && o->max_message < l->max_message)
		c->lim.max_message = o->max_message;
	c->spin_ns = o->spin_ns < 0 ? 0 : o->spin_ns;
	c->op_timeout_ns = o->op_timeout_ns;
	c->max_sleep_ns = o->max_sleep_ns < 1000000 ? 1000000 : o->max_sleep_ns;
	c->arena_mem = c->region + l->arena_offset;
	c->pool_mem = c->region + l->pool_offset;
	if (hm_ring_attach(&c->sq, c->region + l->sq_offset, l->sq_entries, 1) ||
	    hm_ring_attach(&c->cq, c->region + l->cq_offset, l->cq_entries, 0))
		return fail(err, errlen, HOMA_EATTACH, "ring indices corrupt at attach");
	c->next_cookie = 1;
	c->returns_cap = 16;
	c->ready_cap = 64;
	if (hm_arena_init(&c->arena, l->arena_size) || hm_slab_init(&c->subs, sizeof(hm_sub), 64) ||
	    hm_slab_init(&c->rpcs, sizeof(hm_rpc), 64) || hm_slab_init(&c->reqs, sizeof(hm_req), 64) ||
	    hm_map_init(&c->sub_map, 128) || hm_map_init(&c->rpc_map, 128) || hm_map_init(&c->req_map, 128) ||
	    !(c->ready = calloc(c->ready_cap, sizeof(*c->ready))) ||
	    !(c->pages = calloc(l->pool_pages, 1)) || !(c->returns = calloc(c->returns_cap, sizeof(hm_run))))
		return fail(err, errlen, HOMA_ENOMEM, "out of memory for the client's state");
	if (pthread_mutex_init(&c->mu, NULL) || pthread_mutex_init(&c->rel_mu, NULL))
		return fail(err, errlen, HOMA_ENOMEM, "pthread_mutex_init failed");
	c->st.arena_size = l->arena_size;
	c->st.pool_pages = l->pool_pages;
	return 0;
}

void hm_free_state(homa_client *c);

/* ask_doorbell writes "doorbell\n" on the control connection and takes the
 * eventfd that comes back with the same line. */
static int ask_doorbell(homa_client *c, int s, int64_t timeout_ns, char *err, size_t errlen)
{
	static const char req[] = "doorbell\n";
	if (send(s, req, sizeof(req) - 1, MSG_NOSIGNAL) != (ssize_t)(sizeof(req) - 1))
		return fail(err, errlen, HOMA_EATTACH, "ask for the daemon's doorbell: %s", strerror(errno));
	char g[128];
	int fds[2] = {-1, -1}, nfds = 0, ctrunc = 0;
	ssize_t n = greet(s, g, sizeof(g), fds, &nfds, &ctrunc, timeout_ns);
	if (n < 0 || strcmp(g, req) != 0 || nfds != 1 || ctrunc) {
		for (int i = 0; i < nfds; i++)
			close(fds[i]);
		char *nl = n > 0 ? strchr(g, '\n') : NULL;
		if (nl)
			*nl = 0;
		return fail(err, errlen, HOMA_EATTACH, "ask for the daemon's doorbell: it says '%s' with %d descriptors",
			    n > 0 ? g : strerror(errno), nfds);
	}
	c->bell = fds[0];
	return 0;
}

HM_EXPORT int homa_attach(const char *path, const homa_options *opts, homa_client **out, char *err, size_t errlen)
{
	homa_options o;
	homa_options_init(&o);
	if (opts) {
		size_t n = opts->size && opts->size < sizeof(o) ? opts->size : sizeof(o);
		memcpy(&o, opts, n);
		o.size = sizeof(o);
	}
	if (err && errlen)
		err[0] = 0;
	if (!path || !out)
		return fail(err, errlen, HOMA_EINVAL, "no path or no out pointer");
	*out = NULL;
	if (!platform_ok())
		return fail(err, errlen, HOMA_EPLATFORM, "this machine lacks little-endian lock-free 64-bit atomics");
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	if (strlen(path) >= sizeof(sa.sun_path))
		return fail(err, errlen, HOMA_EINVAL, "attach to %s: path too long", path);
	strcpy(sa.sun_path, path);
	int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (s < 0)
		return fail(err, errlen, HOMA_EATTACH, "socket: %s", strerror(errno));
	int fds[2] = {-1, -1}, nfds = 0, ctrunc = 0, rc;
	char g[512];
	if (connect(s, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		rc = fail(err, errlen, HOMA_EATTACH, "attach to %s: %s", path, strerror(errno));
		goto out;
	}
	/* the daemon makes the region before it answers (hugetlb, resident): give it
	 * op_timeout, but never less than 10 s */
	int64_t greet_ns = o.op_timeout_ns < 0 || o.op_timeout_ns > 10000000000ll ? o.op_timeout_ns : 10000000000ll;
	ssize_t n = greet(s, g, sizeof(g), fds, &nfds, &ctrunc, greet_ns);
	if (n < 0) {
		rc = fail(err, errlen, HOMA_EATTACH, "attach to %s: %s", path, strerror(errno));
		goto out;
	}
	if (strcmp(g, "refused\n") == 0) {
		rc = fail(err, errlen, HOMA_EREFUSED,
			  "the daemon at %s refused uid %d, gid %d (allowed: root, workers.allow_uids, and members of "
			  "workers.allow_gids; the daemon logs why)",
			  path, (int)getuid(), (int)getgid());
		goto out;
	}
	if (strcmp(g, "ok\n") != 0) {
		char *nl = strchr(g, '\n');
		if (nl)
			*nl = 0;
		rc = fail(err, errlen, HOMA_EATTACH, "attach to %s: the daemon says '%s'", path,
			  g[0] ? g : "connection closed without a greeting");
		goto out;
	}
	if (ctrunc || nfds != 2) {
		rc = fail(err, errlen, HOMA_EATTACH, "attach to %s: got %d descriptors, want 2 (region, eventfd)", path,
			  nfds);
		goto out;
	}
	struct stat stt;
	if (fstat(fds[0], &stt) < 0 || stt.st_size <= 0) {
		rc = fail(err, errlen, HOMA_EATTACH, "attach to %s: the region's memfd is empty", path);
		goto out;
	}
	size_t len = (size_t)stt.st_size;
	void *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fds[0], 0);
	if (m == MAP_FAILED) {
		rc = fail(err, errlen, HOMA_EATTACH, "map the region: %s", strerror(errno));
		goto out;
	}
	close(fds[0]); /* the mapping keeps the memory */
	fds[0] = -1;
	homa_layout lay;
	homa_layout_error le;
	hm_host host;
	if (hm_layout_parse(m, len, &lay, &le, &host)) {
		munmap(m, len);
		rc = fail(err, errlen, HOMA_ELAYOUT, "layout %s = %llu: %s", le.field, (unsigned long long)le.value,
			  le.reason);
		goto out;
	}
	homa_client *c = calloc(1, sizeof(*c));
	if (!c) {
		munmap(m, len);
		rc = fail(err, errlen, HOMA_ENOMEM, "out of memory");
		goto out;
	}
	c->region = m;
	c->region_len = len;
	c->lay = lay;
	c->host = host;
	c->sock = -1;
	c->bell = -1;
	atomic_init(&c->efd, -1);
	if ((rc = setup(c, &o, err, errlen)) != 0) {
		hm_free_state(c);
		goto out;
	}
	if (hm_layout_features(c->region) & HM_FEATURE_DOORBELL) {
		/* the daemon's loop may sleep: ask for its doorbell, which a push
		 * rings when it finds the loop asleep (shm/doc.go, "Waiting") */
		if ((rc = ask_doorbell(c, s, greet_ns, err, errlen)) != 0) {
			hm_free_state(c);
			goto out;
		}
	}
	fcntl(fds[1], F_SETFL, fcntl(fds[1], F_GETFL) | O_NONBLOCK);
	fcntl(s, F_SETFL, fcntl(s, F_GETFL) | O_NONBLOCK);
	atomic_store(&c->efd, fds[1]);
	c->sock = s;
	*out = c;
	return 0;
out:
	for (int i = 0; i < 2; i++)
		if (fds[i] >= 0)
			close(fds[i]);
	close(s);
	return rc;
}
