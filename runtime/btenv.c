// SPDX-License-Identifier: MIT
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compiler/types.h"
#include "lang/diag.h"
#include "runtime/btenv.h"

/* bpftrace 0.17's defaults */
struct btenv btenv = {
	.map_keys_max = 4096,
	.max_probes = 512,
	.cat_bytes_max = 10240,
};

/* An unsigned number in NAME, if set: as bpftrace's get_uint64_env_var. */
static int env_uint(const char *name, uint64_t *v)
{
	const char *s = getenv(name);
	char *end;
	unsigned long long n;

	if (!s)
		return 0;
	errno = 0;
	n = strtoull(s, &end, 10);
	if (errno || end == s || *end || s[0] == '-') {
		fprintf(stderr, "ERROR: Env var '%s' did not contain a valid uint64_t, or was zero-valued.\n",
			name);
		return -EINVAL;
	}
	*v = n;
	return 0;
}

int btenv_read(void)
{
	uint64_t strlen_ = GT_STRLEN, keys = btenv.map_keys_max;

	if (env_uint("BPFTRACE_STRLEN", &strlen_) ||
	    env_uint("BPFTRACE_MAP_KEYS_MAX", &keys) ||
	    env_uint("BPFTRACE_MAX_PROBES", &btenv.max_probes) ||
	    env_uint("BPFTRACE_CAT_BYTES_MAX", &btenv.cat_bytes_max))
		return -EINVAL;
	if (strlen_ > 200) {
		fprintf(stderr, "ERROR: 'BPFTRACE_STRLEN' %llu exceeds the current maximum of 200 bytes.\n",
			(unsigned long long)strlen_);
		return -EINVAL;
	}
	/* strings are GT_STRLEN bytes everywhere (maps, the device runtime,
	 * the ring buffer records): another length is not honoured */
	if (strlen_ != GT_STRLEN && diag_warnings_on())
		fprintf(stderr, "WARNING: BPFTRACE_STRLEN=%llu is ignored: strings are %d bytes\n",
			(unsigned long long)strlen_, GT_STRLEN);
	/* 0 keeps bpftrace 0.17's default, as it does; the kernel's u32 */
	if (keys)
		btenv.map_keys_max = keys > UINT32_MAX ? UINT32_MAX : keys;
	return 0;
}
