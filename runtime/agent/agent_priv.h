/* SPDX-License-Identifier: MIT */
/*
 * The in-process agent (build/libgputrace-agent.so): what its files share.
 * docs/agent.md has the design.  Every agent_*.c but agent_config.c is
 * compiled only into the agent (GT_AGENT_SO defined by agent_so.mk):
 * the tracer must never export our dlsym or cu* wrappers.
 *
 * The first part is plain C (no CUDA headers) so unit tests can include
 * it with AGENT_NO_CUDA; the rest needs cuda.h.
 */
#ifndef GT_AGENT_PRIV_H
#define GT_AGENT_PRIV_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "gpucode/agent_proto.h"
#include "gpucode/fatbin.h"
#include "gpucode/ptx.h"

#define AGENT_HIDDEN __attribute__((visibility("hidden")))
/* A launch's path: the linker puts these functions side by side
 * (.text.hot), so a hook that comes back cold after the driver's call
 * reads a few adjacent code lines and pages, not one each far apart. */
#define AGENT_HOT __attribute__((hot))
/* What such a path runs once (a thread's first call, a cache miss): out
 * of line, so that it does not spread the hot code over more lines. */
#define AGENT_COLD __attribute__((cold, noinline))

/* ---- pure helpers (agent_util.c) ---- */

/*
 * Bounded waits that wall-clock steps cannot stretch: C waits on
 * CLOCK_MONOTONIC (agent_cond_init_mono), until agent_deadline(MS).
 */
void agent_cond_init_mono(pthread_cond_t *c);
struct timespec agent_deadline(long ms);
uint64_t agent_now_ns(void) AGENT_HIDDEN;
uint64_t agent_now_ms(void) AGENT_HIDDEN;

/*
 * "void ns::f<int>(float*)" -> "ns::f<int>": drop the parameter list and
 * a return type.  Returns a malloc'd string (NULL: out of memory).
 */
char *agent_base_name(const char *demangled);

/*
 * Without a demangler: "_Z4vaddPfS_i" -> "vadd" for names at global
 * scope that are not templates; NULL for anything else.
 */
char *agent_simple_name(const char *mangled);

/* The name of the next `.entry NAME` from P on (before END), its length
 * in *IDLEN; NULL: none. */
const char *agent_ptx_next_entry(const char *p, const char *end,
				 size_t *idlen);
/* Does PTX (LEN bytes) define `.entry NAME`? */
bool agent_ptx_has_entry(const char *ptx, size_t len, const char *name);

/* The sm number of a PTX text's .target ("sm_90a" -> 90, 'a'); 0: none. */
unsigned agent_ptx_target(const char *ptx, size_t len, char *variant);

/*
 * The first module-scope .global/.const variable that kernel F of M uses
 * (its body or a .func it calls, transitively), or NULL.  nvcc's string
 * literals ($str...) are read-only and do not count.  The result points
 * into a static buffer of NAMELEN bytes given by the caller.
 */
const char *agent_ptx_module_var(const struct ptx_module *m,
				 const struct ptx_func *f, char *name,
				 size_t namelen);

/*
 * An `extra` launch array with the parameter appended: copy the buffer of
 * EXTRA (CU_LAUNCH_PARAM_BUFFER_POINTER/SIZE pairs, END) into BUF (CAP
 * bytes), put PARAM (PTX_CTX_BYTES) at OFF, and fill OUT (5 slots) and
 * *SIZE.  -EINVAL for forms we do not understand, -E2BIG if CAP is short.
 */
int agent_extra_build(void **extra, const void *param, size_t off,
		      void *buf, size_t cap, size_t *size, void *out[5]);

/*
 * NVRTC options OPTS (N of them): the real architecture they compile for
 * ("sm_90", the last -arch/--gpu-architecture) when the cubin would lack
 * its PTX, i.e. none asks for line information, debug (-G), LTO IR or
 * OptiX IR; NULL otherwise (a virtual arch, no arch: PTX only).  The
 * agent adds -lineinfo to such a compile (agent_nvrtc.c).
 */
const char *agent_nvrtc_lineinfo_arch(int n, const char *const *opts);

#ifndef AGENT_NO_CUDA
#include <cuda.h>
#include <pthread.h>

/* ---- agent_main.c ---- */

struct agent_state {
	/* what every launch reads, then cfg's counts: one cache line */
	bool active;		/* config read, probes to install */
	bool attached;		/* injected (-p): inline hooks */
	bool prof;		/* GPUTRACE_AGENT_PROF (agent_calls.c) */
	int cuda_told;		/* AGENT_MSG_CUDA sent, once per session */
	volatile int detached;	/* stop instrumenting new launches */
	uint32_t session;	/* -p: attaches so far (agent_launch) */
	pid_t pid;
	struct agent_config cfg;
	bool standalone;	/* no tracer socket: reports on stderr */
	int sock;		/* -1: none */
	int seg_fd;		/* the shared segment, -1: none */
	int seg_regions;	/* whole regions it has */
	uint8_t *seg;		/* this process's region, NULL until claimed */
	size_t seg_len;
	int seg_region;		/* its index, -1: none */
	uint64_t snap_seq;	/* last snapshot number written */
};

extern struct agent_state agent AGENT_HIDDEN;

/* ---- agent_fdkeep.c ---- */

int agent_fd_high(int fd) AGENT_HIDDEN;
int agent_seg_open(const char *env) AGENT_HIDDEN;
bool agent_seg_usable(void) AGENT_HIDDEN;
void agent_seg_forget(void) AGENT_HIDDEN;

/* One report line (instrumented, skipped, failed): tracer or stderr. */
void agent_report(const char *fmt, ...)
	__attribute__((format(printf, 1, 2))) AGENT_HIDDEN;
/* The same, at most once per distinct text. */
void agent_report_once(const char *fmt, ...)
	__attribute__((format(printf, 1, 2))) AGENT_HIDDEN;
/* Verbose only. */
void agent_debug(const char *fmt, ...)
	__attribute__((format(printf, 1, 2))) AGENT_HIDDEN;
int agent_send(uint32_t type, uint64_t seq, const void *payload,
	       size_t len) AGENT_HIDDEN;
void agent_sock_close(void) AGENT_HIDDEN;
/* A launch reached us: register the exit handler (once). */
void agent_saw_cuda_once(void) AGENT_HIDDEN;
static inline void agent_saw_cuda(void)
{
	if (!__atomic_load_n(&agent.cuda_told, __ATOMIC_ACQUIRE))
		agent_saw_cuda_once();
}
/* Claim a region of the segment for this process (sets agent.seg). */
bool agent_seg_claim(void) AGENT_HIDDEN;
/* DONE or BYE for SEQ, naming this process's region if it has one. */
int agent_send_done(uint32_t type, uint64_t seq) AGENT_HIDDEN;
/* The tracer went away or asked us to: originals from now on. */
void agent_detach(const char *why) AGENT_HIDDEN;
/* Connect to the tracer's socket PATH ('@': abstract); fd or -errno. */
int agent_connect_tracer(const char *path) AGENT_HIDDEN;
/* Note the shared segment FD (whole regions); 0 or -errno. */
int agent_segment_fd(int fd) AGENT_HIDDEN;
/* After fork and for -p: pthread_atfork handler, installed once. */
void agent_fork_handler_once(void) AGENT_HIDDEN;

/* ---- agent_inline.c: inline hooks (-p) ---- */
extern struct agent_patches agent_patches AGENT_HIDDEN;
/* Trampolines for every hooked entry point; agent_drv slots point at
 * them.  0, or -errno with the reason in ERR. */
int agent_inline_prepare(char *err, size_t errlen) AGENT_HIDDEN;
/* Write the jumps (every other thread stopped); the number written. */
int agent_inline_arm(void) AGENT_HIDDEN;
/* Original bytes back (hooks stay prepared for the next attach). */
void agent_inline_disarm(void) AGENT_HIDDEN;
/* ---- agent_kernel.c / agent_ctx.c: a new attach starts afresh ---- */
void agent_kernel_reset(void) AGENT_HIDDEN;
void agent_ctx_reset(void) AGENT_HIDDEN;
/* ---- agent_main.c: state of one tracing session, for re-attach ---- */
void agent_session_reset(void) AGENT_HIDDEN;

/* ---- agent_drv.c: the real driver ---- */

typedef CUresult (*agent_launch_fn)(CUfunction, unsigned, unsigned, unsigned,
				    unsigned, unsigned, unsigned, unsigned,
				    CUstream, void **, void **);
typedef CUresult (*agent_launch_ex_fn)(const CUlaunchConfig *, CUfunction,
				       void **, void **);
typedef CUresult (*agent_launch_coop_fn)(CUfunction, unsigned, unsigned,
					 unsigned, unsigned, unsigned,
					 unsigned, unsigned, CUstream, void **);

struct agent_drv {
	/* hooked: the real ones */
	agent_launch_fn launch, launch_ptsz;
	agent_launch_ex_fn launch_ex, launch_ex_ptsz;
	agent_launch_coop_fn launch_coop, launch_coop_ptsz;
	int loaded;		/* agent_drv_init's answer + 1, once known: in
				 * the line of the launch entry points */
	CUresult (*module_load)(CUmodule *, const char *);
	CUresult (*module_load_data)(CUmodule *, const void *);
	CUresult (*module_load_data_ex)(CUmodule *, const void *, unsigned,
					CUjit_option *, void **);
	CUresult (*module_load_fatbin)(CUmodule *, const void *);
	CUresult (*library_load_data)(CUlibrary *, const void *,
				      CUjit_option *, void **, unsigned,
				      CUlibraryOption *, void **, unsigned);
	CUresult (*library_load_file)(CUlibrary *, const char *,
				      CUjit_option *, void **, unsigned,
				      CUlibraryOption *, void **, unsigned);
	CUresult (*module_get_function)(CUfunction *, CUmodule, const char *);
	CUresult (*library_get_kernel)(CUkernel *, CUlibrary, const char *);
	CUresult (*kernel_get_function)(CUfunction *, CUkernel);
	CUresult (*module_unload)(CUmodule);
	CUresult (*library_unload)(CUlibrary);
	CUresult (*get_proc)(const char *, void **, int, cuuint64_t);
	CUresult (*get_proc_v2)(const char *, void **, int, cuuint64_t,
				CUdriverProcAddressQueryResult *);
	CUresult (*ctx_destroy)(CUcontext);
	CUresult (*primary_reset)(CUdevice);
	CUresult (*primary_retain)(CUcontext *, CUdevice);
	CUresult (*primary_release)(CUdevice);
	/* used by the agent */
	CUresult (*ctx_get_current)(CUcontext *);
	CUresult (*ctx_set_current)(CUcontext);
	CUresult (*ctx_push)(CUcontext);
	CUresult (*ctx_pop)(CUcontext *);
	CUresult (*ctx_get_device)(CUdevice *);
	CUresult (*ctx_sync)(void);
	CUresult (*stream_get_ctx)(CUstream, CUcontext *);
	CUresult (*device_get_attribute)(int *, CUdevice_attribute, CUdevice);
	CUresult (*driver_get_version)(int *);
	CUresult (*func_get_name)(const char **, CUfunction);
	CUresult (*kernel_get_name)(const char **, CUkernel);
	CUresult (*func_get_module)(CUmodule *, CUfunction);
	CUresult (*func_get_attribute)(int *, CUfunction_attribute, CUfunction);
	CUresult (*func_set_attribute)(CUfunction, CUfunction_attribute, int);
	CUresult (*occupancy)(int *, CUfunction, int, size_t);
	CUresult (*kernel_get_attribute)(int *, CUfunction_attribute, CUkernel,
					 CUdevice);
	CUresult (*stream_create)(CUstream *, unsigned);
	CUresult (*stream_sync)(CUstream);
	CUresult (*mem_alloc)(CUdeviceptr *, size_t);
	CUresult (*mem_free)(CUdeviceptr);
	/* hooked when probes read device memory (agent_alloc.c) */
	CUresult (*mem_alloc_pitch)(CUdeviceptr *, size_t *, size_t, size_t,
				    unsigned);
	CUresult (*mem_alloc_managed)(CUdeviceptr *, size_t, unsigned);
	CUresult (*mem_alloc_async)(CUdeviceptr *, size_t, CUstream);
	CUresult (*mem_alloc_async_ptsz)(CUdeviceptr *, size_t, CUstream);
	CUresult (*mem_alloc_pool)(CUdeviceptr *, size_t, CUmemoryPool,
				   CUstream);
	CUresult (*mem_alloc_pool_ptsz)(CUdeviceptr *, size_t, CUmemoryPool,
					CUstream);
	CUresult (*mem_free_async)(CUdeviceptr, CUstream);
	CUresult (*mem_free_async_ptsz)(CUdeviceptr, CUstream);
	CUresult (*stream_is_capturing)(CUstream, CUstreamCaptureStatus *);
	CUresult (*htod_async)(CUdeviceptr, const void *, size_t, CUstream);
	CUresult (*dtoh_async)(void *, CUdeviceptr, size_t, CUstream);
	CUresult (*memcpy2d_async)(const CUDA_MEMCPY2D *, CUstream);
	CUresult (*memset_d8_async)(CUdeviceptr, unsigned char, size_t,
				    CUstream);
	/* CUDA 12.4: the kernels of a module or library (agent_prefetch.c) */
	CUresult (*module_func_count)(unsigned *, CUmodule);
	CUresult (*module_enum_funcs)(CUfunction *, unsigned, CUmodule);
	CUresult (*library_get_module)(CUmodule *, CUlibrary);
	CUresult (*library_kernel_count)(unsigned *, CUlibrary);
	CUresult (*library_enum_kernels)(CUkernel *, unsigned, CUlibrary);
	CUresult (*get_error_string)(CUresult, const char **);
	CUresult (*capture_mode)(CUstreamCaptureMode *);
	/* hooked: graph kernel nodes (agent_graph.c) */
	CUresult (*graph_add_kernel)(CUgraphNode *, CUgraph,
				     const CUgraphNode *, size_t,
				     const CUDA_KERNEL_NODE_PARAMS_v1 *);
	CUresult (*graph_add_kernel_v2)(CUgraphNode *, CUgraph,
					const CUgraphNode *, size_t,
					const CUDA_KERNEL_NODE_PARAMS_v2 *);
	CUresult (*kernel_node_get)(CUgraphNode, CUDA_KERNEL_NODE_PARAMS_v1 *);
	CUresult (*kernel_node_get_v2)(CUgraphNode,
				       CUDA_KERNEL_NODE_PARAMS_v2 *);
	CUresult (*kernel_node_set)(CUgraphNode,
				    const CUDA_KERNEL_NODE_PARAMS_v1 *);
	CUresult (*kernel_node_set_v2)(CUgraphNode,
				       const CUDA_KERNEL_NODE_PARAMS_v2 *);
	CUresult (*exec_kernel_node_set)(CUgraphExec, CUgraphNode,
					 const CUDA_KERNEL_NODE_PARAMS_v1 *);
	CUresult (*exec_kernel_node_set_v2)(CUgraphExec, CUgraphNode,
					    const CUDA_KERNEL_NODE_PARAMS_v2 *);
	CUresult (*graph_add_node)(CUgraphNode *, CUgraph, const CUgraphNode *,
				   size_t, CUgraphNodeParams *);
	CUresult (*graph_add_node_v2)(CUgraphNode *, CUgraph,
				      const CUgraphNode *,
				      const CUgraphEdgeData *, size_t,
				      CUgraphNodeParams *);
	CUresult (*node_set)(CUgraphNode, CUgraphNodeParams *);
	CUresult (*exec_node_set)(CUgraphExec, CUgraphNode,
				  CUgraphNodeParams *);
};

extern struct agent_drv agent_drv AGENT_HIDDEN;

/* One hooked driver entry point (agent_hooks.c). */
struct agent_hook {
	const char *sym;	/* exported name: dlsym and -lcuda */
	const char *proc;	/* the name cuGetProcAddress is asked for */
	signed char ptsz;	/* 1: per-thread variant, 0: legacy, -1: n/a */
	int minver, maxver;	/* cudaVersion range of that name's ABI */
	void *wrapper;
	void **real;		/* its slot in agent_drv */
};

extern const struct agent_hook agent_hooks[] AGENT_HIDDEN;
extern const int agent_nhooks AGENT_HIDDEN;
/* The real dlsym, for our own look-ups. */
void *agent_real_dlsym(void *handle, const char *name) AGENT_HIDDEN;

/* In a hook: call the real F or fail as an old driver would. */
#define REAL(f) \
	do { \
		if (agent_drv_ready()) \
			return CUDA_ERROR_NOT_INITIALIZED; \
		if (!agent_drv.f) \
			return CUDA_ERROR_NOT_SUPPORTED; \
	} while (0)

/* Resolve the real driver (libcuda.so.1) once: 0, -ENOENT (no driver). */
int agent_drv_init(void) AGENT_HIDDEN;
/* The same in a launch's hook: once known, one load of a line it reads
 * anyway. */
static inline int agent_drv_ready(void)
{
	int l = __atomic_load_n(&agent_drv.loaded, __ATOMIC_ACQUIRE);

	return l ? l - 1 : agent_drv_init();
}
/* 0 when every entry point instrumentation needs exists, else -errno. */
int agent_drv_usable(void) AGENT_HIDDEN;
/*
 * This thread's stream-capture mode set to relaxed for the agent's own
 * driver calls; returns the mode to give back to agent_capture_restore.
 */
CUstreamCaptureMode agent_capture_relax(void) AGENT_HIDDEN;
void agent_capture_restore(CUstreamCaptureMode m) AGENT_HIDDEN;
/* "CUDA_ERROR_INVALID_VALUE"-like text for R. */
const char *agent_cu_str(CUresult r) AGENT_HIDDEN;
/*
 * What a thread's launch hook reads, in one TLS variable: each access of
 * a shared object's TLS is a __tls_get_addr call, which the hook makes
 * once and hands on (agent_host_launch).
 */
struct agent_thread {
	int in_hook;	/* our own driver calls must not re-enter the hooks */
	pid_t host_pid;	/* agent_host.c's state of this thread, and the */
	int host_gen;	/* process and session it was made for */
	void *host;
};
extern __thread struct agent_thread agent_self AGENT_HIDDEN;
#define agent_in_hook	(agent_self.in_hook)

/* ---- agent_fork.c: a child made by fork() starts afresh ---- */

/* Set in a fork() child the agent follows, until its first driver call. */
extern volatile int agent_fork_pending AGENT_HIDDEN;
/* The socket path the tracer gave (the constructor's), for children. */
void agent_fork_note_sock(const char *path) AGENT_HIDDEN;
/* pthread_atfork's child handler. */
void agent_fork_child(void) AGENT_HIDDEN;
/* The first driver call in a followed child: register with the tracer. */
void agent_fork_wake(void) AGENT_HIDDEN;
/*
 * In the child, right after fork, each file's part: locks as new (the
 * threads that held them are not here), its state dropped without a
 * driver or CUPTI call (the parent's contexts, modules, threads are not
 * this process's); no allocation.
 */
void agent_main_forked(void) AGENT_HIDDEN;
void agent_main_woke(void) AGENT_HIDDEN;
void agent_begin(const char *how) AGENT_HIDDEN;
void agent_seg_forked(bool follow) AGENT_HIDDEN;
void agent_serve_forked(void) AGENT_HIDDEN;
void agent_prefetch_forked(void) AGENT_HIDDEN;
void agent_kernel_forked(void) AGENT_HIDDEN;
void agent_ctx_forked(void) AGENT_HIDDEN;
void agent_image_forked(void) AGENT_HIDDEN;
void agent_alloc_forked(void) AGENT_HIDDEN;
void agent_launch_forked(void) AGENT_HIDDEN;
void agent_host_forked(void) AGENT_HIDDEN;
void agent_jit_forked(void) AGENT_HIDDEN;
void agent_jitguard_forked(void) AGENT_HIDDEN;
void agent_ptxcache_forked(void) AGENT_HIDDEN;
void agent_ptxmemo_forked(void) AGENT_HIDDEN;
void agent_complete_forked(void) AGENT_HIDDEN;
void agent_sample_forked(void) AGENT_HIDDEN;
void agent_timeline_forked(void) AGENT_HIDDEN;

/*
 * Does a hooked call get the agent's bookkeeping?  A fork() child that
 * the agent follows starts its own session here, at its first driver
 * call (agent_fork.c); one it does not follow (-p) has agent.active
 * clear.  No getpid() here, it is a system call with today's glibc and
 * this is on every launch's path.
 */
static inline bool agent_tracing(void)
{
	if (__builtin_expect(agent_fork_pending, 0))
		agent_fork_wake();
	return agent.active && !agent_in_hook;
}

/* ---- agent_alloc.c: device allocations, for probes' reads ---- */

/*
 * Fill TAB (a devrt allocation table: count, pad, {base, end} pairs)
 * with the allocations a probe on device DEV may read; returns its bytes.
 */
size_t agent_alloc_table(int dev, uint64_t *tab) AGENT_HIDDEN;
/* the hooks (exported under the driver's names) */
CUresult gt_mem_alloc(CUdeviceptr *, size_t) __asm__("cuMemAlloc_v2");
CUresult gt_mem_alloc_pitch(CUdeviceptr *, size_t *, size_t, size_t,
			    unsigned) __asm__("cuMemAllocPitch_v2");
CUresult gt_mem_alloc_managed(CUdeviceptr *, size_t, unsigned)
	__asm__("cuMemAllocManaged");
CUresult gt_mem_free(CUdeviceptr) __asm__("cuMemFree_v2");
CUresult gt_mem_alloc_async(CUdeviceptr *, size_t, CUstream)
	__asm__("cuMemAllocAsync");
CUresult gt_mem_alloc_async_ptsz(CUdeviceptr *, size_t, CUstream)
	__asm__("cuMemAllocAsync_ptsz");
CUresult gt_mem_alloc_pool(CUdeviceptr *, size_t, CUmemoryPool, CUstream)
	__asm__("cuMemAllocFromPoolAsync");
CUresult gt_mem_alloc_pool_ptsz(CUdeviceptr *, size_t, CUmemoryPool,
				CUstream) __asm__("cuMemAllocFromPoolAsync_ptsz");
CUresult gt_mem_free_async(CUdeviceptr, CUstream) __asm__("cuMemFreeAsync");
CUresult gt_mem_free_async_ptsz(CUdeviceptr, CUstream)
	__asm__("cuMemFreeAsync_ptsz");

/* ---- agent_image.c: loaded modules ---- */

struct agent_image {
	uintptr_t handle;	/* CUmodule or CUlibrary */
	bool library;
	enum fatbin_image kind;	/* FATBIN (wrappers unwrapped), PTX, ELF */
	uint8_t *data;		/* our copy */
	size_t len;
	struct agent_image *next;
};

/* Record an image loaded as HANDLE from memory (P) or a file (PATH). */
void agent_image_add(uintptr_t handle, bool library, const void *p,
		     const char *path) AGENT_HIDDEN;
struct agent_image *agent_image_find(uintptr_t handle) AGENT_HIDDEN;
void agent_image_remove(uintptr_t handle) AGENT_HIDDEN;
/* An attribute (CUfunction_attribute) of the loaded kernel whose PTX is
 * looked for: its value, or -1 when the driver cannot say. */
typedef int (*agent_attr_fn)(void *arg, int attr);
/*
 * The best PTX for kernel NAME on a device of compute capability SM
 * (highest PTX arch <= SM): from IMG, or with IMG NULL from the fatbins
 * of the process's ELF objects, then from a cubin in anonymous memory
 * (agent_memscan.c) whose resources are ATTR's (may be NULL).  0 and
 * *TEXT (malloc'd), *ARCH; else -ENOENT with the reason in WHY.
 */
int agent_image_ptx(const struct agent_image *img, const char *name,
		    unsigned sm, agent_attr_fn attr, void *attr_arg,
		    char **text, unsigned *arch, char *why,
		    size_t whylen) AGENT_HIDDEN;

/* ---- agent_memscan.c: cubins in the process's anonymous memory ---- */
typedef void (*agent_memscan_fn)(const uint8_t *cubin, size_t len,
				 void *arg);
/*
 * FN (unless NULL) for each cubin carrying usable PTX in .nv_debug_ptx_txt
 * found in the process's anonymous memory that defines kernel NAME (our
 * copies, valid during the call); the number of them.  The memory is
 * scanned when the last scan found none (at most once every 5 s).
 */
int agent_memscan_each(const char *name, agent_memscan_fn fn, void *arg)
	AGENT_HIDDEN;
/* A new attach: what the last scan found may be stale. */
void agent_memscan_reset(void) AGENT_HIDDEN;

/* ---- agent_ptxmemo.c: PTX entries of fatbins, decompressed once ---- */

/*
 * Does PTX entry E of OWNER's fatbins (seen as stored:
 * fatbin_foreach_stored) define kernel NAME?  1 (and with COPY, its text
 * in a new *COPY, trailing NULs left out), 0, or a negative errno with
 * ERR saying why.  OWNER is a key that stays unique while the memo holds
 * it.
 */
int agent_ptxmemo_entry(const void *owner, const struct fatbin_entry *e,
			const char *name, char **copy, char *err,
			size_t errlen) AGENT_HIDDEN;
/* Drop what is kept for OWNER (before it is freed). */
void agent_ptxmemo_forget(const void *owner) AGENT_HIDDEN;

/* ---- agent_ptxcache.c: parsed modules, shared ---- */

/*
 * *M = TEXT parsed, from the cache when the same text was parsed before
 * (0), else -EINVAL with the reason in ERR.  Read-only; give it back
 * with agent_ptx_put.
 */
int agent_ptx_get(const char *text, struct ptx_module **m, char *err,
		  size_t errlen) AGENT_HIDDEN;
void agent_ptx_put(struct ptx_module *m) AGENT_HIDDEN;

/* ---- agent_kernel.c: kernels and their instrumented copies ---- */

struct agent_actx;

/* An instrumented copy of a kernel in one context. */
struct agent_inst {
	struct agent_inst *next;
	CUcontext ctx;
	CUfunction fn;		/* NULL: failed here, launch the original */
	CUmodule mod;
	struct agent_actx *actx;
	int nparams;
	size_t ctx_off;		/* of the launch parameter in a param buffer */
	bool launch_ns;		/* a probe reads it: take the time at launch */
	uint64_t hot[2 * DEVRT_HOT_MAPS];	/* its launches' hot words */
	int occ_told;		/* -v: occupancy reported */
	unsigned dyn_ok;	/* dynamic shared memory known to fit */
};

enum agent_kstate {
	AGENT_K_UNMATCHED,	/* no clause: pass through */
	AGENT_K_MATCHED,
	AGENT_K_FAILED,		/* reported; run the original */
};

/* A CUfunction or CUkernel handle we have seen. */
struct agent_kernel {
	uintptr_t handle;
	bool is_kernel;		/* a CUkernel (context-independent) */
	char *mangled;
	char *pretty;		/* demangled with parameters, or mangled */
	char *base;		/* demangled without parameters */
	uintptr_t owner;	/* module/library handle it came from, or 0 */
	uintptr_t kern;		/* CUfunction from cuKernelGetFunction: its
				 * CUkernel; else 0 */
	enum agent_kstate state;	/* set to FAILED by the thread making
					 * it: read with agent_kernel_matched */
	CUcontext busy;		/* being instrumented for this context */
	int told;		/* -p: KHANDLE 0 not sent, 1 sent, 2 ACKed */
	int id;			/* kernel id (names table index), -1: none */
	uint64_t hbits;		/* agent_host.c: session << 32 | the
				 * cuda:launch:GLOBs it matches */
	struct agent_inst *_Atomic insts;
	struct agent_kernel *all_next;
};

/* Whether K is to be instrumented (its state may change under us). */
static inline bool agent_kernel_matched(const struct agent_kernel *k)
{
	return __atomic_load_n(&k->state, __ATOMIC_RELAXED) ==
	       AGENT_K_MATCHED;
}

/*
 * agent_prefetch.c: K was just instrumented in CTX (its first launch
 * there): queue the matched kernels of its module or library that are
 * not, for worker threads to instrument in parallel.
 */
void agent_prefetch(const struct agent_kernel *k, CUcontext ctx) AGENT_HIDDEN;
/* At load: whether to (on unless GPUTRACE_PREFETCH=0). */
void agent_prefetch_init(void) AGENT_HIDDEN;

/* ---- agent_nvrtc.c: NVRTC cubins that keep their PTX ---- */
/* At load: on unless GPUTRACE_NVRTC_LINEINFO=0. */
void agent_nvrtc_init(void) AGENT_HIDDEN;
/* dlsym(HANDLE, "nvrtcCompileProgram"): our wrapper, or NULL for the
 * real dlsym's answer. */
void *agent_nvrtc_dlsym(void *handle) AGENT_HIDDEN;
/* Whether an NVRTC compile of this process got -lineinfo from us. */
bool agent_nvrtc_added(void) AGENT_HIDDEN;
/* Drop queued work and wait (bounded) for the workers' current jobs:
 * before the exit handler's snapshot, and at detach. */
void agent_prefetch_stop(void) AGENT_HIDDEN;
/* A new attach: queue again. */
void agent_prefetch_resume(void) AGENT_HIDDEN;
/* CTX is being destroyed: its queued work goes, running work ends. */
void agent_prefetch_forget_ctx(CUcontext ctx) AGENT_HIDDEN;
/* Kernels recorded from OWNER that clauses match and that have neither
 * an instance in CTX nor one being made: FN(k, ARG) for each. */
void agent_kernel_each_pending(uintptr_t owner, CUcontext ctx,
			       void (*fn)(struct agent_kernel *, void *),
			       void *arg) AGENT_HIDDEN;

/* NAME demangled (malloc'd), or NULL: not a C++ name, or no demangler. */
char *agent_demangle(const char *name) AGENT_HIDDEN;
/* A handle seen by a hook: name it, decide whether a clause matches. */
void agent_kernel_note(uintptr_t handle, bool is_kernel, const char *name,
		       uintptr_t owner) AGENT_HIDDEN;
/* Like a copy of FROM's record under HANDLE (cuKernelGetFunction). */
void agent_kernel_alias(uintptr_t handle, uintptr_t from) AGENT_HIDDEN;
/* The record of HANDLE; resolves and records unknown ones. */
struct agent_kernel *agent_kernel_get(uintptr_t handle) AGENT_HIDDEN;
/* Forget the kernels of a module/library being unloaded. */
void agent_kernel_forget_owner(uintptr_t owner) AGENT_HIDDEN;
/* Forget the instrumented copies living in a context being destroyed. */
void agent_kernel_forget_ctx(CUcontext ctx) AGENT_HIDDEN;
/* The instrumented copy of K in CTX, made on first sight. */
struct agent_inst *agent_kernel_inst(struct agent_kernel *k,
				     CUcontext ctx) AGENT_HIDDEN;
/*
 * Before a launch of IN with SHMEM bytes of dynamic shared memory: past
 * what the copy allows, raise its limit to the original's (the program
 * raised the original's with cudaFuncSetAttribute, not the copy's).
 */
void agent_inst_fit_smem(const struct agent_kernel *k,
			 struct agent_inst *in, unsigned shmem) AGENT_HIDDEN;

/* ---- agent_jit.c ---- */

/*
 * Module for spliced PTX in the current context, JIT-compiled as a whole
 * program (MAXREG: register cap, 0 for none).  0 and *MOD; else -errno
 * with the reason in ERR.
 */
int agent_jit(const char *ptx, unsigned maxreg, CUmodule *mod, char *err,
	      size_t errlen) AGENT_HIDDEN;

/* ---- agent_jitguard.c: no compile under the compiler's exit ---- */

/* Around each compile: -ESHUTDOWN once the exit has begun. */
int agent_jit_enter(void) AGENT_HIDDEN;
void agent_jit_leave(void) AGENT_HIDDEN;
/* Load the driver's PTX compiler and guard the exit: 0, or -ENOENT. */
int agent_jit_pin(void) AGENT_HIDDEN;

/* ---- agent_ctx.c: device state per CUcontext ---- */

#define AGENT_MAX_KERNELS 1024	/* names table entries per context */

struct agent_actx {
	struct agent_actx *next;
	CUcontext ctx;
	int gpu;		/* device ordinal */
	int sm_count;
	CUstream stream;	/* ours, non-blocking */
	CUdeviceptr base;	/* one allocation for all of it */
	size_t bytes;
	CUdeviceptr d_ctx, d_rings, d_names;
	struct devrt_map_desc *descs;	/* completed, device bases */
	uint64_t hot[2 * DEVRT_HOT_MAPS];	/* launch parameter's hot words */
	CUdeviceptr d_scratch;	/* updates of kernels without a slot */
	CUdeviceptr d_allocs;	/* allocation tables (cfg.reads), or 0 */
	uint32_t alloc_active;	/* the table probes read now */
	uint16_t (*kslot)[AGENT_MAX_KERNELS];	/* per hot map: kernel id ->
						 * slot + 1 (DEVRT_F_KERNEL) */
	uint32_t kused[DEVRT_HOT_MAPS];
	uint64_t *tails;	/* per ring: bytes consumed */
	struct devrt_ring_hdr *hdrs;	/* host copies of the ring headers */
	uint8_t *rbuf;		/* one ring's host copy */
	uint64_t drops;		/* printf records lost (device count) */
	uint8_t *saved;		/* maps as of the context's end, or NULL */
	int64_t clock_off;	/* %globaltimer - CLOCK_REALTIME, lower bound */
	bool dead;		/* destroyed: only `saved` is left */
	bool failed;		/* setup failed: instrument nothing here */
};

#define AGENT_NAME_BYTES DEVRT_NAME_BYTES

extern pthread_mutex_t agent_ctx_lock AGENT_HIDDEN;

/* The device state of CTX (current in this thread), made on first use. */
struct agent_actx *agent_ctx_get(CUcontext ctx, char *err,
				 size_t errlen) AGENT_HIDDEN;
/* Write the key of kernel ID (mangled NAME, gpucode/kname.h) into every
 * context's table: what `kernel` reads on the device. */
void agent_ctx_name(int id, const char *name) AGENT_HIDDEN;
/* The context is going away: save its maps, drain printf. */
void agent_ctx_retire(CUcontext ctx) AGENT_HIDDEN;
void agent_ctx_retire_device(CUdevice dev) AGENT_HIDDEN;
/* Wait for all work in every context (at exit only). */
void agent_ctx_sync_all(void) AGENT_HIDDEN;
void agent_ctx_settle(void) AGENT_HIDDEN;
/* Set every context's stop flag. */
void agent_ctx_stop_all(void) AGENT_HIDDEN;
/*
 * HOT = A's hot words, with the slot of kernel ID (mangled NAME) in each
 * map kept per kernel (DEVRT_F_KERNEL), claimed and written into every
 * shard the first time.  A kernel that gets no slot (the map is full)
 * updates a scratch line nobody reads; reported once.
 */
void agent_ctx_kernel_hot(struct agent_actx *a, int id, const char *name,
			  uint64_t hot[2 * DEVRT_HOT_MAPS]) AGENT_HIDDEN;
/* The allocations changed: every context's table written again. */
void agent_ctx_push_allocs(void) AGENT_HIDDEN;
/* Say how many device reads found no allocation (exit). */
void agent_ctx_report_reads(void) AGENT_HIDDEN;
/* Copy every map into the segment as snapshot SEQ; 0 or -errno. */
int agent_ctx_snapshot(uint64_t seq, bool final) AGENT_HIDDEN;
/* Drain the printf rings: to the tracer, or stderr standalone. */
void agent_ctx_drain(void) AGENT_HIDDEN;
/* Standalone: the maps' totals on stderr. */
void agent_ctx_print_maps(void) AGENT_HIDDEN;

/* ---- agent_complete.c: cuda:complete through CUPTI ---- */
/* Kernel records on, when the configuration has cuda:complete clauses. */
void agent_complete_start(void) AGENT_HIDDEN;
/* Hand completed records to the tracer; FINAL: all of them (at exit). */
void agent_complete_flush(bool final) AGENT_HIDDEN;
/* Records off (detach). */
void agent_complete_stop(void) AGENT_HIDDEN;
/* --timeline: CUPTI on at the first driver look-up (agent_hooks.c). */
void agent_timeline_early(void) AGENT_HIDDEN;

/* ---- agent_timeline.c: --timeline FILE from CUPTI's records ---- */
bool agent_timeline_on(void) AGENT_HIDDEN;
int agent_timeline_open(void *cupti_get_callback_name) AGENT_HIDDEN;
/* REC: a CUpti_Activity of any kind */
void agent_timeline_record(const void *rec) AGENT_HIDDEN;
void agent_timeline_sync(void) AGENT_HIDDEN;
void agent_timeline_close(void) AGENT_HIDDEN;
/* libcupti, opened as the target's CUDA install has it; NULL: none. */
void *agent_cupti_open(void) AGENT_HIDDEN;
/* Bit i: GLOBS[i] matches MANGLED or its demangled base name (N <= 64). */
/* agent_dmgl.c: MANGLED's base name as the tracer demangles it, or NULL */
char *agent_dmgl_base(const char *mangled) AGENT_HIDDEN;
uint64_t agent_glob_bits(const char *mangled, char *const *globs, int n)
	AGENT_HIDDEN;

/* ---- agent_sample.c: gpu:sample, CUPTI's PC sampling ---- */
/* Open CUPTI before the exit handler is registered (its handlers then
 * run after ours), when the configuration has gpu:sample clauses. */
void agent_sample_load(void) AGENT_HIDDEN;
/* A launch in context CTX: PC sampling on there, the first time. */
void agent_sample_ctx(CUcontext ctx) AGENT_HIDDEN;
/* The same for the current context (a launch, a module load: CUPTI
 * then sees the module's load); nothing without gpu:sample clauses
 * (tested inline: agent_state's line, which a launch reads anyway). */
void agent_sample_current(void) AGENT_HIDDEN;
static inline void agent_sample_here(void)
{
	if (agent.cfg.nsamples)
		agent_sample_current();
}
/* Hand the samples collected so far to the tracer (the agent's thread). */
void agent_sample_flush(void) AGENT_HIDDEN;
/* Context CTX (NULL: every context of device DEV) goes away: its last
 * samples to the tracer, sampling off there. */
void agent_sample_retire(CUcontext ctx, int dev) AGENT_HIDDEN;
/* Sampling off in every context, the last samples to the tracer (detach,
 * exit), drops reported. */
void agent_sample_stop(void) AGENT_HIDDEN;
/* The same for a detach from the agent's thread: made by the
 * application's thread at its next launch if one comes within 2 s. */
void agent_sample_stop_async(void) AGENT_HIDDEN;
/* A new -p session: sampling may start again. */
void agent_sample_attach(void) AGENT_HIDDEN;

/* ---- agent_serve.c: the background thread ---- */

/* -p: send K's handle and name, wait (bounded) for the tracer's ACK. */
void agent_tell_handle(struct agent_kernel *k) AGENT_HIDDEN;

void agent_serve_start(void) AGENT_HIDDEN;
void agent_serve_stop(void) AGENT_HIDDEN;
void agent_serve_join(void) AGENT_HIDDEN;

/* ---- agent_calls.c: -v, calls of hooked entry points per run ---- */
enum agent_call {
	AGENT_C_LAUNCH, AGENT_C_MODULE_GET_FUNCTION,
	AGENT_C_LIBRARY_GET_KERNEL, AGENT_C_KERNEL_GET_FUNCTION,
	AGENT_C_GET_PROC, AGENT_C_END_
};
extern uint64_t agent_calls[AGENT_C_END_] AGENT_HIDDEN;
static inline void agent_call_seen(enum agent_call c)
{
	if (__builtin_expect(agent.cfg.verbose, 0))
		__atomic_add_fetch(&agent_calls[c], 1, __ATOMIC_RELAXED);
}
/* At exit, -v: the counts. */
void agent_calls_report(void) AGENT_HIDDEN;

/*
 * GPUTRACE_AGENT_PROF=1 with -v: the TSC cycles a launch without device
 * clauses spends in the hook before the driver's call and in that call,
 * said at exit (docs/hostpath.md, "Cost").  For benchmarks: what a
 * launch rate cannot tell apart, the hook's own time from the driver's.
 */
void agent_prof_init(void) AGENT_HIDDEN;
void agent_prof_add(uint64_t hook, uint64_t drv) AGENT_HIDDEN;

/* ---- agent_launch.c ---- */

enum agent_lform { AGENT_L_KERNEL, AGENT_L_EX, AGENT_L_COOP };

struct agent_launch {
	enum agent_lform form;
	bool ptsz;
	CUfunction f;
	/* every form: cuLaunchKernelEx's come from its config */
	unsigned gx, gy, gz, bx, by, bz, shmem;
	CUstream stream;
	const CUlaunchConfig *config;
	void **params;
	void **extra;
};

CUresult agent_launch(const struct agent_launch *l) AGENT_HIDDEN;

/* ---- agent_host.c: host clauses run here (docs/hostpath.md) ---- */

/* After the config is read: verify the host programs. */
void agent_host_init(void) AGENT_HIDDEN;
/* Send host clauses' events (printf records) and their lost count. */
void agent_host_drain(void) AGENT_HIDDEN;
/* -p attached again: the last session's programs and maps go. */
void agent_host_reset(void) AGENT_HIDDEN;
/* At a launch's hook, before the driver: run the entry's programs. */
void agent_host_launch(const struct agent_launch *l,
		       struct agent_thread *th) AGENT_HIDDEN;
/* Images the next snapshot writes, and writing them (images J.. of H,
 * at most N, from *OFF on); 0 or -ENOSPC. */
uint32_t agent_host_nimages(void) AGENT_HIDDEN;
int agent_host_write(struct agent_seg_hdr *h, uint32_t *j, uint32_t n,
		     size_t *off) AGENT_HIDDEN;
/* The launch parameter for one launch (or graph node) of K's copy IN. */
void agent_param_fill(struct agent_launch_param *p,
		      const struct agent_kernel *k,
		      const struct agent_inst *in) AGENT_HIDDEN;
/*
 * The N kernel parameters of PARAMS with P appended: in SMALL (NSMALL
 * slots) when it fits, else malloc'd; NULL when out of memory.
 */
void **agent_params_append(void **params, int n, void *p, void **small,
			   size_t nsmall) AGENT_HIDDEN;

/* ---- agent_graph.c: kernel nodes, exported under the driver's names ---- */
#define AGENT_EXPORT __attribute__((visibility("default")))
AGENT_EXPORT CUresult gt_graph_add_kernel(CUgraphNode *, CUgraph,
		const CUgraphNode *, size_t, const CUDA_KERNEL_NODE_PARAMS_v1 *)
	__asm__("cuGraphAddKernelNode");
AGENT_EXPORT CUresult gt_graph_add_kernel_v2(CUgraphNode *, CUgraph,
		const CUgraphNode *, size_t, const CUDA_KERNEL_NODE_PARAMS_v2 *)
	__asm__("cuGraphAddKernelNode_v2");
AGENT_EXPORT CUresult gt_kernel_node_get(CUgraphNode,
		CUDA_KERNEL_NODE_PARAMS_v1 *)
	__asm__("cuGraphKernelNodeGetParams");
AGENT_EXPORT CUresult gt_kernel_node_get_v2(CUgraphNode,
		CUDA_KERNEL_NODE_PARAMS_v2 *)
	__asm__("cuGraphKernelNodeGetParams_v2");
AGENT_EXPORT CUresult gt_kernel_node_set(CUgraphNode,
		const CUDA_KERNEL_NODE_PARAMS_v1 *)
	__asm__("cuGraphKernelNodeSetParams");
AGENT_EXPORT CUresult gt_kernel_node_set_v2(CUgraphNode,
		const CUDA_KERNEL_NODE_PARAMS_v2 *)
	__asm__("cuGraphKernelNodeSetParams_v2");
AGENT_EXPORT CUresult gt_exec_kernel_node_set(CUgraphExec, CUgraphNode,
		const CUDA_KERNEL_NODE_PARAMS_v1 *)
	__asm__("cuGraphExecKernelNodeSetParams");
AGENT_EXPORT CUresult gt_exec_kernel_node_set_v2(CUgraphExec, CUgraphNode,
		const CUDA_KERNEL_NODE_PARAMS_v2 *)
	__asm__("cuGraphExecKernelNodeSetParams_v2");
AGENT_EXPORT CUresult gt_graph_add_node(CUgraphNode *, CUgraph,
		const CUgraphNode *, size_t, CUgraphNodeParams *)
	__asm__("cuGraphAddNode");
AGENT_EXPORT CUresult gt_graph_add_node_v2(CUgraphNode *, CUgraph,
		const CUgraphNode *, const CUgraphEdgeData *, size_t,
		CUgraphNodeParams *)
	__asm__("cuGraphAddNode_v2");
AGENT_EXPORT CUresult gt_node_set(CUgraphNode, CUgraphNodeParams *)
	__asm__("cuGraphNodeSetParams");
AGENT_EXPORT CUresult gt_exec_node_set(CUgraphExec, CUgraphNode,
		CUgraphNodeParams *)
	__asm__("cuGraphExecNodeSetParams");
#endif /* AGENT_NO_CUDA */

#endif
