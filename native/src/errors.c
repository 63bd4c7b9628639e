/*
 * errors.c: status and error-code names, addresses, options, and the
 * record of bad completions.
 */
#include <arpa/inet.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"

HM_EXPORT int homa_api_version(void) { return HOMA_API_VERSION; }

HM_EXPORT const char *homa_strerror(int status)
{
	switch (status) {
	case HOMA_OK:
		return "success";
	case HOMA_EINVAL:
		return "invalid argument";
	case HOMA_ETIMEDOUT:
		return "timed out";
	case HOMA_ECLOSED:
		return "client closed";
	case HOMA_EDEAD:
		return "the daemon ended the session";
	case HOMA_EARENA:
		return "no room in the transmit arena";
	case HOMA_ESQFULL:
		return "submission ring full";
	case HOMA_ENORPC:
		return "no such RPC";
	case HOMA_EATTACH:
		return "attach failed";
	case HOMA_EREFUSED:
		return "refused by the daemon";
	case HOMA_ELAYOUT:
		return "bad region layout";
	case HOMA_EPLATFORM:
		return "unsupported platform";
	case HOMA_ENOMEM:
		return "out of memory";
	case HOMA_EREPLIED:
		return "request already answered";
	case HOMA_ENOTSUP:
		return "the daemon does not say this";
	}
	if (status > 0 && status < 0x10000) {
		static _Thread_local char buf[16];
		return hm_err_name((unsigned)status, buf);
	}
	return "unknown status";
}

HM_EXPORT void homa_options_init(homa_options *o)
{
	memset(o, 0, sizeof(*o));
	o->size = sizeof(*o);
	o->max_message = 0;
	o->spin_ns = 50000;
	o->op_timeout_ns = 10000000000ll;
	o->max_sleep_ns = 1000000000ll;
}

static int all_zero(const uint8_t *p, int n)
{
	for (int i = 0; i < n; i++)
		if (p[i])
			return 0;
	return 1;
}

HM_EXPORT int homa_addr_parse(const char *host, uint16_t port, homa_addr *a)
{
	if (!host || !a)
		return HOMA_EINVAL;
	homa_addr r;
	memset(&r, 0, sizeof(r));
	r.port = port;
	if (inet_pton(AF_INET, host, r.ip) == 1) {
		r.family = 4;
	} else if (inet_pton(AF_INET6, host, r.ip) == 1) {
		static const uint8_t mapped[12] = {[10] = 0xff, [11] = 0xff};
		r.family = 6;
		if (memcmp(r.ip, mapped, 12) == 0) {
			memmove(r.ip, r.ip + 12, 4);
			memset(r.ip + 4, 0, 12);
			r.family = 4;
		}
	} else {
		return HOMA_EINVAL;
	}
	if (all_zero(r.ip, 16))
		return HOMA_EINVAL;
	*a = r;
	return 0;
}

HM_EXPORT const char *homa_addr_format(const homa_addr *a, char *buf, size_t len)
{
	if (!a || !buf)
		return NULL;
	char tmp[INET6_ADDRSTRLEN];
	const char *s = inet_ntop(a->family == 6 ? AF_INET6 : AF_INET, a->ip, tmp, sizeof(tmp));
	if (!s || strlen(s) + 1 > len)
		return NULL;
	memcpy(buf, s, strlen(s) + 1);
	return buf;
}

void hm_addr_from_entry(homa_addr *a, const uint8_t ip[4], const uint8_t ip6[16], uint16_t port)
{
	memset(a, 0, sizeof(*a));
	a->port = port;
	if (!all_zero(ip6, 16)) {
		a->family = 6;
		memcpy(a->ip, ip6, 16);
	} else {
		a->family = 4;
		memcpy(a->ip, ip, 4);
	}
}

void hm_addr_to_entry(const homa_addr *a, uint8_t ip[4], uint8_t ip6[16])
{
	memset(ip, 0, 4);
	memset(ip6, 0, 16);
	if (a->family == 6)
		memcpy(ip6, a->ip, 16);
	else
		memcpy(ip, a->ip, 4);
}

void hm_bad(homa_client *c, const char *kind, const char *why, const hm_entry *e)
{
	char ent[200];
	if (e)
		hm_entry_format(e, ent, sizeof(ent));
	else
		ent[0] = 0;
	snprintf(c->last_bad, sizeof(c->last_bad), "%s (%s): %s", kind, why, ent);
}
