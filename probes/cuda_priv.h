/* SPDX-License-Identifier: MIT */
/*
 * The cuda: provider's parts: the entry point table and probe state
 * (cuda.c), the hidden programs that name kernel handles and save
 * entry-time values (cuda_progs.c), and the driver lookup and kernel
 * table from the target's fatbins (cuda_names.c).
 */
#ifndef GT_CUDA_PRIV_H
#define GT_CUDA_PRIV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <linux/bpf.h>

struct gt_object;
struct probe;

#define CUDA_DRIVER	"libcuda.so.1"
#define CUDA_NAME_LEN	64	/* kernel keys in maps (gpucode/kname.h) */
#define CUDA_MAX_GLOBS	30	/* one bit each; the filter's jset takes an imm32 */
#define CUDA_BIT_AGENT	30	/* the agent's own kernel: cuda:launch skips it */

/* How an entry point's arguments are laid out. */
enum cuda_layout {
	CL_LAUNCH,	/* cuLaunchKernel(f, gx, gy, gz, bx, by, bz, shmem, stream, ...) */
	CL_LAUNCH_EX,	/* cuLaunchKernelEx(const CUlaunchConfig *, f, ...) */
	CL_MALLOC,	/* (out, size_t size, ...): size saved at entry */
	CL_PITCH,	/* cuMemAllocPitch(out, pitch *, width, height, elt) */
	CL_FREE,	/* (ptr, ...) */
	CL_MEMCPY,	/* (dst, src, size_t size, ...) */
	CL_SYNC,	/* time saved at entry */
	CL_GRAPH,	/* cuGraphLaunch(exec, stream) */
	CL_COMPLETE,	/* the agent's gputrace_complete(struct agent_complete_rec *) */
};

struct cuda_entry {
	const char *event;	/* "launch", "malloc", ... */
	const char *func;	/* driver symbol */
	enum cuda_layout lay;
	const char *kind;	/* memcpy: "HtoD", "DtoH", "DtoD", "any" */
};

/* What a hidden program does (cuda_progs.c). */
enum cuda_hidden {
	CH_NAME_ENTRY,		/* save (out pointer, name pointer) per thread */
	CH_KERNEL_ENTRY,	/* save (out pointer, CUkernel) per thread */
	CH_NAME_RET,		/* handle -> name (+ GLOB bits) on success */
	CH_SAVE_ARG1,		/* calls[sp + 8] = arg1 (malloc size) */
	CH_SAVE_PITCH,		/* calls[sp + 8] = arg2 * arg3 */
	CH_SAVE_TIME,		/* calls[sp + 8] = now */
};

/* A kernel of the target's fatbins, for cuda:launch:GLOB. */
struct cuda_kernel {
	char *name;		/* mangled */
	char *base;		/* demangled without parameters, or NULL */
};

/* Per object (struct gt_object): the maps and hidden programs, once. */
struct cuda_shared {
	struct gt_object *obj;
	char driver[4096];
	int names_map;		/* handle -> { key[64], u64 bits } */
	int match_map;		/* hash of the name -> u64 bits, filled at attach */
	int knames_map;		/* hash -> mangled name[KNAME_MAX] */
	int scratch_map;	/* per-CPU: one name being read */
	int pend_map;		/* pid_tgid -> { out, src } between entry and return */
	int calls_map;		/* entry sp -> { u64 value, u64 present } */
	uint64_t savers;	/* entry points (table index) with a saver */
	const char *globs[CUDA_MAX_GLOBS];
	int nglobs;
	const char *cglobs[CUDA_MAX_GLOBS];	/* cuda:complete's, bit i each */
	int ncglobs;
	struct cuda_kernel *kernels;
	size_t nkernels;
	int pid;		/* -p's, for the scan of a GLOB's kernels */
	bool scanned;		/* kernels read from the fatbins */
	bool filled;		/* match map written */
	bool cqueued;		/* a cuda:complete clause reads `queued` */
};

/* Hung from probe->priv (clause probes and hidden ones alike). */
struct cuda_priv {
	const struct cuda_entry *ent;
	const char *glob;	/* cuda:launch:GLOB, or NULL */
	int bit;		/* GLOB's bit in the match bits */
	bool hidden;
	enum cuda_hidden what;
	struct cuda_shared *sh;
};

extern const struct cuda_entry cuda_entries[];
extern const size_t cuda_nentries;

/* Value layouts of the maps, for the code generator's offsets. */
#define CUDA_NAMES_VALUE	(CUDA_NAME_LEN + 8)	/* name, bits */
#define CUDA_BITS_OFF		CUDA_NAME_LEN
#define CUDA_CALLS_VALUE	16			/* value, present */

/*
 * Hidden program WHAT in *INSNS (malloc'd), using the maps of SH.
 * 0 or -ENOMEM.
 */
int cuda_prog_build(enum cuda_hidden what, const struct cuda_shared *sh,
		    struct bpf_insn **insns, size_t *n);

/*
 * The driver library that process PID (0: any; a -c child held before
 * exec: the command provider_target_cmd) loads, as an absolute path.
 * 0, or -ENOENT with a message in ERR.
 */
int cuda_find_driver(int pid, char *out, size_t outlen, char *err,
		     size_t errlen);

/*
 * The kernels of PID's fatbins (every mapped file; for a held -c child
 * or PID 0 with provider_target_cmd: the command and the libraries it
 * needs), into SH->kernels (AST arena).  0, or -EINVAL with ERR when
 * there is no process to read.
 */
int cuda_scan_kernels(struct cuda_shared *sh, int pid, char *err,
		      size_t errlen);

/*
 * FN(path) for every ELF object of a target: the files PID maps (PID >
 * 0), else CMD's program (its first word, through $PATH) and, breadth
 * first, the libraries it needs.  0 or -ENOMEM.
 */
int cuda_target_files(int pid, const char *cmd,
		      void (*fn)(const char *path, void *arg), void *arg);

/* Bits of the GLOBs of SH that NAME (mangled) / BASE match. */
uint64_t cuda_glob_bits(const struct cuda_shared *sh, const char *name,
			const char *base);

/* Whether PID is a -c child still held before exec (its exe is ours). */
bool cuda_pid_is_held(int pid);

#endif
