// SPDX-License-Identifier: MIT
/*
 * Tab completion at the prompt: commands and probe forms first on a
 * line, map names after print and clear, and inside a clause builtins,
 * functions, map names and probes.  After `attach`, the target's probes
 * (its functions, gpu: kernels) join, read once with -l's code.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>

#include <editline/readline.h>

#include "compiler/sema.h"
#include "runtime/list.h"
#include "runtime/prompt_priv.h"

static struct prompt *cur;

static const char *const first_words[] = {
	"attach", "detach", "probes", "remove", "print", "clear", "list",
	"load", "help", "quit", "BEGIN", "END", "interval:s:", "interval:ms:",
	"interval:us:", "interval:hz:", "uprobe:", "uretprobe:", "cuda:launch",
	"cuda:malloc", "cuda:free", "cuda:memcpy", "cuda:sync", "cuda:graph",
	NULL,
};

/* Candidates for the word being completed, state kept between calls. */
static struct {
	const char *const *lists[3];
	bool maps, words;
	int list, i;
} st;

static char *next_of(const char *text)
{
	size_t n = strlen(text);

	for (; st.list < 3; st.list++, st.i = 0) {
		const char *const *l = st.lists[st.list];

		while (l && l[st.i])
			if (!strncmp(l[st.i++], text, n))
				return strdup(l[st.i - 1]);
	}
	/* then maps (list 3), then the target's words (list 4) */
	for (; st.maps && st.list == 3; st.list++, st.i = 0)
		while (st.i < cur->nmaps)
			if (!strncmp(cur->maps[st.i++].name, text, n))
				return strdup(cur->maps[st.i - 1].name);
	if (st.list == 3)
		st.list++, st.i = 0;
	for (; st.words && st.list == 4; st.list++)
		while (st.i < cur->nwords)
			if (!strncmp(cur->words[st.i++], text, n))
				return strdup(cur->words[st.i - 1]);
	return NULL;
}

static char *generator(const char *text, int state)
{
	return next_of(text);
}

static char **complete(const char *text, int start, int end)
{
	const char *line = rl_line_buffer;
	size_t lead = strspn(line, " \t");

	memset(&st, 0, sizeof(st));
	if ((size_t)start <= lead) {
		st.lists[0] = first_words;
		st.words = true;
	} else if (!strncmp(line + lead, "print", 5) ||
		   !strncmp(line + lead, "clear", 5)) {
		st.maps = true;
	} else if (!strncmp(line + lead, "list", 4)) {
		st.words = true;
	} else {
		st.lists[0] = sema_builtin_names;
		st.lists[1] = sema_function_names;
		st.lists[2] = first_words + 10;	/* probe forms */
		st.maps = true;
		st.words = true;
	}
	rl_attempted_completion_over = 1;	/* no file names */
	return rl_completion_matches(text, generator);
}

void pr_complete_init(struct prompt *p)
{
	cur = p;
	rl_attempted_completion_function = complete;
	/* probe names hold ':' and '.', maps '@' */
	rl_completer_word_break_characters = " \t\n(){}[];,/=+-*<>!&|^%?\"";
}

void pr_words_free(struct prompt *p)
{
	for (int i = 0; i < p->nwords; i++)
		free(p->words[i]);
	free(p->words);
	p->words = NULL;
	p->nwords = 0;
}

/* The target's probes, as `list` prints them: one word a line. */
void pr_words_load(struct prompt *p)
{
	char *buf = NULL, *line, *save = NULL, exe[64], path[4096], pre[4200];
	size_t len = 0, plen;
	ssize_t n;
	FILE *f = open_memstream(&buf, &len);
	int cap = 0;

	pr_words_free(p);
	if (!f)
		return;
	/* -l names the program /proc/PID/root/PATH, as bpftrace does:
	 * complete PATH */
	snprintf(exe, sizeof(exe), "/proc/%d/exe", p->pid);
	n = readlink(exe, path, sizeof(path) - 1);
	path[n > 0 ? n : 0] = 0;
	plen = snprintf(pre, sizeof(pre), "uprobe:/proc/%d/root%s:", p->pid,
			path);
	list_probes(NULL, p->pid, NULL, false, f);
	fclose(f);
	for (line = strtok_r(buf, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		line[strcspn(line, " ")] = 0;	/* "(SASS only: ...)" */
		if (p->nwords == cap) {
			char **w = realloc(p->words, (cap = cap * 2 + 64) * sizeof(*w));

			if (!w)
				break;
			p->words = w;
		}
		if (path[0] && !strncmp(line, pre, plen)) {
			if (asprintf(&p->words[p->nwords], "uprobe:%s:%s", path,
				     line + plen) < 0)
				p->words[p->nwords] = NULL;
		} else {
			p->words[p->nwords] = strdup(line);
		}
		if (p->words[p->nwords])
			p->nwords++;
	}
	free(buf);
}
