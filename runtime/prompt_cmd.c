// SPDX-License-Identifier: MIT
/* The prompt's commands: attach, detach, probes, remove, print, ... */
#include <ctype.h>
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "runtime/list.h"
#include "runtime/prompt_priv.h"

static const char *const commands[] = {
	"attach", "detach", "probes", "remove", "print", "clear", "list",
	"load", "help", "quit",
};

bool pr_is_command(const char *line)
{
	size_t n;

	while (isspace((unsigned char)*line))
		line++;
	n = strcspn(line, " \t\n");
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (strlen(commands[i]) == n && !strncmp(line, commands[i], n))
			return true;
	return false;
}

/* The next space-separated word of *S (NUL-terminated in place), or NULL. */
static char *word(char **s)
{
	char *w = *s + strspn(*s, " \t\n");

	if (!*w)
		return NULL;
	*s = w + strcspn(w, " \t\n");
	if (**s)
		*(*s)++ = 0;
	return w;
}

static bool number(const char *w, long max, long *v)
{
	char *end;

	if (!w || !*w)
		return false;
	errno = 0;
	*v = strtol(w, &end, 10);
	return !*end && !errno && *v > 0 && *v <= max;
}

static void help(void)
{
	puts("Type a probe clause to compile and attach it at once, e.g.\n"
	     "  interval:s:1 { @n++; printf(\"%d\\n\", @n); }\n"
	     "(several lines until the braces balance).  Commands:\n"
	     "  attach PID       trace process PID (uprobes, cuda:)\n"
	     "  detach           stop tracing it: remove its probes\n"
	     "  probes           what is attached, with ids\n"
	     "  remove ID        detach probe clause ID (its maps stay)\n"
	     "  print [@map...]  print maps (all without a name)\n"
	     "  print ... SECS   print them every SECS seconds until Ctrl-C\n"
	     "  clear [@map]     empty a map (all without a name)\n"
	     "  list [PATTERN]   list probes (the target's after attach)\n"
	     "  load FILE        compile and attach a script's clauses\n"
	     "  help             this text\n"
	     "  quit             run END, print the maps and leave (Ctrl-D too)\n"
	     "Ctrl-C clears the line and stops the clauses that print.");
}

int pr_attach(struct prompt *p, int pid)
{
	char path[64];

	if (p->pid) {
		fprintf(stderr, "gputrace: attached to %d already; detach first\n",
			p->pid);
		return -EBUSY;
	}
	snprintf(path, sizeof(path), "/proc/%d", pid);
	if (access(path, F_OK)) {
		fprintf(stderr, "gputrace: attach: no process %d\n", pid);
		return -ESRCH;
	}
	p->pid = pid;
	pr_words_load(p);
	if (!p->quiet)
		printf("attached to %d\n", pid);
	return 0;
}

/* Wait S seconds, serving events; false when Ctrl-C came first. */
static bool wait_serving(struct prompt *p, long s)
{
	for (long t = 0; t < s * 10; t++) {
		struct pollfd pf = { .fd = pr_ring_fd(p), .events = POLLIN };

		if (pr_interrupted())
			return false;
		poll(&pf, pf.fd >= 0, 100);
		pr_poll(p);
		if (pr_interrupted())
			return false;
	}
	return true;
}

static void print_cmd(struct prompt *p, char *args)
{
	struct pr_map *ms[64];
	long every = 0;
	int n = 0;

	for (char *w; (w = word(&args));) {
		if (isdigit((unsigned char)w[0])) {
			if (!number(w, 86400, &every)) {
				fprintf(stderr, "gputrace: print: '%s' is not a "
					"number of seconds\n", w);
				return;
			}
			continue;
		}
		ms[n] = pr_map_find(p, w);
		if (!ms[n]) {
			fprintf(stderr, "gputrace: print: no map %s\n", w);
			return;
		}
		if (++n == 64)
			break;
	}
	pr_interrupted();	/* forget an older Ctrl-C */
	do {
		if (!n)
			pr_print_all(p, false);
		for (int i = 0; i < n; i++)
			pr_print_map(p, ms[i]);
	} while (every && wait_serving(p, every));
}

static void clear_cmd(struct prompt *p, char *args)
{
	char *w = word(&args);
	struct pr_map *m;

	if (!w) {
		for (int i = 0; i < p->nmaps; i++)
			pr_clear(p, &p->maps[i]);
		return;
	}
	for (; w; w = word(&args)) {
		m = pr_map_find(p, w);
		if (!m)
			fprintf(stderr, "gputrace: clear: no map %s\n", w);
		else
			pr_clear(p, m);
	}
}

static void load_cmd(struct prompt *p, char *args)
{
	char *path = word(&args), *text;
	FILE *f;
	long len;

	if (!path) {
		fputs("gputrace: load: which file?\n", stderr);
		return;
	}
	f = fopen(path, "r");
	if (!f) {
		fprintf(stderr, "gputrace: load: %s: %s\n", path, strerror(errno));
		return;
	}
	if (fseek(f, 0, SEEK_END) || (len = ftell(f)) < 0 ||
	    fseek(f, 0, SEEK_SET) || !(text = calloc(1, len + 1))) {
		fprintf(stderr, "gputrace: load: %s: cannot read\n", path);
		fclose(f);
		return;
	}
	if (fread(text, 1, len, f) != (size_t)len)
		fprintf(stderr, "gputrace: load: %s: cannot read\n", path);
	else
		pr_add(p, path, text);
	fclose(f);
	free(text);
}

void pr_command(struct prompt *p, const char *line)
{
	char *buf = strdup(line), *args = buf, *cmd;
	long v;

	if (!buf)
		return;
	cmd = word(&args);
	if (!strcmp(cmd, "attach")) {
		char *w = word(&args);

		if (!number(w, 0x3fffffff, &v))
			fprintf(stderr, "gputrace: attach: '%s' is not a process id\n",
				w ? w : "");
		else
			pr_attach(p, v);
	} else if (!strcmp(cmd, "detach")) {
		if (!p->pid) {
			fputs("gputrace: detach: not attached\n", stderr);
		} else {
			int pid = p->pid;

			pr_detach(p);
			pr_words_free(p);
			if (!p->quiet)
				printf("detached from %d\n", pid);
		}
	} else if (!strcmp(cmd, "probes")) {
		pr_list(p);
	} else if (!strcmp(cmd, "remove")) {
		char *w;
		int n = 0;

		while ((w = word(&args))) {
			n++;
			if (!number(w, 1L << 30, &v) || pr_remove(p, v))
				fprintf(stderr, "gputrace: remove: no probe %s "
					"(see `probes`)\n", w);
		}
		if (!n)
			fputs("gputrace: remove: which id? (see `probes`)\n", stderr);
	} else if (!strcmp(cmd, "print")) {
		print_cmd(p, args);
	} else if (!strcmp(cmd, "clear")) {
		clear_cmd(p, args);
	} else if (!strcmp(cmd, "list")) {
		list_probes(word(&args), p->pid, NULL, false, stdout);
	} else if (!strcmp(cmd, "load")) {
		load_cmd(p, args);
	} else if (!strcmp(cmd, "help")) {
		help();
	} else if (!strcmp(cmd, "quit")) {
		p->done = true;
	}
	fflush(stdout);
	free(buf);
}
