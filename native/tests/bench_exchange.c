/*
 * bench_exchange: client CPU per 100 B request/response exchange, both
 * ends, through the Go fake engine (shmfake): a server thread (its own
 * client: bind, receive, detached reply, release) and a client thread
 * (detached sends, outcomes by receive, `depth` of them outstanding).
 * Each thread's CPU is read with CLOCK_THREAD_CPUTIME_ID; the figures are
 * ns of CPU per exchange per side, and their sum. A wait spins spin_ns
 * before it sleeps, so at depth 1 the CPU figure includes the time spent
 * waiting for the engine's loop (spinning, or the system calls of
 * sleeping); at a larger depth waits rarely find nothing and the figure
 * is mostly the library's own work. Not run by make test: make bench.
 *
 *   bench_exchange [-n EXCHANGES] [-size BYTES]   (default: 200000, 100)
 */
#include <pthread.h>
#include <string.h>
#include <time.h>

#include "util.h"

#define PORT 77

static int64_t thread_cpu(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (int64_t)ts.tv_sec * 1000000000ll + ts.tv_nsec;
}

struct side {
	homa_client *c;
	long n;
	int depth;
	size_t size;
	int64_t cpu;
	int rc;
};

static void *serve(void *arg)
{
	struct side *s = arg;
	int64_t t0 = thread_cpu();
	for (long i = 0; i < s->n; i++) {
		homa_msg m;
		int rc = homa_receive(s->c, &m, 10000000000ll);
		if (rc || m.kind != HOMA_MSG_REQUEST) {
			s->rc = rc ? rc : -100;
			return NULL;
		}
		struct iovec iov = {(void *)m.data, m.length};
		rc = homa_reply(s->c, &m, &iov, 1, HOMA_REPLY_DETACHED);
		homa_msg_release(s->c, &m);
		if (rc) {
			s->rc = rc;
			return NULL;
		}
	}
	homa_poll(s->c);
	s->cpu = thread_cpu() - t0;
	return NULL;
}

static void *call(void *arg)
{
	struct side *s = arg;
	static uint8_t buf[1 << 20];
	memset(buf, 'b', s->size);
	homa_addr dst;
	homa_addr_parse("127.0.0.1", PORT, &dst);
	struct iovec iov = {buf, s->size};
	int64_t t0 = thread_cpu();
	long sent = 0, got = 0;
	while (got < s->n) {
		while (sent < s->n && sent - got < s->depth) {
			int rc = homa_send(s->c, &dst, &iov, 1, (uint64_t)sent, HOMA_SEND_DETACHED, NULL);
			if (rc) {
				s->rc = rc;
				return NULL;
			}
			sent++;
		}
		homa_msg m;
		int rc = homa_receive(s->c, &m, 10000000000ll);
		if (rc || m.kind != HOMA_MSG_RESPONSE || m.length != s->size) {
			s->rc = rc ? rc : -100 - m.err;
			return NULL;
		}
		homa_msg_release(s->c, &m);
		got++;
	}
	s->cpu = thread_cpu() - t0;
	return NULL;
}

static void run(fake *f, long n, int depth, size_t size, int64_t spin)
{
	homa_options o;
	homa_options_init(&o);
	o.spin_ns = spin;
	struct side srv = {.c = attach_or_die(f, &o), .n = n}, cli = {.c = attach_or_die(f, &o), .n = n};
	cli.depth = depth;
	cli.size = size;
	CHECK_EQ(homa_bind(srv.c, PORT), 0);
	pthread_t ts, tc;
	int64_t w0 = now_ns();
	pthread_create(&ts, NULL, serve, &srv);
	pthread_create(&tc, NULL, call, &cli);
	pthread_join(tc, NULL);
	pthread_join(ts, NULL);
	int64_t wall = now_ns() - w0;
	if (srv.rc || cli.rc) {
		fprintf(stderr, "bench: server %s, client %s\n", homa_strerror(srv.rc), homa_strerror(cli.rc));
		exit(1);
	}
	homa_stats sc = stats_of(cli.c), ss = stats_of(srv.c);
	printf("%6zu B  depth %3d  spin %6.1f us  | client %7.0f ns  server %7.0f ns  both %7.0f ns CPU/exchange"
	       "  | wall %7.0f ns  | entries/exchange: client %.2f sub %.2f comp, server %.2f sub %.2f comp;"
	       " sleeps/exchange %.3f\n",
	       size, depth, spin / 1e3, (double)cli.cpu / n, (double)srv.cpu / n, (double)(cli.cpu + srv.cpu) / n,
	       (double)wall / n, (double)sc.submissions / n, (double)sc.completions / n,
	       (double)ss.submissions / n, (double)ss.completions / n, (double)(sc.sleeps + ss.sleeps) / n);
	homa_destroy(cli.c);
	homa_destroy(srv.c);
}

int main(int argc, char **argv)
{
	long n = 200000;
	size_t size = 100;
	for (int i = 1; i + 1 < argc; i += 2) {
		if (strcmp(argv[i], "-n") == 0)
			n = atol(argv[i + 1]);
		else if (strcmp(argv[i], "-size") == 0)
			size = (size_t)atol(argv[i + 1]);
	}
	fake f;
	const char *flags[] = {"-echo", "1", NULL}; /* keeps the loop's flags at their defaults */
	fake_start(&f, flags);
	printf("libhoma bench_exchange: %ld exchanges per row, through shmfake (shm/shmtest), "
	       "CLOCK_THREAD_CPUTIME_ID per side\n", n);
	run(&f, n / 20, 1, size, 50000);
	run(&f, n / 20, 1, size, 0);
	run(&f, n, 32, size, 50000);
	run(&f, n, 32, size, 0);
	run(&f, n, 128, size, 0);
	fake_stop(&f);
	return 0;
}
