// SPDX-License-Identifier: MIT
/*
 * NVRTC compiles that keep their PTX (docs/fatbin.md, "NVRTC").
 *
 * A cubin carries the PTX it was made from (.nv_debug_ptx_txt) only when
 * compiled with line information, and NVRTC's cubins (CuPy's RawKernels
 * by default) are made without: their kernels would be "SASS only".
 * -lineinfo leaves the SASS as it is (CUDA 13.0: .text sections equal
 * byte for byte), so while device probes are configured the agent adds it
 * to every nvrtcCompileProgram for a real architecture that asked for
 * neither line information nor debug (-G); GPUTRACE_NVRTC_LINEINFO=0 in
 * the target's environment turns this off.
 *
 * NVRTC is reached two ways: a program linked with -lnvrtc calls our
 * export (LD_PRELOAD puts us first), and one that dlopens libnvrtc
 * (CuPy's ctypes, PyTorch's lazy NVRTC, cuda-python) looks the function
 * up with dlsym, which hands out one of our wrappers (agent_hooks.c).
 * Several libnvrtc copies may be loaded (a wheel's and the toolkit's):
 * each real function gets a wrapper slot of its own.  An agent injected
 * with -p sees neither (no interposition): compiles are left alone.
 */
#ifdef GT_AGENT_SO
#define _GNU_SOURCE
#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/agent/agent_priv.h"

#define EXPORT __attribute__((visibility("default")))
#define COMPILE_SYM "nvrtcCompileProgram"
#define NVRTC_SUCCESS 0
#define NVRTC_ERROR_INTERNAL_ERROR 11
#define NSLOTS 4

typedef int (*compile_fn)(void *prog, int n, const char *const *opts);

static bool enabled;			/* GPUTRACE_NVRTC_LINEINFO != 0 */
static bool added;			/* a compile got -lineinfo */
static compile_fn slot_real[NSLOTS];	/* set once each, never cleared */

/* Whether this process's compiles get -lineinfo now. */
static bool wanted(void)
{
	return enabled && agent.active && !agent.detached &&
	       agent.cfg.nclauses > 0;
}

static int compile_with(compile_fn real, void *prog, int n,
			const char *const *opts)
{
	const char **o;
	const char *arch;
	int r;

	if (!real)
		return NVRTC_ERROR_INTERNAL_ERROR;
	if (!wanted() || !(arch = agent_nvrtc_lineinfo_arch(n, opts)) ||
	    !(o = malloc(((size_t)n + 1) * sizeof(*o))))
		return real(prog, n, opts);
	if (n)
		memcpy(o, opts, (size_t)n * sizeof(*o));
	o[n] = "-lineinfo";
	r = real(prog, n + 1, o);
	free(o);
	if (r == NVRTC_SUCCESS) {
		__atomic_store_n(&added, true, __ATOMIC_RELAXED);
		agent_debug("NVRTC compile for %s: -lineinfo added, so that "
			    "its cubin carries its PTX "
			    "(GPUTRACE_NVRTC_LINEINFO=0: off)", arch);
		return r;
	}
	/* never our fault if we can help it: the program's own options */
	agent_debug("NVRTC compile for %s failed with -lineinfo added "
		    "(error %d); compiled again as the program asked", arch, r);
	return real(prog, n, opts);
}

#define SLOT(i) \
	static int compile_##i(void *p, int n, const char *const *o) \
	{ \
		return compile_with(__atomic_load_n(&slot_real[i], \
						    __ATOMIC_ACQUIRE), \
				    p, n, o); \
	}
SLOT(0)
SLOT(1)
SLOT(2)
SLOT(3)
static const compile_fn slot_wrapper[NSLOTS] = {
	compile_0, compile_1, compile_2, compile_3,
};

/* --------------------------------------------- the exported name -- */

/* A loaded libnvrtc outside the global scope (the dependency of a module
 * dlopened RTLD_LOCAL, whose references still bind to us first). */
static int find_loaded(struct dl_phdr_info *info, size_t size, void *arg)
{
	const char *base = strrchr(info->dlpi_name, '/');
	void *h;

	base = base ? base + 1 : info->dlpi_name;
	if (strncmp(base, "libnvrtc.so", 11) || !(h = dlopen(info->dlpi_name,
							       RTLD_LAZY |
							       RTLD_NOLOAD)))
		return 0;
	*(void **)arg = agent_real_dlsym(h, COMPILE_SYM);
	dlclose(h);
	return *(void **)arg != NULL;
}

static compile_fn export_real(void)
{
	static compile_fn real;
	compile_fn r = __atomic_load_n(&real, __ATOMIC_ACQUIRE);
	void *p;

	if (r)
		return r;
	/* the next definition after ours: the libnvrtc the program links */
	p = agent_real_dlsym(RTLD_NEXT, COMPILE_SYM);
	if (!p)
		dl_iterate_phdr(find_loaded, &p);
	r = (compile_fn)p;
	if (r)
		__atomic_store_n(&real, r, __ATOMIC_RELEASE);
	return r;
}

EXPORT int gt_nvrtc_compile(void *, int, const char *const *)
	__asm__(COMPILE_SYM);
int gt_nvrtc_compile(void *prog, int n, const char *const *opts)
{
	return compile_with(export_real(), prog, n, opts);
}

/* ------------------------------------------------------------ dlsym -- */

void *agent_nvrtc_dlsym(void *handle)
{
	compile_fn real, cur;

	if (!wanted() || handle == RTLD_NEXT)
		return NULL;
	real = (compile_fn)agent_real_dlsym(handle, COMPILE_SYM);
	/* not there, or our export: the real dlsym says the same */
	if (!real || real == gt_nvrtc_compile)
		return NULL;
	for (int i = 0; i < NSLOTS; i++) {
		cur = NULL;
		if (__atomic_compare_exchange_n(&slot_real[i], &cur, real,
						false, __ATOMIC_ACQ_REL,
						__ATOMIC_ACQUIRE) ||
		    cur == real) {
			agent_debug("dlsym(" COMPILE_SYM "): hooked (NVRTC "
				    "%d), for -lineinfo", i);
			return (void *)slot_wrapper[i];
		}
	}
	agent_report_once("more than %d NVRTC libraries: the compiles of "
			  "the others are left alone", NSLOTS);
	return NULL;
}

bool agent_nvrtc_added(void)
{
	return __atomic_load_n(&added, __ATOMIC_RELAXED);
}

/* At load: on unless GPUTRACE_NVRTC_LINEINFO=0 (read once: getenv on
 * another thread would race with the program's setenv). */
void agent_nvrtc_init(void)
{
	const char *on = getenv("GPUTRACE_NVRTC_LINEINFO");

	enabled = !on || strcmp(on, "0");
}
#endif /* GT_AGENT_SO */
