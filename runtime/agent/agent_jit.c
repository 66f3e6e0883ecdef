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
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "runtime/agent/agent_priv.h"

int agent_jit(const char *ptx, unsigned maxreg, CUmodule *mod, char *err,
	      size_t errlen)
{
	static __thread char log[8192];
	CUjit_option o[] = { CU_JIT_ERROR_LOG_BUFFER,
			     CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
			     CU_JIT_MAX_REGISTERS };
	void *v[] = { log, (void *)(uintptr_t)sizeof(log),
		      (void *)(uintptr_t)maxreg };
	unsigned n = maxreg ? 3 : 2;
	CUlibrary lib;
	CUresult r;
	char *nl;

	log[0] = '\0';
	if (agent_drv.library_load_data && agent_drv.library_get_module) {
		r = agent_drv.library_load_data(&lib, ptx, o, v, n, NULL, NULL,
						0);
		if (r == CUDA_SUCCESS) {
			r = agent_drv.library_get_module(mod, lib);
			if (r == CUDA_SUCCESS)
				return 0;
			if (agent_drv.library_unload)
				agent_drv.library_unload(lib);
		}
	} else {
		r = agent_drv.module_load_data_ex(mod, ptx, n, o, v);
		if (r == CUDA_SUCCESS)
			return 0;
	}
	/* the first line of ptxas's complaint says enough */
	if ((nl = strchr(log, '\n')))
		*nl = '\0';
	snprintf(err, errlen, "%s%s%s", agent_cu_str(r), log[0] ? ": " : "",
		 log);
	return -EIO;
}
#endif /* GT_AGENT_SO */
