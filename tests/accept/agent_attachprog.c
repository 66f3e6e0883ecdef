// SPDX-License-Identifier: MIT
/*
 * The target of tests/accept/agent_attach.sh: a long-running program on
 * the (fake) driver that gputrace -p attaches to.  It takes its entry
 * points like the CUDA runtime (dlsym of cuGetProcAddress_v2, then
 * pointers), loads FATBIN and launches KERNEL (4 blocks x 64 threads: 8
 * warps) from two threads, one through the pointers (legacy and per-thread
 * stream kinds alternating), one calling cuLaunchKernel directly as -lcuda
 * programs do, each every millisecond.  The fatbin (ATTACH_FATBIN, a path
 * at build time) is embedded in a `.nv_fatbin` section as nvcc does: an
 * agent that comes after the load finds its PTX there.
 *
 *	agent_attachprog KERNEL READY_FILE [CUBIN [KEEP...]]
 *
 * With CUBIN, the module is that file, read into a malloc'ed buffer and
 * loaded from there (as Triton loads its cubins), and each KEEP file is
 * read into a buffer of its own and kept; the buffer of CUBIN is kept
 * too, unless ATTACHPROG_FREE is set (freed after the load).  The agent
 * attached later finds such cubins in memory (tests/accept/agent_memscan.sh).
 * ATTACHPROG_BALLAST_MB=N: N MiB more of anonymous memory, random bytes,
 * for the agent to scan through; ATTACHPROG_RESERVE_MB=N: N MiB mapped
 * and never touched (an allocator's reserve), for it to pass over.
 *
 * READY_FILE is created once the module is loaded and the threads run.
 * ATTACHPROG_CHURN=1: the main thread allocates and frees all the time
 * (malloc's lock held most of the time), for the injector to stop it
 * there and find a safe point (tests/accept/agent_safepoint.sh).
 *
 * SIGUSR1 pauses the launches, SIGUSR2 resumes them (a paused program is
 * quiet, so a test can compare counts exactly); pausing prints "paused at N", N
 * the launches so far.  SIGTERM ends it, printing "launches N failures F"
 * (every launch, and those that did not return CUDA_SUCCESS).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

typedef int CUresult;
typedef CUresult (*gpa_fn)(const char *, void **, int, uint64_t, int *);
typedef CUresult (*load_fn)(void **, const void *);
typedef CUresult (*getfn_fn)(void **, void *, const char *);
typedef CUresult (*launch_fn)(void *, unsigned, unsigned, unsigned,
			      unsigned, unsigned, unsigned, unsigned, void *,
			      void **, void **);

CUresult cuLaunchKernel(void *, unsigned, unsigned, unsigned, unsigned,
			unsigned, unsigned, unsigned, void *, void **,
			void **);

static volatile sig_atomic_t paused, done;
static long launches, failures;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static launch_fn launch, launch_ptsz;
static void *fn;

static void on_usr1(int sig __attribute__((unused)))
{
	paused = 1;
}

static void on_usr2(int sig __attribute__((unused)))
{
	paused = 0;
}

static void on_term(int sig __attribute__((unused)))
{
	done = 1;
}

__asm__(".section .nv_fatbin, \"a\"\n"
	".balign 16\n"
	"attach_fatbin:\n"
	".incbin \"" ATTACH_FATBIN "\"\n"
	".previous\n");
extern const char attach_fatbin[];

/* Allocate and free until SIGTERM: malloc's lock taken all the time. */
static void churn(void)
{
	void *slot[64] = { 0 };
	unsigned x = 1;

	while (!done) {
		x = x * 1103515245 + 12345;
		free(slot[x % 64]);
		slot[x % 64] = malloc(16 + (x >> 8) % 4096);
	}
	for (int i = 0; i < 64; i++)
		free(slot[i]);
}

/* FILE's bytes in a malloc'ed buffer (no stdio: no copies in its
 * buffers), or NULL */
static void *slurp(const char *path)
{
	int fd = open(path, O_RDONLY);
	off_t n = fd < 0 ? -1 : lseek(fd, 0, SEEK_END);
	char *p = n > 0 ? malloc((size_t)n) : NULL;

	if (!p || pread(fd, p, (size_t)n, 0) != n) {
		free(p);
		p = NULL;
	}
	if (fd >= 0)
		close(fd);
	return p;
}

static void *loop(void *arg)
{
	float a[4] = { 0 };
	uint64_t pa = (uintptr_t)a;
	int n = 256, direct = arg != NULL;
	void *params[] = { &pa, &pa, &pa, &n };
	struct timespec ms = { 0, 1000000 };
	sigset_t s;

	sigfillset(&s);		/* signals go to the main thread */
	pthread_sigmask(SIG_SETMASK, &s, NULL);
	for (long i = 0; !done; i++) {
		CUresult r;

		if (paused) {
			nanosleep(&ms, NULL);
			continue;
		}
		if (direct)
			r = cuLaunchKernel(fn, 4, 1, 1, 64, 1, 1, 0, NULL,
					   params, NULL);
		else
			r = (i & 1 ? launch_ptsz : launch)(fn, 4, 1, 1, 64, 1,
							   1, 0, NULL, params,
							   NULL);
		pthread_mutex_lock(&lock);
		if (r)
			failures++;
		else
			launches++;
		pthread_mutex_unlock(&lock);
		nanosleep(&ms, NULL);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	struct sigaction su = { .sa_handler = on_usr1 },
			 sr = { .sa_handler = on_usr2 },
			 st = { .sa_handler = on_term };
	pthread_t t[2];
	void *h, *mod = NULL;
	gpa_fn gpa;
	load_fn load;
	getfn_fn getfn;
	FILE *f;
	const void *image = attach_fatbin;
	void *cubin = NULL, **kept;

	if (argc < 3) {
		fprintf(stderr, "usage: agent_attachprog KERNEL READY "
			"[CUBIN [KEEP...]]\n");
		return 2;
	}
	kept = calloc((size_t)argc, sizeof(*kept));	/* [0]: ballast */
	if (!kept)
		return 1;
	if (getenv("ATTACHPROG_BALLAST_MB")) {
		size_t n = strtoul(getenv("ATTACHPROG_BALLAST_MB"), NULL,
				   10) << 17;
		uint64_t *b = malloc(n * 8), x = 88172645463325252ull;

		for (size_t i = 0; b && i < n; i++) {
			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
			b[i] = x;
		}
		if (!(kept[0] = b))
			return 1;
	}
	if (getenv("ATTACHPROG_RESERVE_MB") &&
	    mmap(NULL, strtoul(getenv("ATTACHPROG_RESERVE_MB"), NULL, 10) << 20,
		 PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS |
		 MAP_NORESERVE, -1, 0) == MAP_FAILED)
		return 1;
	if (argc > 3) {
		image = cubin = slurp(argv[3]);
		for (int i = 4; i < argc; i++)
			if (!(kept[i] = slurp(argv[i])))
				image = NULL;
		if (!image) {
			fprintf(stderr, "cannot read the cubins\n");
			return 1;
		}
	}
	sigaction(SIGUSR1, &su, NULL);
	sigaction(SIGUSR2, &sr, NULL);
	sigaction(SIGTERM, &st, NULL);
	h = dlopen("libcuda.so.1", RTLD_NOW);
	gpa = h ? (gpa_fn)dlsym(h, "cuGetProcAddress_v2") : NULL;
	if (!gpa || gpa("cuModuleLoadData", (void **)&load, 12000, 0, NULL) ||
	    gpa("cuModuleGetFunction", (void **)&getfn, 12000, 0, NULL) ||
	    gpa("cuLaunchKernel", (void **)&launch, 12000, 0, NULL) ||
	    gpa("cuLaunchKernel", (void **)&launch_ptsz, 12000, 2, NULL) ||
	    load(&mod, image) || getfn(&fn, mod, argv[1])) {
		fprintf(stderr, "cannot set up %s\n", argv[1]);
		return 1;
	}
	if (getenv("ATTACHPROG_FREE")) {
		free(cubin);
		cubin = NULL;
	}
	if (pthread_create(&t[0], NULL, loop, NULL) ||
	    pthread_create(&t[1], NULL, loop, (void *)1))
		return 1;
	f = fopen(argv[2], "w");
	if (f)
		fclose(f);
	if (getenv("ATTACHPROG_CHURN"))
		churn();
	while (!done) {
		int was = paused;

		pause();
		if (paused && !was) {
			/* let launches in flight return, then say how many */
			struct timespec ms20 = { 0, 20000000 };
			long n;

			nanosleep(&ms20, NULL);
			pthread_mutex_lock(&lock);
			n = launches;
			pthread_mutex_unlock(&lock);
			printf("paused at %ld\n", n);
			fflush(stdout);
		}
	}
	pthread_join(t[0], NULL);
	pthread_join(t[1], NULL);
	printf("launches %ld failures %ld\n", launches, failures);
	for (int i = 4; i < argc; i++)
		free(kept[i]);
	free(kept[0]);
	free(kept);
	free(cubin);
	return failures != 0;
}
