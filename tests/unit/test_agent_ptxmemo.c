// SPDX-License-Identifier: MIT
/*
 * The agent's memo of decompressed PTX entries
 * (runtime/agent/agent_ptxmemo.c): an entry's kernels are found by name
 * (whole names only), a copy of its text comes without the padding, an
 * owner's entries are told apart from another's, the text kept stays in
 * its budget, forgetting an owner frees its entries (ASan sees a leak
 * otherwise), and an entry that cannot be decompressed is an error with
 * a reason.
 */
#define GT_AGENT_SO
#define AGENT_NO_CUDA
#define MEMO_BYTES	500	/* three of this test's texts */
#include "runtime/agent/agent_util.c"
#include "runtime/agent/agent_ptxmemo.c"

#include <stdio.h>

#include "tests/unit/unit.h"

static const char text[] =
	".version 8.0\n.target sm_90\n.address_size 64\n"
	".visible .entry k1()\n{\n\tret;\n}\n"
	".visible .entry\tk22()\n{\n\tret;\n}\n"
	".entry k3_x()\n{\n\tret;\n}\n";

static void put(uint8_t *p, uint64_t v, int n)
{
	memcpy(p, &v, (size_t)n);
}

/* One fatbin, one PTX entry holding TEXT and 8 bytes of NUL padding;
 * with LZ4 set, the same bytes claim to be compressed (and are not). */
static size_t fatbin(uint8_t *buf, bool lz4)
{
	size_t stored = (sizeof(text) - 1 + 8 + 7) & ~(size_t)7;

	memset(buf, 0, 16 + 64 + stored);
	put(buf, FATBIN_MAGIC, 4);
	put(buf + 4, 1, 2);
	put(buf + 6, 16, 2);
	put(buf + 8, 64 + stored, 8);
	put(buf + 16, FATBIN_KIND_PTX, 2);
	put(buf + 16 + 4, 64, 4);
	put(buf + 16 + 8, stored, 8);
	put(buf + 16 + 28, 90, 4);
	put(buf + 16 + 40, FATBIN_FLAG_64BIT | (lz4 ? FATBIN_FLAG_LZ4 : 0), 8);
	put(buf + 16 + 56, lz4 ? 4 * stored : stored, 8);
	memcpy(buf + 80, text, sizeof(text) - 1);
	return 80 + stored;
}

struct ask {
	const void *owner;
	const char *name;
	bool copy;
	int ret;
	char *text;
	char err[160];
};

static int ask_cb(const struct fatbin_entry *e, void *arg)
{
	struct ask *a = arg;

	a->ret = agent_ptxmemo_entry(a->owner, e, a->name,
				     a->copy ? &a->text : NULL, a->err,
				     sizeof(a->err));
	return 0;
}

static int ask(const uint8_t *fb, size_t len, const void *owner,
	       const char *name, char **copy)
{
	struct ask a = { .owner = owner, .name = name, .copy = copy != NULL };
	char err[160];

	if (fatbin_foreach_stored(fb, len, FATBIN_KIND_PTX, ask_cb, &a, err,
				  sizeof(err)) < 0)
		return -999;
	if (copy)
		*copy = a.text;
	return a.ret;
}

static int held(void)
{
	int n = 0;

	for (int i = 0; i < MEMO_N; i++)
		n += memo[i].owner != NULL;
	return n;
}

int main(void)
{
	static uint8_t fb[1024], bad[1024];
	static int owners[MEMO_N + 3];
	size_t len = fatbin(fb, false), blen = fatbin(bad, true);
	char *copy = NULL;
	struct ask a = { .owner = &owners[0], .name = "k1" };
	char err[160];

	CHECK(ask(fb, len, &owners[0], "k1", NULL) == 1, "defines k1");
	CHECK(ask(fb, len, &owners[0], "k22", NULL) == 1, "defines k22 (tab)");
	CHECK(ask(fb, len, &owners[0], "k3_x", NULL) == 1, "defines k3_x");
	CHECK(ask(fb, len, &owners[0], "k2", NULL) == 0, "no k2 (a prefix)");
	CHECK(ask(fb, len, &owners[0], "k1x", NULL) == 0, "no k1x");
	CHECK(held() == 1 && memo_bytes == sizeof(text) - 1,
	      "one entry kept, without its padding");
	CHECK(ask(fb, len, &owners[0], "k22", &copy) == 1 && copy &&
	      !strcmp(copy, text), "copy of the text");
	free(copy);

	/* other owners: entries of their own, the oldest go first */
	for (int i = 1; i < MEMO_N + 3; i++)
		CHECK(ask(fb, len, &owners[i], "k1", NULL) == 1,
		      "another owner's entry");
	CHECK(held() == 3 && memo_bytes == 3 * (sizeof(text) - 1),
	      "the text kept stays in budget");
	CHECK(!find(&owners[0], &(struct fatbin_entry){ .entry_off = 16,
				.stored_size = len - 80 }) &&
	      find(&owners[MEMO_N + 2], &(struct fatbin_entry){
				.entry_off = 16, .stored_size = len - 80 }),
	      "least recently used evicted");
	agent_ptxmemo_forget(&owners[MEMO_N + 2]);
	CHECK(held() == 2 && memo_bytes == 2 * (sizeof(text) - 1),
	      "forget frees the owner's entry");

	/* an entry that does not decompress */
	a.copy = false;
	CHECK(fatbin_foreach_stored(bad, blen, FATBIN_KIND_PTX, ask_cb, &a,
				    err, sizeof(err)) == 0 &&
	      a.ret == -EBADMSG && strstr(a.err, "lz4"),
	      "corrupt entry: error with a reason");

	for (int i = 0; i < MEMO_N + 3; i++)
		agent_ptxmemo_forget(&owners[i]);
	CHECK(held() == 0 && memo_bytes == 0, "all forgotten");
	UNIT_END();
}
