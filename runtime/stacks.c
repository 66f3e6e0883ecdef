// SPDX-License-Identifier: MIT
/*
 * Stack values to text.  The probe stored bpf_get_stackid()'s answer: a
 * negative errno when it took no stack (a kernel stack in a uprobe is
 * -EFAULT), which prints as "", as bpftrace does.  Other failures to
 * read a stack are said once on stderr.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <bpf/bpf.h>

#include "runtime/stacks.h"
#include "runtime/symbolize.h"

static const struct gt_object *object;
static bool warned;

void stacks_set_object(const struct gt_object *obj)
{
	object = obj;
}

void stacks_reset(void)
{
	object = NULL;
	warned = false;
	symbolize_reset();
}

static int stack_map_fd(int limit)
{
	char name[32];

	snprintf(name, sizeof(name), ".stack%d", limit);
	for (int i = 0; object && i < object->nmaps; i++)
		if (!strcmp(object->maps[i].name, name))
			return object->maps[i].fd;
	return -1;
}

/* Append S to the growing text *BUF (length *LEN). */
static void put(char **buf, size_t *len, const char *s)
{
	size_t n = strlen(s);
	char *b = realloc(*buf, *len + n + 1);

	if (!b) {
		fputs("gputrace: out of memory\n", stderr);
		abort();
	}
	memcpy(b + *len, s, n + 1);
	*buf = b;
	*len += n;
}

char *stacks_format(const struct type *t, const void *p, bool key)
{
	uint64_t v, *ips;
	int32_t id;
	int pid, fd = stack_map_fd(t->limit);
	char *out = strdup(""), line[64];
	size_t len = 0;

	if (!out)
		abort();
	memcpy(&v, p, 8);
	id = (int32_t)(uint32_t)v;
	pid = (int)(v >> 32);
	if (id < 0 && id != -EFAULT && !warned) {
		fprintf(stderr, "gputrace: a stack was lost: %s\n", strerror(-id));
		warned = true;
	}
	if (id < 0 || fd < 0)
		return out;
	ips = calloc(t->limit, sizeof(*ips));
	if (!ips)
		abort();
	if (bpf_map_lookup_elem(fd, &id, ips)) {
		if (!warned)
			fprintf(stderr, "gputrace: cannot read stack %d: %s\n",
				id, strerror(errno));
		warned = true;
		free(ips);
		return out;
	}
	put(&out, &len, "\n");
	for (int i = 0; i < t->limit && ips[i]; i++) {
		char *sym = t->user ? symbolize_user(pid, ips[i], true, t->perf) :
				      symbolize_kernel(ips[i], true);

		if (t->perf)
			snprintf(line, sizeof(line), "\t%" PRIx64 " ", ips[i]);
		else
			snprintf(line, sizeof(line), "%*s", key ? 4 : 8, "");
		put(&out, &len, line);
		put(&out, &len, sym);
		put(&out, &len, "\n");
		free(sym);
	}
	free(ips);
	return out;
}

char *stacks_sym(const struct type *t, const void *p)
{
	uint64_t addr, pid;

	memcpy(&addr, p, 8);
	if (t->errstr)
		return strdup(strerror((int)addr));
	if (!t->user)
		return symbolize_kernel(addr, false);
	memcpy(&pid, (const char *)p + 8, 8);
	return symbolize_user((int)pid, addr, false, false);
}
