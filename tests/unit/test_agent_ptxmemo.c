/*
 * The agent's memo of PTX entries (runtime/agent/agent_ptxmemo.c): an
 * entry's kernels are found by name (whole names only), a copy of its
 * text comes without the padding, owners are told apart, the texts kept
 * stay in their budget while every entry's kernels stay indexed (a look-up
 * for a kernel an entry lacks decompresses nothing), entries past the
 * names' budget still answer, forgetting an owner frees what it had (ASan
 * sees a leak otherwise), and an entry that cannot be decompressed is an
 * error with a reason.
 */
#define GT_AGENT_SO
#define AGENT_NO_CUDA
#define TEXT_BYTES	500	/* three of this test's texts */
#define NAMES_BYTES	100	/* two of its entries' names (36 bytes each) */
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

	for (int i = 0; i < TEXT_N; i++)
		n += texts[i].k.owner != NULL;
	return n;
}

int main(void)
{
	static uint8_t fb[1024], bad[1024];
	static int owners[6];
	size_t len = fatbin(fb, false), blen = fatbin(bad, true);
	size_t tl = sizeof(text) - 1;
	char *copy = NULL;

	CHECK(len == blen, "the corrupt twin has the same key");
	CHECK(ask(fb, len, &owners[0], "k1", NULL) == 1, "defines k1");
	CHECK(ask(fb, len, &owners[0], "k22", NULL) == 1, "defines k22 (tab)");
	CHECK(ask(fb, len, &owners[0], "k3_x", NULL) == 1, "defines k3_x");
	CHECK(ask(fb, len, &owners[0], "k2", NULL) == 0, "no k2 (a prefix)");
	CHECK(ask(fb, len, &owners[0], "k1x", NULL) == 0, "no k1x");
	CHECK(held() == 1 && text_bytes == tl && nindexed == 1,
	      "one text kept, without its padding, and its index");
	CHECK(ask(fb, len, &owners[0], "k22", &copy) == 1 && copy &&
	      !strcmp(copy, text), "copy of the text");
	free(copy);

	/* other owners: texts of their own, the oldest go first; indexes
	 * while the names' budget lasts, then answers all the same */
	for (int i = 1; i < 6; i++)
		CHECK(ask(fb, len, &owners[i], "k1", NULL) == 1,
		      "another owner's entry");
	CHECK(held() == 3 && text_bytes == 3 * tl,
	      "the texts kept stay in budget");
	CHECK(nindexed == 2 && names_bytes <= NAMES_BYTES,
	      "the names kept stay in budget");
	CHECK(!find_text(&(struct key){ &owners[0], 16, len - 80 }) &&
	      find_text(&(struct key){ &owners[5], 16, len - 80 }),
	      "least recently used text evicted");

	/* owner 0's text is gone, its index is not: a kernel it lacks is
	 * answered from the index (the corrupt twin is never decompressed),
	 * one it has needs the text again */
	CHECK(ask(bad, blen, &owners[0], "nope", NULL) == 0,
	      "index answers without decompressing");
	CHECK(ask(bad, blen, &owners[0], "k1", &copy) == -EBADMSG,
	      "a copy decompresses again");

	agent_ptxmemo_forget(&owners[5]);
	CHECK(held() == 2 && text_bytes == 2 * tl,
	      "forget frees the owner's text");
	agent_ptxmemo_forget(&owners[0]);
	CHECK(nindexed == 1, "forget frees the owner's index");

	/* an entry that does not decompress */
	struct ask a = { .owner = &owners[0], .name = "k1" };
	char err[160];

	CHECK(fatbin_foreach_stored(bad, blen, FATBIN_KIND_PTX, ask_cb, &a,
				    err, sizeof(err)) == 0 &&
	      a.ret == -EBADMSG && strstr(a.err, "lz4"),
	      "corrupt entry: error with a reason");

	for (int i = 0; i < 6; i++)
		agent_ptxmemo_forget(&owners[i]);
	CHECK(held() == 0 && text_bytes == 0 && nindexed == 0 &&
	      names_bytes == 0, "all forgotten");
	UNIT_END();
}
