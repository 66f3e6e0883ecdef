/* SPDX-License-Identifier: MIT */
/*
 * The device runtime's memory layout, shared by the agent (host C), the
 * device runtime (runtime/agent/devrt.cu) and the PTX lowering
 * (compiler/ptx_lower.c).  docs/device-runtime.md has the design.
 *
 * All of it lives in device memory and is reached through one pointer,
 * the kernel parameter __gt_ctx: a per-launch context (struct devrt_ctx)
 * followed by the descriptors of the device maps.  The maps and the
 * printf rings it points to are shared by every launch of the session.
 * Every field is a fixed-size integer so C and CUDA agree on offsets.
 */
#ifndef GT_DEVRT_H
#define GT_DEVRT_H

#include <stdbool.h>
#include <stdint.h>

#define DEVRT_MAGIC	0x3174726476656467ull	/* "gdevdrt1" */
#define DEVRT_LINE	128u	/* cache line: each shard's hot data on its own */
#define DEVRT_HIST_BUCKETS 34u	/* bpftrace 0.17's log2 buckets */
/*
 * hist() and lhist() values end with one word past their buckets that
 * adds up the values given (the _sum of a Prometheus histogram); bpftrace
 * keeps no such thing and the text output never shows it.  The eBPF maps
 * keep it the same way: the entry whose bucket index is the bucket count
 * (docs/fleet.md).  A hist's sum is word DEVRT_HIST_BUCKETS; any hist or
 * lhist's is word nwords - 1.  Only a program run with --metrics adds
 * to it (DEVRT_OP_F_SUM below); the word is there either way.
 */
#define DEVRT_HIST_WORDS (DEVRT_HIST_BUCKETS + 1u)

/* What a device map stores (descriptor `kind`). */
enum devrt_kind {
	DEVRT_K_NONE,		/* no device map at this index: ignored */
	DEVRT_K_PLAIN,		/* @m[k] = v: value_size bytes, lookups */
	DEVRT_K_COUNT,		/* words: count */
	DEVRT_K_SUM,		/* words: total */
	DEVRT_K_MIN,		/* words: value, set (0/1) */
	DEVRT_K_MAX,		/* words: value, set (0/1) */
	DEVRT_K_AVG,		/* words: count, total */
	DEVRT_K_STATS,		/* words: count, total */
	DEVRT_K_HIST,		/* words: 34 bucket counts, sum */
	DEVRT_K_LHIST,		/* words: (max-min)/step+2 bucket counts, sum */
	DEVRT_K_SMLOAD,		/* words: one sum per SM (nwords = SMs) */
	DEVRT_K_END_
};

/* What an aggregation call does (devrt.cu's __gt_rt_agg `op`). */
enum devrt_op {
	DEVRT_OP_COUNT,
	DEVRT_OP_SUM,
	DEVRT_OP_MIN,
	DEVRT_OP_MAX,
	DEVRT_OP_AVG,
	DEVRT_OP_STATS,
	DEVRT_OP_HIST,
	DEVRT_OP_LHIST,
	DEVRT_OP_SMLOAD,
};
/*
 * Or'ed into a hist or lhist call's op when the program keeps the sum
 * word (--metrics, pl_opts.hist_sum): without it the call adds nothing
 * there, so an update costs what it did before the word existed.
 */
#define DEVRT_OP_F_SUM	0x100u
/*
 * The caller is one lane (a gpu:warp or gpu:mem clause, which one elected
 * lane runs): no lanes to combine, so no warp-synchronous instruction on
 * its path.  Under independent thread scheduling such an instruction in
 * a lone lane could run merged with lanes of the same warp from another
 * site or pass of a loop (issue 34's hang).
 */
#define DEVRT_OP_F_ONE	0x200u
/*
 * Every lane of the calling group runs the call with the same arguments
 * (a gpu:mem clause: its lanes run it together, none branching away, so
 * none can wait on lanes of another pass of a loop, issue 34's hang).
 * One update for the group, made by its lowest lane; CAS results are
 * shared by a shuffle (devrt.cu, "Warp-uniform calls").
 */
#define DEVRT_OP_F_UNI	0x400u
#define DEVRT_OP_KIND	0xffu	/* op without its flags */

/* descriptor flags */
#define DEVRT_F_SIGNED	1u	/* min/max compare as signed */
/*
 * Keyed by the kernel alone (compiler/kmaps.c): the agent writes each
 * kernel's key into one slot of every shard and the launch addresses
 * that slot through its hot words; probes add to it without setting the
 * live word, so a nonzero value says the entry exists.
 */
#define DEVRT_F_KERNEL	2u

/*
 * One device map.  The agent fills kind, flags, key_size, value_size
 * (PLAIN only), nshards, capacity, lmin/lmax/lstep, nwords (SMLOAD: the
 * number of SMs), calls devrt_map_layout() for the rest, allocates
 * devrt_map_bytes() and sets base.
 *
 * Memory: nshards shards of shard_bytes each (a multiple of DEVRT_LINE);
 * a shard is a DEVRT_LINE header (word 0: updates dropped because the
 * table was full) and then its slots.  A map without key has one slot
 * per shard; a keyed map has `capacity` slots (a power of two) per shard,
 * an open-addressing hash table with linear probing.  A slot is:
 *
 *	u64 state	0 empty, 1 being filled, else key hash | 1 << 63
 *	u64 live	1 while the entry exists (delete clears it)
 *	u64 key[]	key_size bytes rounded up to 8, zero padded
 *	u64 value[]	nwords words
 *
 * A probe updates the shard of its SM (smid % nshards).  Plain maps use
 * one shard (assignments and lookups must see one copy).
 */
struct devrt_map_desc {
	uint32_t kind;		/* enum devrt_kind */
	uint32_t flags;		/* DEVRT_F_* */
	uint32_t key_size;	/* bytes; 0: no key */
	uint32_t value_size;	/* bytes of a value (PLAIN); set for all */
	uint32_t nshards;	/* >= 1 */
	uint32_t capacity;	/* slots per shard: power of 2, 1 if no key */
	uint32_t nwords;	/* u64 words in a value */
	uint32_t slot_bytes;	/* 16 + key words * 8 + nwords * 8 */
	int64_t lmin, lmax, lstep;	/* LHIST */
	uint64_t shard_bytes;	/* stride between shards */
	uint64_t base;		/* device address of shard 0 */
	uint64_t reserved;
};

#define DEVRT_SLOT_EMPTY 0ull
#define DEVRT_SLOT_BUSY	1ull
#define DEVRT_SLOT_FULL	(1ull << 63)

/*
 * printf rings: nrings rings of DEVRT_LINE header + ring_bytes data (a
 * power of two), ring r at rings + r * (DEVRT_LINE + ring_bytes).  A
 * probe writes to ring smid % nrings.  Positions are byte counts that
 * only grow; data offset = position & (ring_bytes - 1), 8-byte words
 * wrap one at a time.  A record is
 *
 *	u64 seq		position ^ DEVRT_SEQ_KEY, written last: the commit
 *	u32 fmt, size	printf format id, bytes of arguments
 *	u8  args[]	size bytes, padded to 8
 *
 * The device reserves [head, head + len) with a CAS when head + len -
 * tail <= ring_bytes, else counts a drop.  The host reads records from
 * tail while their seq matches, then stores the new tail.
 */
struct devrt_ring_hdr {
	uint64_t head;		/* device: bytes reserved */
	uint64_t tail;		/* host: bytes consumed */
	uint64_t drops;		/* records lost: ring full */
	uint64_t pad[13];
};

#define DEVRT_SEQ_KEY	0x9e3779b97f4a7c15ull
#define DEVRT_REC_HDR	16u

/*
 * Allocations a probe may read (__gt_rt_read): a DEVRT_LINE header whose
 * first u32 says which of two tables is current, then the two tables,
 * each a u64 count, a u64 pad and up to DEVRT_ALLOC_CAP {base, end}
 * pairs sorted by base.  The agent writes the other table, then flips
 * the header: a probe reads one whole table or the other.
 */
#define DEVRT_ALLOC_CAP		4096u
#define DEVRT_ALLOC_TABLE	(16u + 16u * DEVRT_ALLOC_CAP)
#define DEVRT_ALLOC_BYTES	(DEVRT_LINE + 2u * DEVRT_ALLOC_TABLE)

/*
 * The context a launch's __gt_ctx points to: this header, then nmaps
 * struct devrt_map_desc (device map id = index).  128 bytes, so the
 * descriptors start on their own line.
 */
struct devrt_ctx {
	uint64_t magic;		/* DEVRT_MAGIC */
	uint64_t launch;	/* launch sequence number */
	uint64_t launch_ns;	/* host time of the launch */
	uint64_t kernel;	/* kernel id */
	uint64_t gpu;		/* device ordinal */
	uint64_t pid;
	uint32_t stop;		/* set at detach; probes do not read it (a launch
				 * with context 0 is how probes are stopped, and
				 * after detach originals are launched) */
	uint32_t nmaps;
	uint32_t nrings;	/* 0: printf records are dropped uncounted */
	uint32_t ring_bytes;
	uint64_t rings;		/* device address of ring 0 */
	uint64_t names;		/* kernel names: DEVRT_NAME_BYTES per kernel id, or 0 */
	uint64_t allocs;	/* allocations probes may read, or 0 */
	uint64_t bad_reads;	/* reads that found no allocation: read 0 */
	uint64_t pad[4];
};

/* byte offsets the lowering reads (checked against the struct in C) */
#define DEVRT_CTX_LAUNCH	8
#define DEVRT_CTX_LAUNCH_NS	16
#define DEVRT_CTX_KERNEL	24
#define DEVRT_CTX_GPU		32
#define DEVRT_CTX_PID		40
#define DEVRT_CTX_STOP		48
#define DEVRT_CTX_NAMES		72
#define DEVRT_CTX_ALLOCS	80
#define DEVRT_CTX_BAD_READS	88
#define DEVRT_NAME_BYTES	64
#define DEVRT_CTX_SIZE		128
#define DEVRT_DESC_SIZE		80

/*
 * The launch parameter (struct agent_launch_param) carries, after its
 * four words, how to address the shards of the first DEVRT_HOT_MAPS maps
 * without a key: map m's word DEVRT_PW_HOT + 2m is its base, the next one
 * holds shard_bytes in the low 32 bits and nshards - 1 (SMLOAD: nwords)
 * in the high 32.  Probes read them from the parameter space, so their
 * common path touches no memory but the update itself.  devrt_hot_words()
 * fills them; zero for keyed maps.
 */
#define DEVRT_HOT_MAPS		8
#define DEVRT_PW_HOT		4

/*
 * Shards of an smload map without key: SM s adds to word s of shard
 * s % DEVRT_SMLOAD_SHARDS, so no two SMs update one cache line (words 16
 * apart are DEVRT_LINE apart).  Packed in one shard, the SMs' adds queue
 * on a few lines: a 5-point stencil with one add per warp ran 3.3x
 * slower on the H200; one line per SM, 1.03x.
 */
#define DEVRT_SMLOAD_SHARDS	16
#define DEVRT_PWORDS		(DEVRT_PW_HOT + 2 * DEVRT_HOT_MAPS)

#ifndef __CUDACC__
#include <stddef.h>

/* A slot's key in bytes: key_size rounded up to whole words. */
static inline size_t devrt_key_bytes(const struct devrt_map_desc *d)
{
	return (d->key_size + 7) / 8 * 8;
}

_Static_assert(sizeof(struct devrt_ctx) == DEVRT_CTX_SIZE, "ctx size");
_Static_assert(offsetof(struct devrt_ctx, stop) == DEVRT_CTX_STOP, "stop");
_Static_assert(offsetof(struct devrt_ctx, pid) == DEVRT_CTX_PID, "pid");
_Static_assert(offsetof(struct devrt_ctx, names) == DEVRT_CTX_NAMES, "names");
_Static_assert(offsetof(struct devrt_ctx, allocs) == DEVRT_CTX_ALLOCS, "allocs");
_Static_assert(offsetof(struct devrt_ctx, bad_reads) == DEVRT_CTX_BAD_READS,
	       "bad_reads");
_Static_assert(sizeof(struct devrt_map_desc) == DEVRT_DESC_SIZE, "desc");
_Static_assert(sizeof(struct devrt_ring_hdr) == DEVRT_LINE, "ring hdr");

/* ---- host side (gpucode/devrt_host.c) ---- */

/* The runtime's PTX (module-scope text, no .version/.target), built from
 * devrt.cu at build time; "" when the build had no nvcc. */
extern const char devrt_ptx[];

/* Bytes of the context with NMAPS descriptors. */
size_t devrt_ctx_bytes(uint32_t nmaps);

/*
 * Complete D: check the fields the agent set and compute value_size
 * (aggregations), nwords (but SMLOAD's), slot_bytes and shard_bytes.
 * 0 or -EINVAL (bad kind, capacity not a power of 2, lhist step <= 0 or
 * max <= min, sizes out of range).
 */
int devrt_map_layout(struct devrt_map_desc *d);
/* Bytes of device memory for D (all shards). */
uint64_t devrt_map_bytes(const struct devrt_map_desc *d);
/*
 * Write D's initial contents (devrt_map_bytes of them) to IMAGE: zeros,
 * except min/max values of maps without key (they start at the identity
 * so the device can use atomic min/max).  Also what clear() writes.
 */
void devrt_map_init(const struct devrt_map_desc *d, void *image);
/* Whether devrt_map_init writes only zeros for D. */
bool devrt_map_zero_init(const struct devrt_map_desc *d);

/*
 * The layout of a host copy of D that holds only the first USED slots of
 * each shard (at least one, at most all), into *OUT (which may be D).  A
 * map kept per kernel fills its slots in order as kernels are
 * instrumented, so a snapshot copies those: a few KB of each shard, not
 * 1024 slots (44 MiB in all for a count).  Any other map is copied
 * whole: *OUT = *D.
 */
void devrt_map_used(const struct devrt_map_desc *d, uint32_t used,
		    struct devrt_map_desc *out);

/* The hot words of the first DEVRT_HOT_MAPS of NMAPS completed maps D. */
void devrt_hot_words(const struct devrt_map_desc *d, int nmaps,
		     uint64_t hot[2 * DEVRT_HOT_MAPS]);

/*
 * Per-key totals of a host copy IMAGE of D's memory: shards merged
 * (counts, sums and buckets added, min/max combined over the shards that
 * set them, plain maps: the first shard holding the key).  FN gets each
 * live key once (KEY = NULL when D has no key; a map without key is
 * reported only once some probe updated it) and its nwords value words;
 * returning nonzero stops the walk.  Returns the number of keys reported
 * or -ENOMEM.
 */
typedef int (*devrt_entry_fn)(const void *key, const uint64_t *val,
			      void *arg);
int devrt_map_foreach(const struct devrt_map_desc *d, const void *image,
		      devrt_entry_fn fn, void *arg);
/* Updates lost because a shard's table was full. */
uint64_t devrt_map_drops(const struct devrt_map_desc *d, const void *image);

/* Bytes of NRINGS rings of RING_BYTES data each. */
uint64_t devrt_rings_bytes(uint32_t nrings, uint32_t ring_bytes);
/*
 * Read the committed records of one ring from a host copy RING (header
 * and data, DEVRT_LINE + RING_BYTES bytes) starting at *TAIL; FN gets
 * each (format id, argument bytes, size).  *TAIL is advanced past what
 * was read: write it back to the device ring's tail.  Returns the number
 * of records read.
 */
typedef void (*devrt_rec_fn)(uint32_t fmt, const void *args, uint32_t size,
			     void *arg);
int devrt_ring_read(const void *ring, uint32_t ring_bytes, uint64_t *tail,
		    devrt_rec_fn fn, void *arg);
#endif

#endif
