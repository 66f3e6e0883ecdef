// SPDX-License-Identifier: MIT
/*
 * -p PID uprobes that cannot fire: PID is a kernel thread (no user
 * memory at all), or it does not map the probed file (a library it has
 * not loaded, yet).  They are attached all the same (dlopen may come),
 * but the user hears why nothing shows.  Matched by device and inode, so
 * that /proc/PID/root paths and the process's own names agree.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "probes/provider.h"
#include "probes/uprobe_check.h"

/* 1: PID maps the file DEV/INO; 0: it does not; -1: it maps nothing
 * (a kernel thread) or cannot be read. */
static int maps_file(int pid, dev_t dev, ino_t ino, bool *empty)
{
	char path[64], line[4096 + 128];
	unsigned int maj, min;
	unsigned long inode;
	int found = 0;
	FILE *f;

	*empty = true;
	snprintf(path, sizeof(path), "/proc/%d/maps", pid);
	if (!(f = fopen(path, "re")))
		return -1;
	while (fgets(line, sizeof(line), f)) {
		*empty = false;
		if (sscanf(line, "%*s %*s %*s %x:%x %lu", &maj, &min, &inode) == 3 &&
		    inode && inode == ino && maj == major(dev) && min == minor(dev))
			found = 1;
	}
	fclose(f);
	return found;
}

void uprobe_check_fires(const struct probe *p)
{
	static char said[16][4096];
	static int nsaid;
	struct stat st;
	bool empty;
	int r;

	/* -c: the command is held before its exec, its maps are ours yet */
	if (provider_target_cmd || p->target_pid <= 0 || !p->path ||
	    stat(p->path, &st))
		return;
	for (int i = 0; i < nsaid; i++)
		if (!strcmp(said[i], p->path))
			return;
	r = maps_file(p->target_pid, st.st_dev, st.st_ino, &empty);
	if (r == 1 || (r < 0 && !empty))
		return;
	if (nsaid < 16)
		snprintf(said[nsaid++], sizeof(said[0]), "%s", p->path);
	if (empty)
		fprintf(stderr, "gputrace: warning: %s cannot fire: process %d has no user memory (a kernel thread)\n",
			p->name, p->target_pid);
	else
		fprintf(stderr, "gputrace: warning: %s cannot fire yet: process %d does not map %s (it fires once the process loads it)\n",
			p->name, p->target_pid, p->path);
}
