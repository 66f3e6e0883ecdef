// SPDX-License-Identifier: MIT
/*
 * JIT-compiling spliced PTX as a whole program.  The spliced text holds
 * everything the kernel calls (its own code and the device runtime), so
 * no linker is needed, and none is used: cuLink compiles its inputs
 * relocatable (ptxas -c), where shared arrays are link-time symbols of
 * unknown alignment and place, so ptxas splits vector loads and spends
 * registers on addresses (a tiled SGEMM ran 1.2x slower: 64 scalar LDS
 * for nvcc's 16 LDS.128).
 *
 * cuLibraryLoadData (CUDA 12.0) compiles outside the context's lock, so
 * worker threads JIT side by side (16 kernels on 8 threads: 120 ms,
 * against 720 ms through cuModuleLoadDataEx, which takes one at a time);
 * the module for the current context comes from cuLibraryGetModule.
 * Older drivers: cuModuleLoadDataEx.  The disk cache is the driver's own
 * JIT cache (CUDA_CACHE_PATH, CUDA_CACHE_MAXSIZE), keyed by the PTX and
 * the options: a second run of the same probes compiles nothing.
 */
#ifdef GT_AGENT_SO
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/agent/agent_priv.h"

/*
 * A library's JIT options and the log they point to live as long as the
 * library (for good: copies are never unloaded).  The driver returns
 * outputs through them, and a library may be compiled again after the
 * call (loaded eagerly into a context created later).
 */
struct jit_opts {
	CUjit_option o[3];
	void *v[3];
	char log[1024];
	struct jit_opts *next;
};

static struct jit_opts *kept;	/* reachable, for leak checkers */
static pthread_mutex_t kept_lock = PTHREAD_MUTEX_INITIALIZER;

static int compile(const char *ptx, unsigned maxreg, CUmodule *mod,
		   char *err, size_t errlen)
{
	struct jit_opts *j = calloc(1, sizeof(*j));
	unsigned n = maxreg ? 3 : 2;
	CUlibrary lib;
	CUresult r;
	char *nl;

	if (!j) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	j->o[0] = CU_JIT_ERROR_LOG_BUFFER;
	j->v[0] = j->log;
	j->o[1] = CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES;
	j->v[1] = (void *)(uintptr_t)sizeof(j->log);
	j->o[2] = CU_JIT_MAX_REGISTERS;
	j->v[2] = (void *)(uintptr_t)maxreg;
	if (agent_drv.library_load_data && agent_drv.library_get_module) {
		r = agent_drv.library_load_data(&lib, ptx, j->o, j->v, n, NULL,
						NULL, 0);
		if (r == CUDA_SUCCESS) {
			pthread_mutex_lock(&kept_lock);
			j->next = kept;
			kept = j;
			pthread_mutex_unlock(&kept_lock);
			r = agent_drv.library_get_module(mod, lib);
			if (r == CUDA_SUCCESS)
				return 0;
			/* kept anyway: the library may not unload */
			if (agent_drv.library_unload)
				agent_drv.library_unload(lib);
			snprintf(err, errlen, "%s", agent_cu_str(r));
			return -EIO;
		}
	} else {
		r = agent_drv.module_load_data_ex(mod, ptx, n, j->o, j->v);
		if (r == CUDA_SUCCESS) {
			free(j);	/* a module is compiled in the call */
			return 0;
		}
	}
	/* the first line of ptxas's complaint says enough */
	if ((nl = strchr(j->log, '\n')))
		*nl = '\0';
	snprintf(err, errlen, "%s%s%s", agent_cu_str(r),
		 j->log[0] ? ": " : "", j->log);
	free(j);
	return -EIO;
}

int agent_jit(const char *ptx, unsigned maxreg, CUmodule *mod, char *err,
	      size_t errlen)
{
	int r;

	/* the compiler's exit handlers may not run under a compile */
	if (agent_jit_enter() < 0) {
		snprintf(err, errlen, "the process is exiting");
		return -ESHUTDOWN;
	}
	r = compile(ptx, maxreg, mod, err, errlen);
	agent_jit_leave();
	return r;
}
void agent_jit_forked(void)
{
	pthread_mutex_init(&kept_lock, NULL);
}

#endif /* GT_AGENT_SO */
