// SPDX-License-Identifier: MIT
/*
 * The prompt's terminal side: libedit's readline interface in callback
 * mode, so one poll() waits on the keyboard and on the probes' events;
 * output that arrives while a line is being typed is printed above it
 * and the line is drawn again.  Lines are gathered until the braces
 * balance, then run as a command or compiled as clauses.
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/stat.h>

#include <editline/readline.h>

#include "runtime/prompt.h"
#include "runtime/prompt_priv.h"

#define PROMPT	"gputrace> "
#define MORE	"     ...> "

static volatile sig_atomic_t sigint;
static struct prompt *cur;
static char *pending;		/* lines of a clause whose braces are open */
static char hist_path[4096];
static bool showing;		/* the prompt line is on the screen */
static bool redraw;		/* a line was handled: draw the prompt */

static void on_sigint(int sig)
{
	sigint = 1;
}

bool pr_interrupted(void)
{
	bool r = sigint;

	sigint = 0;
	return r;
}

void pr_out_begin(void)
{
	if (showing) {
		/* wipe the prompt line; output goes where it was */
		fputs("\r\033[K", stdout);
		fflush(stdout);
	}
}

void pr_out_end(void)
{
	fflush(stdout);
	fflush(stderr);
	if (showing)
		rl_forced_update_display();
}

/* Brace depth of TEXT, outside strings and comments. */
static int depth(const char *s)
{
	int d = 0;

	for (; *s; s++) {
		if (*s == '"') {
			for (s++; *s && *s != '"'; s++)
				if (*s == '\\' && s[1])
					s++;
			if (!*s)
				break;
		} else if (s[0] == '/' && s[1] == '/') {
			s += strcspn(s, "\n");
			if (!*s)
				break;
		} else if (s[0] == '/' && s[1] == '*') {
			const char *e = strstr(s + 2, "*/");

			if (!e)
				return d + 1;	/* an open comment: read on */
			s = e + 1;
		} else if (*s == '{') {
			d++;
		} else if (*s == '}') {
			d--;
		}
	}
	return d;
}

/* $XDG_STATE_HOME/gputrace/history, else ~/.local/state/gputrace/history */
static void history_open(void)
{
	const char *st = getenv("XDG_STATE_HOME"), *home = getenv("HOME");
	char dir[4000];

	if (st && st[0] == '/')
		snprintf(dir, sizeof(dir), "%s/gputrace", st);
	else if (home && home[0])
		snprintf(dir, sizeof(dir), "%s/.local/state/gputrace", home);
	else
		return;
	/* mkdir -p, 0700: history may hold what was traced */
	for (char *s = strchr(dir + 1, '/'); ; s = strchr(s + 1, '/')) {
		if (s)
			*s = 0;
		if (mkdir(dir, 0700) && errno != EEXIST)
			return;
		if (!s)
			break;
		*s = '/';
	}
	snprintf(hist_path, sizeof(hist_path), "%s/history", dir);
	using_history();
	read_history(hist_path);
}

static void run_text(struct prompt *p, const char *text)
{
	if (pr_is_command(text))
		pr_command(p, text);
	else
		pr_add(p, "<prompt>", text);
}

/* libedit calls this with each line typed (NULL: Ctrl-D). */
static void on_line(char *line)
{
	size_t plen = pending ? strlen(pending) : 0;
	char *all;

	showing = false;
	if (!line) {
		cur->done = true;
		putchar('\n');
		free(line);
		return;
	}
	if (line[strspn(line, " \t")]) {
		add_history(line);
		if (hist_path[0])
			write_history(hist_path);
	}
	all = realloc(pending, plen + strlen(line) + 2);
	if (!all) {
		free(line);
		return;
	}
	sprintf(all + plen, "%s\n", line);
	free(line);
	pending = all;
	if (depth(pending) > 0) {
		rl_set_prompt(MORE);
		showing = redraw = true;
		return;
	}
	pending = NULL;
	all[strlen(all) - 1] = 0;	/* an error at the end stays on the line */
	if (all[strspn(all, " \t\n")])
		run_text(cur, all);
	free(all);
	fflush(stdout);
	fflush(stderr);
	rl_set_prompt(PROMPT);
	showing = !cur->done;
	redraw = showing;
}

/* Ctrl-C at the prompt: drop the line, stop the clauses that print. */
static void interrupt(struct prompt *p)
{
	free(pending);
	pending = NULL;
	fputs("^C\n", stdout);
	pr_poll(p);		/* what they sent before, then they stop */
	pr_stop_printing(p);
	fflush(stdout);
	/* out of line mode and back: an empty line under a new prompt */
	rl_callback_handler_remove();
	rl_callback_handler_install(PROMPT, on_line);
}

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

int prompt_run(const struct prompt_opts *po)
{
	struct prompt p = { .o = po->o, .quiet = po->quiet,
			    .verbose = po->verbose, .start_ns = mono_ns() };
	struct sigaction sa = { .sa_handler = on_sigint }, old_int;
	int code = 0;

	p.tail = &p.gens;
	cur = &p;
	if (po->pid && pr_attach(&p, po->pid))
		return 1;
	sigaction(SIGINT, &sa, &old_int);	/* no SA_RESTART: poll wakes */
	rl_catch_signals = 0;
	rl_readline_name = "gputrace";
	history_open();
	pr_complete_init(&p);
	if (!p.quiet)
		puts("gputrace: type a probe clause or a command; help, quit or Ctrl-D to leave");
	rl_callback_handler_install(PROMPT, on_line);
	showing = true;
	while (!p.done) {
		struct pollfd pf[3] = {
			{ .fd = STDIN_FILENO, .events = POLLIN },
			{ .fd = pr_ring_fd(&p), .events = POLLIN },
			{ .fd = pr_agent_fd(&p), .events = POLLIN },
		};
		int n = poll(pf, 3, 100);	/* fd -1 entries are skipped */

		if (pr_interrupted())
			interrupt(&p);
		if (n > 0 && (pf[2].revents & POLLIN)) {
			pr_out_begin();
			pr_agent_poll(&p);	/* device printf, reports */
			pr_out_end();
		}
		if (n > 0 && (pf[1].revents & POLLIN)) {
			pr_out_begin();
			pr_poll(&p);
			pr_out_end();
		}
		if (n > 0 && (pf[0].revents & (POLLIN | POLLHUP | POLLERR)))
			rl_callback_read_char();
		if (redraw) {
			/* libedit leaves line mode after a line: back into
			 * it, which draws the prompt on an empty line */
			redraw = false;
			rl_callback_handler_install(pending ? MORE : PROMPT,
						    on_line);
		}
		if (pr_exiting(&p, &code))
			break;
		if (p.pid && kill(p.pid, 0) && errno == ESRCH) {
			pr_out_begin();
			printf("gputrace: process %d is gone\n", p.pid);
			pr_detach(&p);
			pr_words_free(&p);
			pr_out_end();
		}
	}
	rl_callback_handler_remove();
	free(pending);
	pending = NULL;
	showing = false;
	code = pr_end(&p) ? : code;
	pr_words_free(&p);
	sigaction(SIGINT, &old_int, NULL);
	return code;
}
