// SPDX-License-Identifier: MIT
/*
 * JIT-compiling spliced PTX, with a disk cache of the cubins keyed by a
 * content hash of (PTX, compute capability, driver version): a second
 * run of the same program with the same probes loads a cubin instead of
 * running ptxas in the driver.
 */
#ifdef GT_AGENT_SO
#define _GNU_SOURCE
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "runtime/agent/agent_priv.h"

#define CUBIN_MAX (256u << 20)

/* "~/x" -> "$HOME/x"; mkdir -p.  0, or -errno (then no cache). */
static int cache_path(const char *hex, unsigned sm, char *out, size_t len)
{
	const char *dir = agent.cfg.cache_dir, *home = getenv("HOME");
	char d[4096];
	int n;

	if (!dir || !*dir)
		return -ENOENT;
	if (dir[0] == '~' && (dir[1] == '/' || !dir[1])) {
		if (!home)
			return -ENOENT;
		n = snprintf(d, sizeof(d), "%s%s", home, dir + 1);
	} else {
		n = snprintf(d, sizeof(d), "%s", dir);
	}
	if (n < 0 || (size_t)n >= sizeof(d))
		return -ENAMETOOLONG;
	for (char *p = d + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		mkdir(d, 0700);
		*p = '/';
	}
	if (mkdir(d, 0700) < 0 && errno != EEXIST)
		return -errno;
	n = snprintf(out, len, "%s/%s-sm%u.cubin", d, hex, sm);
	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

static void *read_cubin(const char *path, size_t *len)
{
	struct stat st;
	void *p = NULL;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return NULL;
	if (fstat(fd, &st) == 0 && st.st_size > 0 && st.st_size < CUBIN_MAX &&
	    (p = malloc((size_t)st.st_size)) &&
	    read(fd, p, (size_t)st.st_size) != st.st_size) {
		free(p);
		p = NULL;
	}
	/* an ELF cut short is no cubin to load: its headers must fit */
	if (p && st.st_size >= SELFMAG && !memcmp(p, ELFMAG, SELFMAG)) {
		size_t n = agent_elf_size(p, (size_t)st.st_size);

		if (!n || n > (size_t)st.st_size) {
			free(p);
			p = NULL;
		}
	}
	*len = p ? (size_t)st.st_size : 0;
	close(fd);
	return p;
}

/*
 * Write atomically (a temporary file of this thread's own, then rename):
 * concurrent runs, and threads of one run JITting the same kernel, each
 * rename a whole file and readers never see part of one.
 */
static void write_cubin(const char *path, const void *p, size_t len)
{
	static unsigned seq;
	char tmp[4200];
	int fd;

	snprintf(tmp, sizeof(tmp), "%s.%d.%u.tmp", path, (int)getpid(),
		 __atomic_add_fetch(&seq, 1, __ATOMIC_RELAXED));
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		return;
	if (write(fd, p, len) != (ssize_t)len || close(fd) < 0 ||
	    rename(tmp, path) < 0)
		unlink(tmp);
}

static int jit_link(const char *ptx, unsigned maxreg, void **cubin,
		    size_t *len, CUlinkState *st, char *err, size_t errlen)
{
	static __thread char log[8192];
	CUjit_option o[] = { CU_JIT_ERROR_LOG_BUFFER,
			     CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
			     CU_JIT_MAX_REGISTERS };
	void *v[] = { log, (void *)(uintptr_t)sizeof(log),
		      (void *)(uintptr_t)maxreg };
	CUresult r;

	log[0] = '\0';
	r = agent_drv.link_create(maxreg ? 3 : 2, o, v, st);
	if (r != CUDA_SUCCESS) {
		snprintf(err, errlen, "cuLinkCreate: %s", agent_cu_str(r));
		return -EIO;
	}
	r = agent_drv.link_add_data(*st, CU_JIT_INPUT_PTX, (void *)ptx,
				    strlen(ptx) + 1, "gputrace.ptx", 0, NULL,
				    NULL);
	if (r == CUDA_SUCCESS)
		r = agent_drv.link_complete(*st, cubin, len);
	if (r != CUDA_SUCCESS) {
		char *nl;

		/* the first line of ptxas's complaint says enough */
		if ((nl = strchr(log, '\n')))
			*nl = '\0';
		snprintf(err, errlen, "%s%s%s", agent_cu_str(r),
			 log[0] ? ": " : "", log);
		return -EIO;
	}
	return 0;
}

int agent_jit(const char *ptx, unsigned sm, unsigned maxreg, CUmodule *mod,
	      bool *hit,
	      char *err, size_t errlen)
{
	char meta[64], hex[33], path[4096];
	int drv = 0, cached;
	CUlinkState st = NULL;
	void *cubin;
	size_t len;
	CUresult r;

	if (agent_drv.driver_get_version)
		agent_drv.driver_get_version(&drv);
	snprintf(meta, sizeof(meta), "sm_%u driver %d maxreg %u", sm, drv, maxreg);
	agent_hash_hex(ptx, strlen(ptx), meta, strlen(meta), hex);
	cached = cache_path(hex, sm, path, sizeof(path)) == 0;
	*hit = false;
	if (cached && (cubin = read_cubin(path, &len))) {
		r = agent_drv.module_load_data(mod, cubin);
		free(cubin);
		if (r == CUDA_SUCCESS) {
			*hit = true;
			return 0;
		}
		unlink(path);	/* stale or damaged: compile again */
	}
	if (jit_link(ptx, maxreg, &cubin, &len, &st, err, errlen) < 0) {
		if (st)
			agent_drv.link_destroy(st);
		return -EIO;
	}
	if (cached)
		write_cubin(path, cubin, len);
	r = agent_drv.module_load_data(mod, cubin);
	agent_drv.link_destroy(st);
	if (r != CUDA_SUCCESS) {
		snprintf(err, errlen, "cuModuleLoadData: %s", agent_cu_str(r));
		return -EIO;
	}
	return 0;
}
#endif /* GT_AGENT_SO */
