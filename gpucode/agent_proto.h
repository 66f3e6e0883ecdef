/* SPDX-License-Identifier: MIT */
/*
 * What the tracer and the in-process agent share.
 *
 *  - The configuration: written by the tracer to a file before the target
 *    starts (GPUTRACE_AGENT_CONFIG=path), read by the agent's constructor.
 *  - A Unix SOCK_SEQPACKET socket (GPUTRACE_AGENT_SOCK=path): the agent
 *    connects, then messages flow both ways, one per packet.
 *  - A shared-memory segment (a memfd the target inherits,
 *    GPUTRACE_AGENT_SEG=fd): device map snapshots, written by the agents
 *    (a region per process), read by the tracer.
 *
 * The launch parameter: every instrumented kernel gets one added
 * by-value parameter `.param .align 8 .b8 __gt_ctx[160]` holding
 * struct agent_launch_param; the agent fills a host copy per launch and
 * passes its address in kernelParams (or copies it into the `extra`
 * buffer at ptx_ctx_offset()).  No API call is added to a launch.
 */
#ifndef GT_AGENT_PROTO_H
#define GT_AGENT_PROTO_H

#include <stdbool.h>
#include <stdint.h>

#include <linux/bpf.h>

#include "gpucode/devrt.h"
#include "gpucode/agent_hentry.h"

#define AGENT_ENV_CONFIG	"GPUTRACE_AGENT_CONFIG"
#define AGENT_ENV_SOCK		"GPUTRACE_AGENT_SOCK"
#define AGENT_ENV_SEG		"GPUTRACE_AGENT_SEG"

struct agent_launch_param {
	uint64_t ctx;		/* device address of this context's devrt_ctx */
	uint64_t launch;	/* launch sequence number (per process) */
	uint64_t launch_ns;	/* CLOCK_REALTIME ns at the launch call */
	uint64_t kernel;	/* kernel id: index in the context's name table */
	uint64_t hot[2 * DEVRT_HOT_MAPS];	/* devrt_hot_words() */
};

/* One gpu: clause. */
struct agent_clause {
	int id;			/* probe function __gt_probe_<id> */
	bool warp;		/* gpu:warp (else gpu:kernel) */
	bool exit;		/* :exit (else :entry) */
	unsigned mem;		/* gpu:mem: PTX_MEM_* classes (warp set);
				 * written as the config's warp field's
				 * bits 1-3 */
	char *glob;		/* kernel name glob (demangled base or mangled) */
	char *call;		/* the splicer's entry/exit text for it */
};

/*
 * Host clauses run in the agent (docs/hostpath.md): the tracer's own
 * eBPF for a cuda: probe, run by gpucode/hbpf.c at the agent's hook.
 * The object's maps as the programs see them (index = the program's map
 * reference), each with what the agent makes of it.
 */
enum agent_hmap_role {
	AGENT_HM_NONE,		/* no program of the agent uses it */
	AGENT_HM_AGG,		/* an aggregation: unit map DEVMAP's images */
	AGENT_HM_NAMES,		/* .cuda_names: handle -> { key, bits } */
	AGENT_HM_EVENTS,	/* the events ring: records to the tracer */
	AGENT_HM_LOST,		/* .lost: events the ring had no room for */
	AGENT_HM_CALLS,		/* .cuda_calls: the call's entry value
				 * (malloc size, sync start), at return */
	AGENT_HM_END_,
};

struct agent_hmap {
	uint32_t role;
	uint32_t devmap;	/* AGG: the unit map (config map) */
	uint32_t key_size;	/* as the program's key (hist: + bucket) */
	uint32_t value_size;
	bool bucket;		/* hist/lhist: a u64 bucket ends the key */
};

/* The driver entry point a host program is for (its argument layout):
 * gpucode/agent_hentry.h. */
#define AGENT_HE_ENUM_(name, sym, kind)	AGENT_HE_##name,
enum agent_hentry {
	AGENT_HENTRIES(AGENT_HE_ENUM_)
	AGENT_HE_END_,
};
#undef AGENT_HE_ENUM_

struct agent_hprog {
	uint32_t entry;		/* enum agent_hentry */
	uint32_t ninsns;
	struct bpf_insn *insns;
};

#define AGENT_MAX_HINSNS	65536

struct agent_config {
	/* the counts the agent reads at every launch first: one cache line
	 * with agent_state's flags (a real launch leaves them cold) */
	int nclauses;
	int nsamples;			/* gpu:sample clauses: their GLOBs */
	int nhprogs;			/* host programs (docs/hostpath.md) */
	bool verbose;			/* report JIT times and every decision */
	int nmaps;
	struct devrt_map_desc *maps;	/* kind, flags, sizes, shards set; base 0 */
	struct agent_clause *clauses;
	char *decls;			/* module-scope PTX: runtime + probe functions */
	unsigned ptx_major, ptx_minor;	/* minimum .version of a spliced module */
	uint32_t nrings, ring_bytes;	/* printf rings per context */
	int ncompletes;			/* cuda:complete clauses: their GLOBs */
	char **completes;
	bool complete_queued;		/* one reads `queued`: CUPTI's latency
					 * timestamps on */
	char **samples;
	uint32_t sample_period;		/* log2 of the cycles between PC samples */
	bool reads;			/* probes read device memory: track
					 * allocations (agent_alloc.c) */
	char *timeline;			/* --timeline: the file the agent
					 * writes (absolute), or NULL */
	int nhmaps;			/* host programs' maps */
	struct agent_hmap *hmaps;
	struct agent_hprog *hprogs;
	int nhglobs;			/* cuda:launch:GLOBs, bit i each in
					 * .cuda_names' bits (the filter's) */
	char **hglobs;
};

#define AGENT_MAX_HGLOBS	30	/* below .cuda_names' agent bit (30) */
#define AGENT_MAX_COMPLETES	64	/* one bit each in the record; the
					 * tracer uses 30 (CUDA_MAX_GLOBS) */

/*
 * cuda:complete: one kernel run, the argument of gputrace_complete() in
 * the agent, where the tracer's uprobe reads it.  Offsets are ABI.
 */
struct agent_complete_rec {
	uint64_t kernel;	/* kname_hash() of the mangled name */
	uint64_t match;		/* bit i: complete clause i's GLOB matches */
	uint64_t duration;	/* GPU ns from start to end */
	uint64_t queued;	/* ns from the launch call to the start; 0: unknown */
	uint64_t stream;	/* CUPTI's stream id in its context */
	uint32_t grid[3], block[3];
	uint32_t gpu, pad;
	const char *name;	/* mangled, NUL-terminated */
};
#define AGENT_COMPLETE_SYM	"gputrace_complete"

/*
 * gpu:sample: the samples CUPTI's PC sampling counted at one instruction
 * of one kernel with one stall reason since the last hand-over; the
 * first argument of gputrace_sample(rec, stall) in the agent (the second
 * is the stall reason's name, NUL-terminated).  Offsets are ABI.
 */
struct agent_sample_rec {
	uint64_t kernel;	/* kname_hash() of the mangled name */
	uint64_t match;		/* bit i: sample clause i's GLOB matches */
	uint64_t pc;		/* offset of the instruction in the function */
	uint64_t samples;
	uint32_t gpu, stall;	/* device ordinal; CUPTI's stall index */
	const char *name;	/* mangled, NUL-terminated */
};
#define AGENT_SAMPLE_SYM	"gputrace_sample"
#define AGENT_SAMPLE_PERIOD_MIN	5	/* CUPTI: 2^5 .. 2^31 cycles */
#define AGENT_SAMPLE_PERIOD_MAX	31
#define AGENT_SAMPLE_PERIOD_DEF	20	/* docs/gpu-sample.md: its cost */

/* 0 or negative errno. */
int agent_config_write(const struct agent_config *c, const char *path);
int agent_config_read(const char *path, struct agent_config *c);
void agent_config_free(struct agent_config *c);

enum agent_msg_type {
	AGENT_MSG_HELLO = 1,	/* agent: u32 pid; hooks are in place */
	AGENT_MSG_REPORT,	/* agent: one line of text (instrumented, skipped, failed) */
	AGENT_MSG_SNAPSHOT,	/* tracer: copy the device maps into the segment */
	AGENT_MSG_SNAPSHOT_DONE,/* agent: the segment holds the snapshot of `seq` */
	AGENT_MSG_PRINTF,	/* agent: printf records, see agent_printf_rec */
	AGENT_MSG_DETACH,	/* tracer: restore the original launches */
	AGENT_MSG_BYE,		/* agent: the process exits; final snapshot in the segment */
	AGENT_MSG_CUDA,		/* agent: this process launched a kernel (once) */
	AGENT_MSG_KNAME,	/* agent: a kernel a clause matched: its mangled name */
	AGENT_MSG_ATTACH,	/* tracer (-p): SCM_RIGHTS config fd, segment fd */
	AGENT_MSG_KHANDLE,	/* agent (-p): u64 handle, mangled name: a kernel
				 * handle first launched since the attach */
	AGENT_MSG_KHANDLE_ACK,	/* tracer: its name is known to cuda:launch (seq) */
	AGENT_MSG_HLOST,	/* agent: u64 events its host clauses lost so far */
	AGENT_MSG_BYE_ACK,	/* tracer: the BYE's region is copied; the
				 * agent may exit, and free the region for
				 * another process (a fork() child's) */
	AGENT_MSG_SNAPSHOT_LAST,/* tracer: SNAPSHOT, the session's last: no
				 * launch instrumented from now on, those
				 * made finish first (DETACH follows) */
};

/*
 * -p: the agent's launch wrappers call these no-op functions, with the
 * launch's own arguments, once the handle's name has reached the tracer:
 * cuda:launch's uprobes go there (the driver's entries are patched).
 * The suffix is the driver entry point they stand for.
 */
#define AGENT_SEEN_PREFIX	"gputrace_seen_"

/*
 * -p: the agent's exports the injector calls (runtime/inject.c), and its
 * table of inline hooks, read by the injector to move a thread stopped
 * inside the bytes being replaced into the trampoline (docs/attach.md).
 */
#define AGENT_SYM_ATTACH	"gputrace_attach"	/* int (const char *sock) */
#define AGENT_SYM_WHY		"gputrace_attach_why"	/* const char *(void) */
#define AGENT_SYM_ARM		"gputrace_arm"	/* struct agent_patches *(void) */
#define AGENT_MAX_PATCHES	128

struct agent_patch {
	uint64_t addr;		/* the driver function's entry */
	uint64_t tramp;		/* its displaced instructions, relocated */
	uint8_t len;		/* bytes displaced (>= 5) */
	uint8_t n;		/* instructions displaced */
	uint8_t off[8];		/* their offsets at addr */
	uint8_t toff[8];	/* and in the trampoline */
	uint8_t armed;
	uint8_t pad[5];
};

struct agent_patches {
	uint32_t n;
	uint32_t pad;
	struct agent_patch v[AGENT_MAX_PATCHES];
};

struct agent_msg {
	uint32_t type;
	uint32_t len;		/* bytes of payload after this header */
	uint64_t seq;		/* SNAPSHOT and its DONE: the request number */
	/* payload follows */
};

/* AGENT_MSG_PRINTF payload: records back to back, each 8-aligned. */
struct agent_printf_rec {
	uint32_t fmt;		/* printf event id */
	uint32_t size;		/* argument bytes that follow */
	/* args */
};

/*
 * The segment: AGENT_SEG_REGIONS regions of AGENT_SEG_BYTES, one per
 * process of the target that has device maps (a launcher starting one
 * process per GPU): a process claims region r with a record lock on the
 * segment's byte r and names r in its DONE and BYE payloads (u32); no
 * payload: it wrote nothing.  A region: this header, then one image per
 * (context, map), each described by an agent_seg_map and 8-aligned.  The
 * agent writes the images, then the header's seq (last); the tracer
 * reads after DONE/BYE.
 */
#define AGENT_SEG_MAGIC 0x67657374726163ull
#define AGENT_SEG_BYTES (512ull << 20)	/* sparse: pages exist once written */
#define AGENT_SEG_REGIONS 16

struct agent_seg_map {
	uint32_t map;		/* device map id */
	uint32_t gpu;		/* device ordinal of the context */
	uint64_t offset;	/* of the image from the segment start */
	uint64_t bytes;		/* devrt_map_bytes() */
	uint64_t drops;		/* printf drops of that context (map 0 only) */
	struct devrt_map_desc desc;	/* as the agent completed it (nwords, shards) */
};

struct agent_seg_hdr {
	uint64_t magic;
	uint64_t seq;		/* snapshot number, written last */
	uint32_t nimages;
	uint32_t pad;
	struct agent_seg_map images[];
};

#endif
