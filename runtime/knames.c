// SPDX-License-Identifier: MIT
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <unistd.h>

#include <bpf/bpf.h>

#include "gpucode/kname.h"
#include "probes/elf_syms.h"
#include "runtime/knames.h"

struct kn {
	uint64_t h;
	char *name;	/* printable: demangled base or as given */
};

static struct kn *tab;	/* open addressing; h == 0 with name NULL: free */
static size_t cap, used;
static int map_fd = -1;

static struct kn *slot(uint64_t h)
{
	size_t i = (size_t)(h ^ h >> 29) & (cap - 1);

	while (tab[i].name && tab[i].h != h)
		i = (i + 1) & (cap - 1);
	return &tab[i];
}

static int grow(void)
{
	struct kn *old = tab;
	size_t ocap = cap;

	cap = cap ? cap * 2 : 256;
	tab = calloc(cap, sizeof(*tab));
	if (!tab) {
		tab = old;
		cap = ocap;
		return -ENOMEM;
	}
	for (size_t i = 0; i < ocap; i++)
		if (old[i].name)
			*slot(old[i].h) = old[i];
	free(old);
	return 0;
}

int knames_add(const char *name)
{
	uint64_t h = kname_hash(name);
	struct kn *k;
	char *s;

	if ((used + 1) * 2 > cap && grow())
		return -ENOMEM;
	k = slot(h);
	if (k->name)
		return 0;
	s = !strncmp(name, "_Z", 2) ? syms_demangle(name, true) : NULL;
	if (!s)
		s = strdup(name);
	if (!s)
		return -ENOMEM;
	k->h = h;
	k->name = s;
	used++;
	return 0;
}

void knames_set_map(int fd)
{
	if (map_fd >= 0)
		close(map_fd);
	/* ours: the object may be unloaded before its maps are printed */
	map_fd = fd >= 0 ? fcntl(fd, F_DUPFD_CLOEXEC, 3) : -1;
}

const char *knames_lookup(uint64_t h)
{
	struct kn *k = cap ? slot(h) : NULL;
	char *buf;

	if (k && k->name)
		return k->name;
	if (map_fd < 0 || !(buf = calloc(1, KNAME_MAX)))
		return NULL;
	/* the eBPF side read the name into KNAME_MAX bytes: cut there */
	if (!bpf_map_lookup_elem(map_fd, &h, buf)) {
		buf[KNAME_MAX - 1] = 0;
		if (kname_hash(buf) == h)
			knames_add(buf);
	}
	free(buf);
	k = cap ? slot(h) : NULL;
	return k && k->name ? k->name : NULL;
}

void knames_reset(void)
{
	for (size_t i = 0; i < cap; i++)
		free(tab[i].name);
	free(tab);
	tab = NULL;
	cap = used = 0;
	knames_set_map(-1);
}
