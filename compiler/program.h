/* SPDX-License-Identifier: MIT */
/*
 * What the compiler hands to the runtime: eBPF programs (one per attach
 * point) and the maps they use.  Map references in the code are
 * `ld_imm64 rX, IDX` with src_reg = BPF_PSEUDO_MAP_FD and IDX the index in
 * `maps`; the loader patches IDX to the map's fd before loading.
 */
#ifndef GT_PROGRAM_H
#define GT_PROGRAM_H

#include <linux/bpf.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct probe;

enum gt_map_type {
	GT_MT_HASH,
	GT_MT_PERCPU_HASH,
	GT_MT_ARRAY,
	GT_MT_PERCPU_ARRAY,
	GT_MT_RINGBUF,		/* value_size 0, max_entries = bytes (power of 2) */
	GT_MT_STACK_TRACE,	/* u32 stack id -> value_size / 8 addresses */
};

struct gt_map_def {
	char name[64];			/* "@x", "@", or ".events" for internal maps */
	enum gt_map_type type;
	uint32_t key_size;
	uint32_t value_size;
	uint32_t max_entries;
	uint32_t map_flags;		/* BPF_F_*, e.g. BPF_F_NO_PREALLOC */
	int fd;				/* set by gt_object_load, -1 before */
	void *meta;			/* compiler's decode info (not the loader's) */
};

/* A while loop of the source: its instructions [head, end) and where it is. */
struct gt_src_loop {
	uint32_t head, end;
	int line, col;
};

struct gt_bpf_prog {
	struct probe *probe;		/* the attach point */
	struct bpf_insn *insns;
	size_t ninsns;
	int fd;				/* set by gt_object_load, -1 before */
	/* the program's while loops, for the device verifier's messages */
	struct gt_src_loop *loops;
	int nloops;
	/* where each callback subprogram starts (len(), for over a map):
	 * the kernel then wants BTF func_info for every function */
	uint32_t *sub_offs;
	int nsubs;
};

struct gt_object {
	struct gt_map_def *maps;
	int nmaps;
	struct gt_bpf_prog *progs;
	int nprogs;
	void *cg_priv;			/* the code generator's (map layouts) */
	bool hist_sum;			/* cg_opts.hist_sum, for device_lower() */
};

/* Append a copy of DEF / PROG (the object takes PROG's insns); index or -ENOMEM. */
int gt_object_add_map(struct gt_object *obj, const struct gt_map_def *def);
int gt_object_add_prog(struct gt_object *obj, const struct gt_bpf_prog *prog);

/*
 * Create every map and load every program (program type from the probe's
 * provider).  On failure: negative errno, a message naming the map or
 * probe in ERR (with the kernel verifier's log for a rejected program),
 * and nothing left loaded.
 */
int gt_object_load(struct gt_object *obj, char *err, size_t errlen);
/*
 * The prompt's form: maps whose fd is already set (>= 0, the object's
 * own copy of another object's map) are kept, every other map is
 * created; only the programs with LOAD[i] are loaded (all when LOAD is
 * NULL), the rest keep fd -1.  Failure as above.
 */
int gt_object_load_part(struct gt_object *obj, const bool *load, char *err,
			size_t errlen);
/* Close every fd (maps and programs); safe on a partly loaded object. */
void gt_object_unload(struct gt_object *obj);

#endif
