// SPDX-License-Identifier: MIT
/*
 * How the agent sees the CUDA driver's calls (docs/agent.md, "Hooks").
 *
 *  1. Programs linked with -lcuda call the driver's exported functions:
 *     we export the same names, and LD_PRELOAD puts us first.
 *  2. The CUDA runtime instead opens libcuda.so.1 and looks up
 *     cuGetProcAddress with dlsym, then asks it for every other entry
 *     point; symbol interposition never sees those calls.  So we export
 *     dlsym too: a look-up of a hooked name that would give libcuda's
 *     function gives our wrapper; everything else is a tail jump to the
 *     real dlsym, so RTLD_NEXT still means "next after the caller".
 *  3. Our cuGetProcAddress wrappers call the real one and swap a hooked
 *     function's pointer for the matching wrapper.
 */
#ifdef GT_AGENT_SO
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <string.h>
#include <unistd.h>

#include "runtime/agent/agent_hostcall.h"
#include "runtime/agent/agent_priv.h"

#define EXPORT __attribute__((visibility("default")))

/* ---------------------------------------------------------- dlsym -- */

AGENT_HIDDEN void *agent_dlsym_next;	/* the real dlsym */
static pthread_once_t dlsym_once = PTHREAD_ONCE_INIT;

static void dlsym_load(void)
{
	void *p = dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.34");

	if (!p)
		p = dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.2.5");
	/* dlopened (-p): libc comes before us, RTLD_NEXT finds nothing;
	 * the global scope does not hold us (RTLD_LOCAL) */
	if (!p)
		p = dlvsym(RTLD_DEFAULT, "dlsym", "GLIBC_2.34");
	if (!p)
		p = dlvsym(RTLD_DEFAULT, "dlsym", "GLIBC_2.2.5");
	agent_dlsym_next = p;
}

void *agent_real_dlsym(void *handle, const char *name)
{
	pthread_once(&dlsym_once, dlsym_load);
	return ((void *(*)(void *, const char *))agent_dlsym_next)(handle,
								    name);
}

static const struct agent_hook *hook_by_sym(const char *name)
{
	for (int i = 0; i < agent_nhooks; i++)
		if (!strcmp(agent_hooks[i].sym, name))
			return &agent_hooks[i];
	return NULL;
}

/*
 * Our wrapper for dlsym(HANDLE, NAME), or NULL to let the real dlsym
 * answer (the trampoline below jumps there with the caller's frame).
 */
AGENT_HIDDEN void *agent_dlsym_hook(void *handle, const char *name)
{
	const struct agent_hook *h;
	void *p;

	pthread_once(&dlsym_once, dlsym_load);
	if (name && name[0] == 'n' && !strcmp(name, "nvrtcCompileProgram"))
		return agent_nvrtc_dlsym(handle);
	if (!name || name[0] != 'c' || name[1] != 'u')
		return NULL;
	if (agent_fork_pending)
		agent_fork_wake();	/* a fork() child's first driver call */
	if (!agent.active || agent.pid != getpid())
		return NULL;
	h = hook_by_sym(name);
	if (!h || agent_drv_init() || !*h->real)
		return NULL;
	p = handle == RTLD_NEXT ? *h->real : agent_real_dlsym(handle, name);
	if (p && (p == *h->real || p == h->wrapper)) {
		agent_debug("dlsym(%s): hooked", name);
		return h->wrapper;
	}
	return NULL;
}

/* dlsym itself: ask the hook, else tail-jump to the real one. */
__asm__(".text\n"
	".globl dlsym\n"
	".type dlsym, @function\n"
	"dlsym:\n"
	"	.cfi_startproc\n"
	"	pushq %rdi\n"
	"	.cfi_adjust_cfa_offset 8\n"
	"	pushq %rsi\n"
	"	.cfi_adjust_cfa_offset 8\n"
	"	subq $8, %rsp\n"
	"	.cfi_adjust_cfa_offset 8\n"
	"	call agent_dlsym_hook\n"
	"	addq $8, %rsp\n"
	"	.cfi_adjust_cfa_offset -8\n"
	"	popq %rsi\n"
	"	.cfi_adjust_cfa_offset -8\n"
	"	popq %rdi\n"
	"	.cfi_adjust_cfa_offset -8\n"
	"	testq %rax, %rax\n"
	"	jz 1f\n"
	"	ret\n"
	"1:	jmpq *agent_dlsym_next(%rip)\n"
	"	.cfi_endproc\n"
	".size dlsym, .-dlsym\n");

/* ------------------------------------------------- cuGetProcAddress -- */

/* The wrapper to hand out for SYM, whose real address P was returned. */
static void *swap(const char *sym, void *p, int ver, cuuint64_t flags)
{
	bool per_thread = flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM;

	if (agent_fork_pending)
		agent_fork_wake();
	if (!p || !sym || !agent.active || agent.pid != getpid())
		return p;
	for (int i = 0; i < agent_nhooks; i++)
		if (*agent_hooks[i].real == p || agent_hooks[i].wrapper == p)
			return agent_hooks[i].wrapper;
	/* an address we do not know (an internal entry): go by name */
	for (int i = 0; i < agent_nhooks; i++) {
		const struct agent_hook *h = &agent_hooks[i];

		if (strcmp(h->proc, sym) || ver < h->minver ||
		    ver >= h->maxver || !*h->real ||
		    (h->ptsz >= 0 && h->ptsz != per_thread))
			continue;
		agent_debug("cuGetProcAddress(%s, %d): using %s", sym, ver,
			    h->sym);
		return h->wrapper;
	}
	return p;
}

EXPORT CUresult gt_get_proc(const char *, void **, int, cuuint64_t)
	__asm__("cuGetProcAddress");
CUresult gt_get_proc(const char *sym, void **pfn, int ver, cuuint64_t flags)
{
	CUresult r;

	if (agent_drv_init() || !agent_drv.get_proc)
		return CUDA_ERROR_NOT_INITIALIZED;
	agent_call_seen(AGENT_C_GET_PROC);
	r = agent_drv.get_proc(sym, pfn, ver, flags);
	if (r == CUDA_SUCCESS && pfn)
		*pfn = swap(sym, *pfn, ver, flags);
	agent_timeline_early();
	return r;
}

EXPORT CUresult gt_get_proc_v2(const char *, void **, int, cuuint64_t,
			       CUdriverProcAddressQueryResult *)
	__asm__("cuGetProcAddress_v2");
CUresult gt_get_proc_v2(const char *sym, void **pfn, int ver,
			cuuint64_t flags, CUdriverProcAddressQueryResult *st)
{
	CUresult r;

	if (agent_drv_init() || !agent_drv.get_proc_v2)
		return CUDA_ERROR_NOT_INITIALIZED;
	agent_call_seen(AGENT_C_GET_PROC);
	r = agent_drv.get_proc_v2(sym, pfn, ver, flags, st);
	if (r == CUDA_SUCCESS && pfn)
		*pfn = swap(sym, *pfn, ver, flags);
	agent_timeline_early();
	return r;
}

/* ---------------------------------------------------------- loads -- */

EXPORT CUresult gt_module_load(CUmodule *, const char *)
	__asm__("cuModuleLoad");
CUresult gt_module_load(CUmodule *m, const char *path)
{
	CUresult r;

	REAL(module_load);
	agent_sample_here();
	r = agent_drv.module_load(m, path);
	if (r == CUDA_SUCCESS && m && agent_tracing())
		agent_image_add((uintptr_t)*m, false, NULL, path);
	return r;
}

EXPORT CUresult gt_module_load_data(CUmodule *, const void *)
	__asm__("cuModuleLoadData");
CUresult gt_module_load_data(CUmodule *m, const void *image)
{
	CUresult r;

	REAL(module_load_data);
	agent_sample_here();
	r = agent_drv.module_load_data(m, image);
	if (r == CUDA_SUCCESS && m && agent_tracing())
		agent_image_add((uintptr_t)*m, false, image, NULL);
	return r;
}

EXPORT CUresult gt_module_load_data_ex(CUmodule *, const void *, unsigned,
				       CUjit_option *, void **)
	__asm__("cuModuleLoadDataEx");
CUresult gt_module_load_data_ex(CUmodule *m, const void *image, unsigned n,
				CUjit_option *o, void **v)
{
	CUresult r;

	REAL(module_load_data_ex);
	agent_sample_here();
	r = agent_drv.module_load_data_ex(m, image, n, o, v);
	if (r == CUDA_SUCCESS && m && agent_tracing())
		agent_image_add((uintptr_t)*m, false, image, NULL);
	return r;
}

EXPORT CUresult gt_module_load_fatbin(CUmodule *, const void *)
	__asm__("cuModuleLoadFatBinary");
CUresult gt_module_load_fatbin(CUmodule *m, const void *image)
{
	CUresult r;

	REAL(module_load_fatbin);
	agent_sample_here();
	r = agent_drv.module_load_fatbin(m, image);
	if (r == CUDA_SUCCESS && m && agent_tracing())
		agent_image_add((uintptr_t)*m, false, image, NULL);
	return r;
}

EXPORT CUresult gt_library_load_data(CUlibrary *, const void *,
				     CUjit_option *, void **, unsigned,
				     CUlibraryOption *, void **, unsigned)
	__asm__("cuLibraryLoadData");
CUresult gt_library_load_data(CUlibrary *l, const void *code,
			      CUjit_option *jo, void **jv, unsigned jn,
			      CUlibraryOption *lo, void **lv, unsigned ln)
{
	CUresult r;

	REAL(library_load_data);
	r = agent_drv.library_load_data(l, code, jo, jv, jn, lo, lv, ln);
	if (r == CUDA_SUCCESS && l && agent_tracing())
		agent_image_add((uintptr_t)*l, true, code, NULL);
	return r;
}

EXPORT CUresult gt_library_load_file(CUlibrary *, const char *,
				     CUjit_option *, void **, unsigned,
				     CUlibraryOption *, void **, unsigned)
	__asm__("cuLibraryLoadFromFile");
CUresult gt_library_load_file(CUlibrary *l, const char *path,
			      CUjit_option *jo, void **jv, unsigned jn,
			      CUlibraryOption *lo, void **lv, unsigned ln)
{
	CUresult r;

	REAL(library_load_file);
	r = agent_drv.library_load_file(l, path, jo, jv, jn, lo, lv, ln);
	if (r == CUDA_SUCCESS && l && agent_tracing())
		agent_image_add((uintptr_t)*l, true, NULL, path);
	return r;
}

EXPORT CUresult gt_module_get_function(CUfunction *, CUmodule, const char *)
	__asm__("cuModuleGetFunction");
CUresult gt_module_get_function(CUfunction *f, CUmodule m, const char *name)
{
	CUresult r;

	REAL(module_get_function);
	agent_call_seen(AGENT_C_MODULE_GET_FUNCTION);
	r = agent_drv.module_get_function(f, m, name);
	if (r == CUDA_SUCCESS && f && name && agent_tracing())
		agent_kernel_note((uintptr_t)*f, false, name, (uintptr_t)m);
	return r;
}

EXPORT CUresult gt_library_get_kernel(CUkernel *, CUlibrary, const char *)
	__asm__("cuLibraryGetKernel");
CUresult gt_library_get_kernel(CUkernel *k, CUlibrary l, const char *name)
{
	CUresult r;

	REAL(library_get_kernel);
	agent_call_seen(AGENT_C_LIBRARY_GET_KERNEL);
	r = agent_drv.library_get_kernel(k, l, name);
	if (r == CUDA_SUCCESS && k && name && agent_tracing())
		agent_kernel_note((uintptr_t)*k, true, name, (uintptr_t)l);
	return r;
}

EXPORT CUresult gt_kernel_get_function(CUfunction *, CUkernel)
	__asm__("cuKernelGetFunction");
CUresult gt_kernel_get_function(CUfunction *f, CUkernel k)
{
	CUresult r;

	REAL(kernel_get_function);
	agent_call_seen(AGENT_C_KERNEL_GET_FUNCTION);
	r = agent_drv.kernel_get_function(f, k);
	if (r == CUDA_SUCCESS && f && agent_tracing())
		agent_kernel_alias((uintptr_t)*f, (uintptr_t)k);
	return r;
}

EXPORT CUresult gt_module_unload(CUmodule) __asm__("cuModuleUnload");
CUresult gt_module_unload(CUmodule m)
{
	REAL(module_unload);
	if (agent_tracing()) {
		agent_kernel_forget_owner((uintptr_t)m);
		agent_image_remove((uintptr_t)m);
	}
	return agent_drv.module_unload(m);
}

EXPORT CUresult gt_library_unload(CUlibrary) __asm__("cuLibraryUnload");
CUresult gt_library_unload(CUlibrary l)
{
	REAL(library_unload);
	if (agent_tracing()) {
		agent_kernel_forget_owner((uintptr_t)l);
		agent_image_remove((uintptr_t)l);
	}
	return agent_drv.library_unload(l);
}

/* A context going away takes our maps with it: save them first. */
EXPORT CUresult gt_ctx_destroy(CUcontext) __asm__("cuCtxDestroy_v2");
CUresult gt_ctx_destroy(CUcontext c)
{
	REAL(ctx_destroy);
	if (agent_tracing()) {
		agent_ctx_retire(c);
		agent_sample_retire(c, -1);
	}
	return agent_drv.ctx_destroy(c);
}

EXPORT CUresult gt_primary_reset(CUdevice) __asm__("cuDevicePrimaryCtxReset_v2");
CUresult gt_primary_reset(CUdevice d)
{
	REAL(primary_reset);
	if (agent_tracing()) {
		agent_ctx_retire_device(d);
		agent_sample_retire(NULL, (int)d);
	}
	return agent_drv.primary_reset(d);
}

/* ------------------------------------------------------- launches -- */

#define LAUNCH_ARGS CUfunction f, unsigned gx, unsigned gy, unsigned gz, \
	unsigned bx, unsigned by, unsigned bz, unsigned shmem, CUstream s

EXPORT CUresult gt_launch(LAUNCH_ARGS, void **p, void **x)
	__asm__("cuLaunchKernel");
AGENT_HOT CUresult gt_launch(LAUNCH_ARGS, void **p, void **x)
{
	struct agent_launch l = { AGENT_L_KERNEL, false, f, gx, gy, gz, bx, by,
				  bz, shmem, s, NULL, p, x };

	REAL(launch);
	return agent_launch(&l);
}

EXPORT CUresult gt_launch_ptsz(LAUNCH_ARGS, void **p, void **x)
	__asm__("cuLaunchKernel_ptsz");
AGENT_HOT CUresult gt_launch_ptsz(LAUNCH_ARGS, void **p, void **x)
{
	struct agent_launch l = { AGENT_L_KERNEL, true, f, gx, gy, gz, bx, by,
				  bz, shmem, s, NULL, p, x };

	REAL(launch_ptsz);
	return agent_launch(&l);
}

EXPORT CUresult gt_launch_coop(LAUNCH_ARGS, void **p)
	__asm__("cuLaunchCooperativeKernel");
AGENT_HOT CUresult gt_launch_coop(LAUNCH_ARGS, void **p)
{
	struct agent_launch l = { AGENT_L_COOP, false, f, gx, gy, gz, bx, by,
				  bz, shmem, s, NULL, p, NULL };

	REAL(launch_coop);
	return agent_launch(&l);
}

EXPORT CUresult gt_launch_coop_ptsz(LAUNCH_ARGS, void **p)
	__asm__("cuLaunchCooperativeKernel_ptsz");
AGENT_HOT CUresult gt_launch_coop_ptsz(LAUNCH_ARGS, void **p)
{
	struct agent_launch l = { AGENT_L_COOP, true, f, gx, gy, gz, bx, by,
				  bz, shmem, s, NULL, p, NULL };

	REAL(launch_coop_ptsz);
	return agent_launch(&l);
}

/* A cuLaunchKernelEx launch: its geometry, shared memory and stream
 * from the config, where the other forms have them as arguments. */
static AGENT_HOT struct agent_launch launch_ex(const CUlaunchConfig *c,
					       CUfunction f, void **p,
					       void **x, bool ptsz)
{
	struct agent_launch l = { .form = AGENT_L_EX, .ptsz = ptsz, .f = f,
				  .config = c, .params = p, .extra = x };

	if (c) {
		l.gx = c->gridDimX;
		l.gy = c->gridDimY;
		l.gz = c->gridDimZ;
		l.bx = c->blockDimX;
		l.by = c->blockDimY;
		l.bz = c->blockDimZ;
		l.shmem = c->sharedMemBytes;
		l.stream = c->hStream;
	}
	return l;
}

EXPORT CUresult gt_launch_ex(const CUlaunchConfig *, CUfunction, void **,
			     void **) __asm__("cuLaunchKernelEx");
AGENT_HOT CUresult gt_launch_ex(const CUlaunchConfig *c, CUfunction f,
				void **p, void **x)
{
	struct agent_launch l = launch_ex(c, f, p, x, false);

	REAL(launch_ex);
	return agent_launch(&l);
}

EXPORT CUresult gt_launch_ex_ptsz(const CUlaunchConfig *, CUfunction,
				  void **, void **)
	__asm__("cuLaunchKernelEx_ptsz");
AGENT_HOT CUresult gt_launch_ex_ptsz(const CUlaunchConfig *c, CUfunction f,
				     void **p, void **x)
{
	struct agent_launch l = launch_ex(c, f, p, x, true);

	REAL(launch_ex_ptsz);
	return agent_launch(&l);
}

/* ---------------------------------------------------------- table -- */

#define HV(sym, proc, ptsz, lo, hi, w, f) \
	{ sym, proc, ptsz, lo, hi, (void *)w, (void **)&agent_drv.f }
#define H(sym, proc, ptsz, w, f) HV(sym, proc, ptsz, 0, 1 << 30, w, f)

const struct agent_hook agent_hooks[] = {
	H("cuLaunchKernel", "cuLaunchKernel", 0, gt_launch, launch),
	H("cuLaunchKernel_ptsz", "cuLaunchKernel", 1, gt_launch_ptsz,
	  launch_ptsz),
	H("cuLaunchKernelEx", "cuLaunchKernelEx", 0, gt_launch_ex,
	  launch_ex),
	H("cuLaunchKernelEx_ptsz", "cuLaunchKernelEx", 1,
	  gt_launch_ex_ptsz, launch_ex_ptsz),
	H("cuLaunchCooperativeKernel", "cuLaunchCooperativeKernel", 0,
	  gt_launch_coop, launch_coop),
	H("cuLaunchCooperativeKernel_ptsz", "cuLaunchCooperativeKernel", 1,
	  gt_launch_coop_ptsz, launch_coop_ptsz),
	H("cuModuleLoad", "cuModuleLoad", -1, gt_module_load,
	  module_load),
	H("cuModuleLoadData", "cuModuleLoadData", -1,
	  gt_module_load_data, module_load_data),
	H("cuModuleLoadDataEx", "cuModuleLoadDataEx", -1,
	  gt_module_load_data_ex, module_load_data_ex),
	H("cuModuleLoadFatBinary", "cuModuleLoadFatBinary", -1,
	  gt_module_load_fatbin, module_load_fatbin),
	H("cuLibraryLoadData", "cuLibraryLoadData", -1,
	  gt_library_load_data, library_load_data),
	H("cuLibraryLoadFromFile", "cuLibraryLoadFromFile", -1,
	  gt_library_load_file, library_load_file),
	H("cuModuleGetFunction", "cuModuleGetFunction", -1,
	  gt_module_get_function, module_get_function),
	H("cuLibraryGetKernel", "cuLibraryGetKernel", -1,
	  gt_library_get_kernel, library_get_kernel),
	H("cuKernelGetFunction", "cuKernelGetFunction", -1,
	  gt_kernel_get_function, kernel_get_function),
	H("cuModuleUnload", "cuModuleUnload", -1, gt_module_unload,
	  module_unload),
	H("cuLibraryUnload", "cuLibraryUnload", -1, gt_library_unload,
	  library_unload),
	/* cuGetProcAddress's ABI changed in 12.0 (the status argument) */
	HV("cuGetProcAddress", "cuGetProcAddress", -1, 0, 12000, gt_get_proc,
	   get_proc),
	HV("cuGetProcAddress_v2", "cuGetProcAddress", -1, 12000, 1 << 30,
	   gt_get_proc_v2, get_proc_v2),
	HV("cuCtxDestroy_v2", "cuCtxDestroy", -1, 4000, 1 << 30,
	   gt_ctx_destroy, ctx_destroy),
	HV("cuDevicePrimaryCtxReset_v2", "cuDevicePrimaryCtxReset", -1, 11000,
	   1 << 30, gt_primary_reset, primary_reset),
	/* graph kernel nodes: the _v2 structs (kern, ctx) came with 12.0 */
	HV("cuGraphAddKernelNode", "cuGraphAddKernelNode", -1, 0, 12000,
	   gt_graph_add_kernel, graph_add_kernel),
	HV("cuGraphAddKernelNode_v2", "cuGraphAddKernelNode", -1, 12000,
	   1 << 30, gt_graph_add_kernel_v2, graph_add_kernel_v2),
	HV("cuGraphKernelNodeGetParams", "cuGraphKernelNodeGetParams", -1, 0,
	   12000, gt_kernel_node_get, kernel_node_get),
	HV("cuGraphKernelNodeGetParams_v2", "cuGraphKernelNodeGetParams", -1,
	   12000, 1 << 30, gt_kernel_node_get_v2, kernel_node_get_v2),
	HV("cuGraphKernelNodeSetParams", "cuGraphKernelNodeSetParams", -1, 0,
	   12000, gt_kernel_node_set, kernel_node_set),
	HV("cuGraphKernelNodeSetParams_v2", "cuGraphKernelNodeSetParams", -1,
	   12000, 1 << 30, gt_kernel_node_set_v2, kernel_node_set_v2),
	HV("cuGraphExecKernelNodeSetParams", "cuGraphExecKernelNodeSetParams",
	   -1, 0, 12000, gt_exec_kernel_node_set, exec_kernel_node_set),
	HV("cuGraphExecKernelNodeSetParams_v2",
	   "cuGraphExecKernelNodeSetParams", -1, 12000, 1 << 30,
	   gt_exec_kernel_node_set_v2, exec_kernel_node_set_v2),
	/* the generic node calls: 12.2, with edge data from 12.3 */
	HV("cuGraphAddNode", "cuGraphAddNode", -1, 0, 12030, gt_graph_add_node,
	   graph_add_node),
	HV("cuGraphAddNode_v2", "cuGraphAddNode", -1, 12030, 1 << 30,
	   gt_graph_add_node_v2, graph_add_node_v2),
	H("cuGraphNodeSetParams", "cuGraphNodeSetParams", -1, gt_node_set,
	  node_set),
	H("cuGraphExecNodeSetParams", "cuGraphExecNodeSetParams", -1,
	  gt_exec_node_set, exec_node_set),
	/* allocations, which probes reading device memory need to know */
	HV("cuMemAlloc_v2", "cuMemAlloc", -1, 3020, 1 << 30, gt_mem_alloc,
	   mem_alloc),
	HV("cuMemAllocPitch_v2", "cuMemAllocPitch", -1, 3020, 1 << 30,
	   gt_mem_alloc_pitch, mem_alloc_pitch),
	HV("cuMemFree_v2", "cuMemFree", -1, 3020, 1 << 30, gt_mem_free,
	   mem_free),
	H("cuMemAllocManaged", "cuMemAllocManaged", -1, gt_mem_alloc_managed,
	  mem_alloc_managed),
	H("cuMemAllocAsync", "cuMemAllocAsync", 0, gt_mem_alloc_async,
	  mem_alloc_async),
	H("cuMemAllocAsync_ptsz", "cuMemAllocAsync", 1,
	  gt_mem_alloc_async_ptsz, mem_alloc_async_ptsz),
	H("cuMemAllocFromPoolAsync", "cuMemAllocFromPoolAsync", 0,
	  gt_mem_alloc_pool, mem_alloc_pool),
	H("cuMemAllocFromPoolAsync_ptsz", "cuMemAllocFromPoolAsync", 1,
	  gt_mem_alloc_pool_ptsz, mem_alloc_pool_ptsz),
	H("cuMemFreeAsync", "cuMemFreeAsync", 0, gt_mem_free_async,
	  mem_free_async),
	H("cuMemFreeAsync_ptsz", "cuMemFreeAsync", 1, gt_mem_free_async_ptsz,
	  mem_free_async_ptsz),
	/* copies, synchronizations, host memory: for host clauses only */
	AGENT_HOSTCALL_HOOKS
};

const int agent_nhooks = sizeof(agent_hooks) / sizeof(agent_hooks[0]);
#endif /* GT_AGENT_SO */
