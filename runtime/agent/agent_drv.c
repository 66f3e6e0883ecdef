// SPDX-License-Identifier: MIT
/*
 * The real CUDA driver: libcuda.so.1 opened by name and every entry point
 * we hook or use looked up in it with the real dlsym (a handle lookup
 * starts at libcuda itself, so it never finds our own exports).
 */
#ifdef GT_AGENT_SO
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>

#include "runtime/agent/agent_priv.h"

struct agent_drv agent_drv __attribute__((aligned(64)));
__thread struct agent_thread agent_self;

static pthread_once_t drv_once = PTHREAD_ONCE_INIT;
static int drv_err;
static void *libcuda;

#define USE(field, name) { (void **)&agent_drv.field, name }

/* Entry points the agent calls itself (the hooked ones come from the
 * hook table). */
static const struct { void **slot; const char *name; } uses[] = {
	USE(ctx_get_current, "cuCtxGetCurrent"),
	USE(ctx_set_current, "cuCtxSetCurrent"),
	USE(ctx_push, "cuCtxPushCurrent_v2"),
	USE(ctx_pop, "cuCtxPopCurrent_v2"),
	USE(ctx_get_device, "cuCtxGetDevice"),
	USE(ctx_sync, "cuCtxSynchronize"),
	USE(stream_get_ctx, "cuStreamGetCtx"),
	USE(device_get_attribute, "cuDeviceGetAttribute"),
	USE(driver_get_version, "cuDriverGetVersion"),
	USE(func_get_name, "cuFuncGetName"),
	USE(kernel_get_name, "cuKernelGetName"),
	USE(func_get_module, "cuFuncGetModule"),
	USE(func_get_attribute, "cuFuncGetAttribute"),
	USE(func_set_attribute, "cuFuncSetAttribute"),
	USE(kernel_get_attribute, "cuKernelGetAttribute"),
	USE(occupancy, "cuOccupancyMaxActiveBlocksPerMultiprocessor"),
	USE(stream_create, "cuStreamCreate"),
	USE(stream_sync, "cuStreamSynchronize"),
	USE(mem_alloc, "cuMemAlloc_v2"),
	USE(mem_free, "cuMemFree_v2"),
	USE(htod_async, "cuMemcpyHtoDAsync_v2"),
	USE(dtoh_async, "cuMemcpyDtoHAsync_v2"),
	USE(memcpy2d_async, "cuMemcpy2DAsync_v2"),
	USE(memset_d8_async, "cuMemsetD8Async"),
	USE(get_error_string, "cuGetErrorName"),
	USE(capture_mode, "cuThreadExchangeStreamCaptureMode"),
	USE(primary_retain, "cuDevicePrimaryCtxRetain"),
	USE(primary_release, "cuDevicePrimaryCtxRelease_v2"),
	USE(stream_is_capturing, "cuStreamIsCapturing"),
	USE(module_func_count, "cuModuleGetFunctionCount"),
	USE(module_enum_funcs, "cuModuleEnumerateFunctions"),
	USE(library_get_module, "cuLibraryGetModule"),
	USE(library_kernel_count, "cuLibraryGetKernelCount"),
	USE(library_enum_kernels, "cuLibraryEnumerateKernels"),
};

/* The ones the agent cannot work without (older drivers may lack the
 * name look-ups; those just make unknown handles unnamed). */
#define NEED(f) (agent_drv.f != NULL)

static void drv_load(void)
{
	libcuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
	if (!libcuda)
		libcuda = dlopen("libcuda.so.1", RTLD_NOW);
	if (!libcuda) {
		drv_err = -ENOENT;
		return;
	}
	for (int i = 0; i < agent_nhooks; i++)
		*agent_hooks[i].real = agent_real_dlsym(libcuda,
							agent_hooks[i].sym);
	for (size_t i = 0; i < sizeof(uses) / sizeof(uses[0]); i++)
		*uses[i].slot = agent_real_dlsym(libcuda, uses[i].name);
	if (!NEED(ctx_get_current) || !NEED(ctx_push) || !NEED(ctx_pop) ||
	    !NEED(ctx_get_device) || !NEED(device_get_attribute) ||
	    !NEED(stream_create) || !NEED(stream_sync) || !NEED(mem_alloc) ||
	    !NEED(htod_async) || !NEED(dtoh_async) || !NEED(memset_d8_async) ||
	    !NEED(module_load_data_ex) || !NEED(module_load_data) ||
	    !NEED(module_get_function))
		drv_err = -ENOSYS;	/* hooks still forward; no probes */
}

int agent_drv_init(void)
{
	int r;

	pthread_once(&drv_once, drv_load);
	r = drv_err == -ENOENT ? drv_err : 0;
	__atomic_store_n(&agent_drv.loaded, r + 1, __ATOMIC_RELEASE);
	return r;
}

/* Everything the instrumentation needs is there. */
int agent_drv_usable(void)
{
	pthread_once(&drv_once, drv_load);
	return drv_err;
}

/*
 * While a stream capture is under way, the driver refuses "unsafe" calls
 * (cuMemAlloc, synchronous copies, synchronizations) from the capturing
 * thread, and from every thread when the capture is in global mode; a
 * refused call also invalidates the user's capture.  None of our calls
 * touches a capturing stream (we use our own non-blocking stream), so
 * the agent runs them in relaxed mode, which only lifts that check.
 */
CUstreamCaptureMode agent_capture_relax(void)
{
	CUstreamCaptureMode m = CU_STREAM_CAPTURE_MODE_RELAXED;

	if (!agent_drv.capture_mode ||
	    agent_drv.capture_mode(&m) != CUDA_SUCCESS)
		return CU_STREAM_CAPTURE_MODE_RELAXED;
	return m;
}

void agent_capture_restore(CUstreamCaptureMode m)
{
	if (agent_drv.capture_mode && m != CU_STREAM_CAPTURE_MODE_RELAXED)
		agent_drv.capture_mode(&m);
}

const char *agent_cu_str(CUresult r)
{
	static __thread char buf[32];
	const char *s = NULL;

	if (agent_drv.get_error_string &&
	    agent_drv.get_error_string(r, &s) == CUDA_SUCCESS && s)
		return s;
	snprintf(buf, sizeof(buf), "CUDA error %d", (int)r);
	return buf;
}
#endif /* GT_AGENT_SO */
