/* SPDX-License-Identifier: MIT */
/*
 * Probe providers.  Every provider (BEGIN, END, interval, uprobe, cuda,
 * gpu, ...) is one file in probes/ behind one `struct provider`; the
 * compiler asks it which builtins a clause may use and the runtime asks
 * it to attach.
 */
#ifndef GT_PROVIDER_H
#define GT_PROVIDER_H

#include <linux/bpf.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct provider;

/*
 * Where the value of a provider-specific builtin (argN, retval, func,
 * kernel, size...) comes from; the code generator turns it into loads.
 */
enum bsrc_kind {
	BSRC_CTX_U64,		/* *(u64 *)(ctx + off) */
	BSRC_USTACK_U64,	/* *(u64 *)(user sp + off), sp from ctx + sp_off */
	BSRC_STR,		/* the constant string str */
	BSRC_CTX_STR,		/* user string at the address *(u64 *)(ctx + off) */
	BSRC_MAP_STR,		/* string value of map `map` at key *(u64 *)(ctx + off),
				 * or `str` when the key is absent */
	BSRC_PTR_U32,		/* *(u32 *)(*(u64 *)(ctx + off) + ptr_off), user memory */
	BSRC_PTR_U64,		/* the same, 8 bytes */
	BSRC_PTR_KEY,		/* a kernel key (gpucode/kname.h) whose hash is
				 * the u64 at *(u64 *)(ctx + off) + ptr_off */
	BSRC_MAP_U64,		/* u64 at ptr_off in the value of map `map` at key
				 * *(u64 *)(ctx + off), 0 when the key is absent;
				 * with `since`: nsecs minus that u64 */
	BSRC_CTX_INT,		/* `size` bytes at ctx + off, `sign`-extended
				 * (tracepoint fields) */
	BSRC_CTX_CHARS,		/* string: the char array of `size` bytes at
				 * ctx + off (kernel memory) */
	BSRC_CTX_DATALOC,	/* string: __data_loc, u32 at ctx + off whose
				 * low 16 bits are the offset from ctx */
	BSRC_PTR_INT,		/* `size` bytes of user memory at *(u64 *)(ctx +
				 * off) + ptr_off, `sign`-extended (usdt) */
	BSRC_IMM,		/* the constant imm (usdt) */
};

struct builtin_src {
	enum bsrc_kind kind;
	int off;
	int sp_off;		/* BSRC_USTACK_U64: offset of sp in ctx */
	int ptr_off;		/* BSRC_PTR_U32 */
	bool u32;		/* keep only the low 32 bits (C unsigned int args) */
	int map;		/* BSRC_MAP_*: index in the object's maps */
	bool since;		/* BSRC_MAP_U64: a time elapsed since the value */
	int size;		/* BSRC_CTX_INT, BSRC_PTR_INT: 1, 2, 4 or 8 */
	bool sign;		/* BSRC_CTX_INT, BSRC_PTR_INT: signed value */
	int64_t imm;		/* BSRC_IMM */
	const char *str;
};

/*
 * A filter the code generator puts first in a probe's program: it goes on
 * only when map `map` holds key *(u64 *)(ctx + off) with a value whose
 * u64 at val_off has bit `bit` set (cuda:launch:GLOB: the kernels whose
 * name matches).
 */
struct probe_filter {
	int map;
	int off;
	int val_off;		/* the u64 holding the bits, in the map value */
	int bit;		/* go on only when set (-1: no such test) */
	int skip;		/* leave when set (-1: none); no entry: go on */
	bool user;		/* no map: the bits are the u64 at user address
				 * *(u64 *)(ctx + off) + val_off */
};

/* One attach point, after the probe list and its wildcards are expanded. */
struct probe {
	const struct provider *prov;
	char *name;		/* the full probe text, as the `probe` builtin gives it */
	char *args[4];		/* the parts after the provider name, split at ':' */
	int nargs;
	/* set before parse(): -p PID, or 0 for every process */
	int target_pid;
	/* filled by the provider's parse() */
	uint64_t period_ns;	/* interval */
	char *path;		/* uprobe: the binary */
	uint64_t offset;	/* uprobe: file offset of the probed address */
	char *func;		/* uprobe: the (demangled) function */
	bool retprobe;		/* uretprobe; gpu: the :exit form */
	bool warp;		/* gpu:warp (and gpu:mem: once per warp) */
	unsigned mem;		/* gpu:mem: PTX_MEM_* classes, 0 otherwise */
	/* kernel probes loaded as another program type than the provider's
	 * (kprobe as fentry where the kernel has no kprobes): 0 for none */
	enum bpf_prog_type prog_type;
	enum bpf_attach_type attach_type;	/* with attach_btf_id */
	uint32_t attach_btf_id;			/* vmlinux BTF id, 0: none */
	void *priv;		/* provider-private, freed by the provider */
	bool in_agent;		/* run by the agent (docs/hostpath.md): not
				 * loaded, not attached */
	/* filled by attach() */
	int prog_fd;
	int nfds;
	int fds[8];		/* perf events / links to close on detach */
};

struct provider {
	const char *name;		/* "BEGIN", "interval", ... */
	const char *alias;		/* "begin", or NULL */
	enum bpf_prog_type prog_type;	/* what its programs are loaded as */
	bool device;			/* gpu:* probes run on the GPU */
	/*
	 * Check the probe's arguments and fill its fields.  On error:
	 * -EINVAL, a message in ERR and *ARG the index of the bad argument
	 * (-1 for the probe as a whole).
	 */
	int (*parse)(struct probe *p, char *err, size_t errlen, int *arg);
	/* Whether builtin NAME may be used in this provider's clauses. */
	bool (*has_builtin)(const struct probe *p, const char *name);
	/*
	 * Provider-specific builtins: fill *SRC for NAME, or return -ENOENT
	 * for a builtin that the code generator knows itself (pid, comm...).
	 * NULL when the provider has none.
	 */
	int (*builtin_src)(const struct probe *p, const char *name,
			   struct builtin_src *src);
	/*
	 * Wildcards: when the probe's text holds '*' or '?', list the
	 * concrete probe texts it stands for (malloc'd array of malloc'd
	 * strings in *OUT, count returned, 0 for no match; negative errno
	 * and ERR on failure).  Each is then parsed as a probe of its own.
	 * NULL when the provider takes no wildcards.
	 */
	int (*expand)(const struct probe *p, char ***out, char *err, size_t errlen);
	/* Call expand() for every probe text, with or without wildcards
	 * (cuda: one probe per driver entry point). */
	bool expand_all;
	/*
	 * Maps and programs the provider needs besides the clause's own (for
	 * cuda: the handle-to-name table and the probes that fill it),
	 * appended to OBJ (struct gt_object *); called by the code generator
	 * before it generates P's program.  0 or negative errno with ERR.
	 */
	int (*extras)(struct probe *p, void *obj, char *err, size_t errlen);
	/* 1 and *F filled when P's program must start with a filter. */
	int (*filter)(const struct probe *p, struct probe_filter *f);
	/* Whether -p PID scoping must be added to this provider's programs
	 * as a pid check (false where attach() scopes them itself or where
	 * they are not tied to a process: BEGIN, END, interval). */
	bool pid_filter;
	/* Attach the loaded program PROG_FD; negative errno and ERR on failure. */
	int (*attach)(struct probe *p, int prog_fd, char *err, size_t errlen);
	/* Undo attach(); safe to call twice. */
	void (*detach)(struct probe *p);
	/* BEGIN/END: run the program once, now.  NULL for other providers. */
	int (*fire)(struct probe *p);
	/* Why has_builtin() refused NAME, written into BUF; NULL (or no
	 * hook) for the generic "not available in PROVIDER probes". */
	const char *(*builtin_why)(const struct probe *p, const char *name,
				   char *buf, size_t len);
};

/* The provider named NAME (or its alias), or NULL. */
const struct provider *provider_find(const char *name);
/* All providers, NULL-terminated, for -l and completion. */
extern const struct provider *const providers[];

/*
 * -c CMD: the command line, set by main before compiling (the held
 * child's /proc/PID/exe is still the tracer's); NULL otherwise.  cuda:
 * reads the program's fatbins and finds the driver it will load.
 */
extern const char *provider_target_cmd;

/*
 * The agent library that -c preloads into the child (cuda:complete puts
 * its uprobe there), set by main before compiling; NULL without one.
 */
extern const char *provider_agent_lib;

/*
 * -p with the agent injected: the agent library whose exports replace
 * the driver's hooked entry points.  Those are patched with jumps to the
 * agent (inline hooks), where a uprobe must not go; the agent's wrapper
 * of the same name, with the same arguments, takes it.  NULL otherwise.
 */
extern const char *provider_hooked_lib;

/*
 * -p: the agent met kernel HANDLE (mangled NAME), loaded before the
 * attach: record what cuda:launch's hidden probes would have recorded at
 * its cuModuleGetFunction (OBJ loaded).  0 or -errno.
 */
struct gt_object;
int cuda_name_handle(struct gt_object *obj, uint64_t handle,
		     const char *name);

/*
 * The GLOBs of OBJ's cuda:complete probes ("*" for none), in the order of
 * their bits in agent_complete_rec.match: *GLOBS (owned by OBJ's AST)
 * and their count, 0 when there is no such probe (probes/cuda.c).
 */
struct gt_object;
int cuda_complete_globs(const struct gt_object *obj, const char *const **globs);
/* Whether a cuda:complete clause of OBJ reads `queued` (CUPTI's latency
 * timestamps, which cost every launch, are on only then). */
bool cuda_complete_queued(const struct gt_object *obj);

/*
 * -p: the agent was not injected after all: OBJ's cuda: probes on its
 * library LIB (the wrappers of the driver's entry points) go back to the
 * driver's functions (probes/cuda_unhook.c).  0, or -ENOENT when one is
 * not in the driver.
 */
int cuda_unhook(struct gt_object *obj, const char *lib);
/*
 * Before OBJ is loaded (and again before a hostpath fallback loads the
 * agent's programs): when a hidden namer reads .cuda_match, read the
 * target's fatbins for the kernels the GLOBs match and size the map
 * (made again if it was loaded at size 1).  With every namer in the
 * agent, nothing is read.  0 or a negative errno with ERR.
 */
int cuda_match_prepare(struct gt_object *obj, char *err, size_t errlen);

/*
 * gpu:sample (gpu_sample.c): whether TEXT is such a probe (a host probe
 * under the gpu: name), and the GLOBs of OBJ's, in the order of their
 * bits in agent_sample_rec.match (owned by OBJ's AST), their count (0:
 * none) and the sampling period (log2 of cycles) in *PERIOD.
 */
bool gpu_sample_probe(const char *text);
int gpu_sample_globs(const struct gt_object *obj, const char *const **globs,
		     uint32_t *period);

/*
 * Attach PROG_FD to the perf event PFD (P takes the fd) through a BPF
 * link, or the older ioctl, and enable it.  WHAT names the event in
 * errors.  On failure the caller detaches P.
 */
int probe_perf_attach(struct probe *p, int pfd, int prog_fd, const char *what,
		      char *err, size_t errlen);

/* Builtins every host clause may use (pid, tid, comm, nsecs, ...). */
bool provider_host_builtin(const char *name);
/* A growing list of malloc'd strings (probe names, -l lines). */
struct provider_names {
	char **v;		/* NULL after the last one */
	size_t n, cap;
};

/* Append a string formatted as printf does; 0 or -ENOMEM. */
int provider_names_add(struct provider_names *ns, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* Free every string and the list; it is empty again. */
void provider_names_free(struct provider_names *ns);

/*
 * The `probe` builtin's values: probe names by number, one table for the
 * process (the prompt's programs share maps), so a name is whole however
 * long (bpftrace too prints the full name).  The id of NAME, added when
 * new (>= 0, or -ENOMEM); the name of ID, or NULL.
 */
int probe_name_id(const char *name);
const char *probe_name_of(uint64_t id);

/*
 * A probe name that does not parse: the message (printf's FMT) in ERR and,
 * when ARG is set, which of the name's parts it is about in *ARG (WHICH;
 * -1: the whole name).  Returns -EINVAL, for "return provider_fail(...)".
 */
int provider_fail(char *err, size_t errlen, int *arg, int which,
		  const char *fmt, ...) __attribute__((format(printf, 5, 6)));

/* NAME is argN (N decimal, no sign): true with *N set. */
bool provider_arg_index(const char *name, int *n);

/*
 * The providers themselves, one file each in probes/.  A struct probe
 * must start with prog_fd = -1 and nfds = 0 (attach() sets them).
 */
extern const struct provider provider_begin;	/* begin_end.c */
extern const struct provider provider_end;	/* begin_end.c */
extern const struct provider provider_interval;	/* interval.c */
extern const struct provider provider_uprobe;	/* uprobe.c */
extern const struct provider provider_uretprobe;	/* uprobe.c */
extern const struct provider provider_kprobe;	/* kprobe.c */
extern const struct provider provider_kretprobe;	/* kprobe.c */
extern const struct provider provider_tracepoint;	/* tracepoint.c */
extern const struct provider provider_rawtracepoint;	/* rawtracepoint.c */
extern const struct provider provider_profile;	/* perf.c */
extern const struct provider provider_software;	/* perf.c */
extern const struct provider provider_hardware;	/* perf.c */
extern const struct provider provider_usdt;	/* usdt.c */
extern const struct provider provider_gpu;	/* gpu.c */
extern const struct provider provider_cuda;	/* cuda.c */
extern const struct provider provider_gpu_sample;	/* gpu_sample.c */

#endif
