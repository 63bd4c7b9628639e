/*
 * test_golden: libhoma's entry encoder, decoder and checks against every
 * vector of shm/testdata/entries.golden, the file shm/golden_test.go
 * checks the Go package against: the same bytes from the fields, the same
 * fields and ErrCode from the bytes. Path in $GOLDEN.
 */
#include <inttypes.h>
#include <string.h>

#include "entry.h"
#include "util.h"

static int unhex(const char *s, uint8_t *out, size_t n)
{
	if (strlen(s) != 2 * n)
		return -1;
	for (size_t i = 0; i < n; i++) {
		unsigned v;
		if (sscanf(s + 2 * i, "%2x", &v) != 1)
			return -1;
		out[i] = (uint8_t)v;
	}
	return 0;
}

static int field(const char *word, const char *key, unsigned long long *v)
{
	size_t k = strlen(key);
	if (strncmp(word, key, k) != 0 || word[k] != '=')
		return 0;
	char *end;
	*v = strtoull(word + k + 1, &end, 10);
	return *end == 0;
}

int main(void)
{
	const char *path = getenv("GOLDEN");
	if (!path) {
		fprintf(stderr, "skipped: no $GOLDEN\n");
		return 77;
	}
	FILE *fp = fopen(path, "r");
	CHECK(fp != NULL);
	char line[1024];
	int n = 0, subs = 0, comps = 0, ln = 0;
	const hm_limits lim = {.arena_size = 1 << 20, .pool_pages = 16, .max_message = 1000000};
	while (fgets(line, sizeof(line), fp)) {
		ln++;
		line[strcspn(line, "\n")] = 0;
		if (!line[0] || line[0] == '#')
			continue;
		char *w[32];
		int nw = 0;
		for (char *t = strtok(line, " "); t && nw < 32; t = strtok(NULL, " "))
			w[nw++] = t;
		if (nw != 17) {
			fprintf(stderr, "%s:%d: %d words\n", path, ln, nw);
			return 1;
		}
		int is_sub = strcmp(w[1], "sub") == 0;
		hm_entry e;
		memset(&e, 0, sizeof(e));
		unsigned long long op, flags, port, length, cookie, rpc, peer_port, err, offset, page, pages, code;
		CHECK(field(w[2], "op", &op) && field(w[3], "flags", &flags) && field(w[4], "port", &port) &&
		      field(w[5], "length", &length) && field(w[6], "cookie", &cookie) && field(w[7], "rpc", &rpc) &&
		      field(w[10], "peer_port", &peer_port) && field(w[11], "err", &err) &&
		      field(w[12], "offset", &offset) && field(w[13], "page", &page) && field(w[14], "pages", &pages) &&
		      field(w[15], "code", &code));
		unsigned a, b, c, d;
		CHECK(sscanf(w[8], "ip=%u.%u.%u.%u", &a, &b, &c, &d) == 4);
		e = (hm_entry){.op = (uint8_t)op,
			       .flags = (uint8_t)flags,
			       .port = (uint16_t)port,
			       .length = (uint32_t)length,
			       .cookie = cookie,
			       .rpc = rpc,
			       .ip = {(uint8_t)a, (uint8_t)b, (uint8_t)c, (uint8_t)d},
			       .peer_port = (uint16_t)peer_port,
			       .err = (uint16_t)err,
			       .offset = offset,
			       .page = (uint32_t)page,
			       .pages = (uint32_t)pages};
		CHECK(strncmp(w[9], "ip6=", 4) == 0 && unhex(w[9] + 4, e.ip6, 16) == 0);
		uint8_t want[64], got[64];
		CHECK(unhex(w[16], want, 64) == 0);
		memset(got, 0xee, sizeof(got)); /* the encoder must write every byte */
		hm_entry_encode(&e, got);
		if (memcmp(got, want, 64) != 0) {
			fprintf(stderr, "%s: encoded bytes differ\n", w[0]);
			return 1;
		}
		hm_entry back;
		hm_entry_decode(want, &back);
		if (memcmp(&back, &e, sizeof(e)) != 0) {
			fprintf(stderr, "%s: decoded fields differ\n", w[0]);
			return 1;
		}
		hm_entry parsed;
		int pc = is_sub ? hm_parse_submission(want, &lim, &parsed) : hm_parse_completion(want, &lim, &parsed);
		if ((unsigned long long)pc != code) {
			fprintf(stderr, "%s: parse code %d, want %llu\n", w[0], pc, code);
			return 1;
		}
		n++;
		subs += is_sub;
		comps += !is_sub;
	}
	fclose(fp);
	CHECK(subs >= 20 && comps >= 15);
	printf("%d golden vectors (%d submissions, %d completions)\n", n, subs, comps);
	return 0;
}
