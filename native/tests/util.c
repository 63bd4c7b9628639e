/*
 * util.c: see util.h.
 */
#include "util.h"

#include "internal.h"

#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

int64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000ll + ts.tv_nsec;
}

void fake_start(fake *f, const char *const *flags)
{
	const char *bin = getenv("SHMFAKE");
	if (!bin || access(bin, X_OK) != 0) {
		fprintf(stderr, "skipped: no fake engine ($SHMFAKE)\n");
		exit(77);
	}
	memset(f, 0, sizeof(*f));
	snprintf(f->dir, sizeof(f->dir), "/tmp/libhoma-test-XXXXXX");
	CHECK(mkdtemp(f->dir) != NULL);
	snprintf(f->path, sizeof(f->path), "%s/fake.sock", f->dir);
	int in[2], out[2];
	CHECK(pipe(in) == 0 && pipe(out) == 0);
	const char *argv[64];
	int n = 0;
	argv[n++] = bin;
	argv[n++] = "-socket";
	argv[n++] = f->path;
	argv[n++] = "-control";
	for (int i = 0; flags && flags[i] && n < 62; i++)
		argv[n++] = flags[i];
	argv[n] = NULL;
	f->pid = fork();
	CHECK(f->pid >= 0);
	if (f->pid == 0) {
		dup2(in[0], 0);
		dup2(out[1], 1);
		close(in[1]);
		close(out[0]);
		execv(bin, (char *const *)argv);
		_exit(127);
	}
	close(in[0]);
	close(out[1]);
	f->in = fdopen(in[1], "w");
	f->out = fdopen(out[0], "r");
	char line[512];
	CHECK(fgets(line, sizeof(line), f->out) != NULL);
	CHECK(strstr(line, "ready") != NULL);
}

void fake_stop(fake *f)
{
	if (!f->pid)
		return;
	fclose(f->in);
	int st;
	waitpid(f->pid, &st, 0);
	fclose(f->out);
	unlink(f->path);
	rmdir(f->dir);
	f->pid = 0;
}

const char *fake_cmd(fake *f, const char *fmt, ...)
{
	static char line[8192];
	va_list ap;
	va_start(ap, fmt);
	vfprintf(f->in, fmt, ap);
	va_end(ap);
	fputc('\n', f->in);
	fflush(f->in);
	CHECK(fgets(line, sizeof(line), f->out) != NULL);
	return line;
}

long long json_int(const char *ans, const char *key)
{
	char k[64];
	snprintf(k, sizeof(k), "\"%s\":", key);
	const char *p = strstr(ans, k);
	if (!p)
		return -1;
	return strtoll(p + strlen(k), NULL, 10);
}

unsigned attach_features = ~0u;

homa_client *attach_or_die(fake *f, const homa_options *o)
{
	homa_client *c = NULL;
	char err[256];
	int rc = homa_attach(f->path, o, &c, err, sizeof(err));
	if (rc) {
		fprintf(stderr, "attach: %s: %s\n", homa_strerror(rc), err);
		exit(1);
	}
	c->features &= attach_features;
	return c;
}

homa_stats stats_of(homa_client *c)
{
	homa_stats s;
	memset(&s, 0, sizeof(s));
	s.size = sizeof(s);
	CHECK(homa_stats_get(c, &s) == 0);
	return s;
}

struct echo {
	homa_client *c;
	pthread_t t;
	unsigned flags;
	volatile uint64_t served;
	volatile int error;
};

static void *echo_run(void *arg)
{
	echo *e = arg;
	for (;;) {
		homa_msg m;
		int rc = homa_receive(e->c, &m, -1);
		if (rc == HOMA_ECLOSED)
			return NULL;
		if (rc) {
			e->error = rc;
			return NULL;
		}
		if (m.kind != HOMA_MSG_REQUEST) {
			homa_msg_release(e->c, &m);
			continue;
		}
		struct iovec iov = {(void *)m.data, m.length};
		rc = homa_reply(e->c, &m, &iov, 1, e->flags);
		homa_msg_release(e->c, &m);
		if (rc == HOMA_ECLOSED)
			return NULL;
		if (rc) {
			e->error = rc;
			return NULL;
		}
		e->served++;
	}
}

echo *echo_start(fake *f, uint16_t port, unsigned reply_flags)
{
	echo *e = calloc(1, sizeof(*e));
	CHECK(e != NULL);
	e->c = attach_or_die(f, NULL);
	e->flags = reply_flags;
	CHECK_EQ(homa_bind(e->c, port), 0);
	CHECK(pthread_create(&e->t, NULL, echo_run, e) == 0);
	return e;
}

void echo_stop(echo *e)
{
	homa_close(e->c);
	pthread_join(e->t, NULL);
	CHECK_EQ(e->error, 0);
	homa_destroy(e->c);
	free(e);
}

uint64_t echo_served(echo *e) { return e->served; }
