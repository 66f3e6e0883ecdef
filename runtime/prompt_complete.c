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
#include "probes/elf_syms.h"
#include "runtime/list.h"
#include "runtime/prompt_priv.h"

static struct prompt *cur;

static const char *const first_words[] = {
	"attach", "detach", "probes", "remove", "print", "clear", "list",
	"load", "help", "quit", "BEGIN", "END", "interval:s:", "interval:ms:",
	"interval:us:", "interval:hz:", "uprobe:", "uretprobe:", "usdt:",
	"kprobe:", "kretprobe:", "tracepoint:", "rawtracepoint:",
	"profile:hz:", "profile:s:", "profile:ms:", "profile:us:",
	"software:", "hardware:", "cuda:launch", "cuda:malloc", "cuda:free",
	"cuda:memcpy", "cuda:sync", "cuda:graph", "cuda:complete",
	"gpu:kernel:", "gpu:warp:",
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
	char **m;

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
	m = rl_completion_matches(text, generator);
	/* "uprobe:" goes on without a space: a second Tab lists after it */
	rl_completion_append_character =
		m && m[0][0] && m[0][strlen(m[0]) - 1] == ':' ? '\0' : ' ';
	return m;
}

void pr_complete_init(struct prompt *p)
{
	cur = p;
	rl_attempted_completion_function = complete;
	/* probe names hold ':', '.', '/', '-' and '*', maps '@'; libedit
	 * breaks words at the basic set (its default has '@': "print @a"
	 * became "@@a") */
	rl_completer_word_break_characters = " \t\n(){}[];,=+<>!&|^%?\"";
	rl_basic_word_break_characters = rl_completer_word_break_characters;
}

void pr_words_free(struct prompt *p)
{
	for (int i = 0; i < p->nwords; i++)
		free(p->words[i]);
	free(p->words);
	p->words = NULL;
	p->nwords = 0;
}

static void add_word(struct prompt *p, int *cap, char *w)
{
	if (!w)
		return;
	if (p->nwords == *cap) {
		char **v = realloc(p->words, (*cap = *cap * 2 + 64) * sizeof(*v));

		if (!v) {
			free(w);
			return;
		}
		p->words = v;
	}
	p->words[p->nwords++] = w;
}

/*
 * The functions of each library PID maps, as "uprobe:libc:malloc" (what
 * users type) and by the mapped path: -l of a process lists only its
 * program, so "uprobe:libc:mal" completed nothing.
 */
static void lib_words(struct prompt *p, int *cap)
{
	char maps[64], line[4096 + 128], last[4096] = "";
	FILE *f;

	snprintf(maps, sizeof(maps), "/proc/%d/maps", p->pid);
	if (!(f = fopen(maps, "re")))
		return;
	while (fgets(line, sizeof(line), f)) {
		char *path = strchr(line, '/'), *base, *buf = NULL, *l, *save;
		char pat[4200], *dot;
		size_t len = 0, plen, blen;
		FILE *m;

		if (!path)
			continue;
		path[strcspn(path, "\n")] = 0;
		base = strrchr(path, '/') + 1;
		if (!(dot = strstr(base, ".so")) || !strcmp(path, last))
			continue;
		snprintf(last, sizeof(last), "%s", path);
		blen = dot - base;
		plen = snprintf(pat, sizeof(pat), "uprobe:%s:", path);
		snprintf(pat + plen, sizeof(pat) - plen, "*");
		if (!(m = open_memstream(&buf, &len)))
			continue;
		syms_list_text(pat, p->pid, NULL, false, m);
		fclose(m);
		for (l = strtok_r(buf, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
			char *w;

			if (strncmp(l, pat, plen))
				continue;
			add_word(p, cap, strdup(l));
			if (asprintf(&w, "uprobe:%.*s:%s", (int)blen, base, l + plen) >= 0)
				add_word(p, cap, w);
		}
		free(buf);
	}
	fclose(f);
}

/* The target's probes, as `list` prints them: one word a line; then its
 * libraries' functions. */
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
		char *w;

		line[strcspn(line, " ")] = 0;	/* "(SASS only: ...)" */
		if (path[0] && !strncmp(line, pre, plen)) {
			if (asprintf(&w, "uprobe:%s:%s", path, line + plen) < 0)
				w = NULL;
		} else {
			w = strdup(line);
		}
		add_word(p, &cap, w);
	}
	free(buf);
	lib_words(p, &cap);
}
