// SPDX-License-Identifier: MIT
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "probes/provider.h"
#include "lang/diag.h"
#include "runtime/btenv.h"
#include "runtime/agentctl.h"
#include "runtime/child.h"
#include "runtime/fmt.h"
#include "runtime/maps.h"
#include "runtime/metrics.h"
#include "runtime/session.h"
#include "runtime/stacks.h"

static volatile sig_atomic_t interrupted, dump_maps;

static void on_signal(int sig)
{
	interrupted = 1;
}

/* SIGUSR1: print every map now and go on, as bpftrace does */
static void on_usr1(int sig)
{
	dump_maps = 1;
}

int session_read_map(struct session *s, int idx, struct out_map *om)
{
	int e;

	/* strftime formats are numbered per unit (the prompt has several) */
	maps_set_tfmts(s->u->tfmts, s->u->ntfmts);
	e = maps_read(s->obj, idx, om);
	agentctl_merge(s->ac, idx, om);	/* the device part */
	return e;
}

void session_print_map(struct session *s, int idx, uint32_t top, uint32_t div)
{
	struct out_map om;

	if (session_read_map(s, idx, &om) == -E2BIG)
		fprintf(stderr, "gputrace: %s: too many entries to read\n", om.name);
	if (top || div)
		out_map_top(s->o, &om, top, div);
	else
		out_map(s->o, &om);
	maps_out_free(&om);
}

static void do_printf(struct session *s, const struct event_desc *ev,
		      const uint8_t *p)
{
	const struct type *t = ev->args;
	struct fmt_arg args[32] = { 0 };
	struct out_val sym[32];
	char *text = NULL;
	int len, nsym = 0;

	for (int i = 0; i < t->nelems; i++) {
		const uint8_t *a = p + t->offsets[i];

		args[i].s = NULL;
		args[i].i = 0;
		if (t->elems[i]->kind == T_TIME || t->elems[i]->kind == T_USER ||
		    t->elems[i]->kind == T_PROBE ||
		    t->elems[i]->kind == T_STACK || t->elems[i]->kind == T_SYM) {
			/* formatted in user space, like map values */
			args[i].type = FMT_STR;
			maps_decode(t->elems[i], a, &sym[nsym]);
			args[i].s = sym[nsym++].s;
		} else if (t->elems[i]->kind == T_BUF) {
			uint64_t len;

			memcpy(&len, a, 8);
			args[i].type = FMT_BUF;
			args[i].i = len < GT_BUFLEN ? (int64_t)len : GT_BUFLEN;
			args[i].s = (const char *)a + 8;
		} else if (t->elems[i]->kind == T_STR) {
			args[i].type = FMT_STR;
			args[i].s = (const char *)a;
			if (t->elems[i]->symbol) {
				/* decoded like map keys: demangled */
				maps_decode(t->elems[i], a, &sym[nsym]);
				args[i].s = sym[nsym++].s;
			}
		} else {
			args[i].type = t->elems[i]->is_signed ? FMT_INT : FMT_UINT;
			memcpy(&args[i].i, a, 8);
		}
	}
	len = fmt_render(ev->fmt, args, t->nelems, &text);
	if (len >= 0)
		out_printf(s->o, text, len);
	free(text);
	while (nsym--)
		maps_val_free(&sym[nsym]);
}

/* -p: a kernel handle from before the attach, named by the agent. */
static void on_khandle(void *arg, uint64_t handle, const char *name)
{
	struct session *s = arg;

	cuda_name_handle(s->obj, handle, name);
}

/* A device printf record: the agent checked FMT and SIZE. */
static void on_dev_printf(void *arg, uint32_t fmt, const void *args,
			  uint32_t size)
{
	struct session *s = arg;

	if (s->exiting)
		return;
	do_printf(s, &s->u->events[fmt], args);
	out_flush(s->o);
}

/*
 * An event a host clause sent from the agent (agentctl checked its id
 * and size): handled as the same record from the kernel's ring.
 */
static void on_agent_event(void *arg, uint32_t id, const void *args,
			   uint32_t size)
{
	uint8_t *rec = malloc(8 + (size_t)size);
	uint64_t id64 = id;

	if (!rec)
		return;
	memcpy(rec, &id64, 8);
	memcpy(rec + 8, args, size);
	session_on_event(arg, rec, 8 + (size_t)size);
	free(rec);
}

/* printf's text for the arguments at P: cat()'s path, system()'s command */
static char *render(const struct event_desc *ev, const uint8_t *p)
{
	struct fmt_arg args[32] = { 0 };
	const struct type *t = ev->args;
	char *text = NULL;

	for (int i = 0; i < t->nelems; i++) {
		const uint8_t *a = p + t->offsets[i];

		if (t->elems[i]->kind == T_STR) {
			args[i].type = FMT_STR;
			args[i].s = (const char *)a;
		} else {
			args[i].type = t->elems[i]->is_signed ? FMT_INT : FMT_UINT;
			memcpy(&args[i].i, a, 8);
		}
	}
	if (fmt_render(ev->fmt, args, t->nelems, &text) < 0)
		return NULL;
	return text;
}

/* cat(): up to 10240 bytes of the file (BPFTRACE_CAT_BYTES_MAX), as
 * they are (bpftrace 0.17) */
static void do_cat(struct session *s, const char *path)
{
	char buf[4096];
	size_t n, total = 0;
	FILE *f = fopen(path, "r");

	if (!f) {
		fprintf(stderr, "ERROR: failed to open file '%s': %s\n", path,
			strerror(errno));
		return;
	}
	while (total < btenv.cat_bytes_max &&
	       (n = fread(buf, 1, sizeof(buf) < btenv.cat_bytes_max - total ?
			  sizeof(buf) : btenv.cat_bytes_max - total, f)) > 0) {
		out_printf(s->o, buf, n);
		total += n;
	}
	fclose(f);
}

/* system(): the command's standard output, after it ended */
static void do_system(struct session *s, const char *cmd)
{
	char buf[4096];
	size_t n;
	FILE *f;

	fflush(s->o->f);
	f = popen(cmd, "r");
	if (!f) {
		fprintf(stderr, "ERROR: system() could not run '%s': %s\n", cmd,
			strerror(errno));
		return;
	}
	while ((n = fread(buf, 1, sizeof(buf), f)) > 0)
		out_printf(s->o, buf, n);
	pclose(f);
}

/* join(): the strings up to the first empty one, DELIM between, a newline */
static void do_join(struct session *s, const char *delim, const uint8_t *p,
		    size_t size)
{
	uint64_t n;
	char *text = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&text, &len);

	if (!m || size < 8)
		return;
	memcpy(&n, p, 8);
	for (uint64_t i = 0; i < n && 8 + (i + 1) * GT_STRLEN <= size; i++) {
		const char *a = (const char *)p + 8 + i * GT_STRLEN;

		if (!a[0])
			break;
		fprintf(m, "%s%.*s", i ? delim : "", GT_STRLEN - 1, a);
	}
	fputc('\n', m);
	fclose(m);
	if (text)
		out_printf(s->o, text, len);
	free(text);
}

/* -k: "Failed to HELPER: ..." where the call is, as bpftrace words it */
static void helper_error(struct session *s, const struct event_desc *ev,
			 int64_t rc)
{
	if (s->o->fmt == OUT_JSON) {
		fprintf(s->o->f, "{\"type\": \"helper_error\", \"helper\": \"%s\", \"retcode\": %lld, \"line\": %d, \"col\": %d}\n",
			ev->fmt, (long long)rc, ev->loc.line, ev->loc.col);
		out_flush(s->o);
		return;
	}
	/* on the output, as bpftrace 0.17 */
	if (rc < 0)
		diag_warn_to(s->o->f, ev->loc, "Failed to %s: %s (%lld)", ev->fmt,
			     strerror((int)-rc), (long long)rc);
	else
		diag_warn_to(s->o->f, ev->loc, "Failed to %s: %lld", ev->fmt,
			     (long long)rc);
	out_flush(s->o);
}

int session_on_event(void *ctx, void *data, size_t size)
{
	struct session *s = ctx;
	const uint8_t *p = data;
	const struct event_desc *ev;
	uint64_t id;
	int printed;

	/* strftime formats are numbered per unit (the prompt has several) */
	maps_set_tfmts(s->u->tfmts, s->u->ntfmts);
	if (size < 8)
		return 0;
	memcpy(&id, p, 8);
	if (id >= (uint64_t)s->u->nevents)
		return 0;
	ev = &s->u->events[id];
	p += 8;
	/* bpftrace ignores everything after exit() was seen */
	if (s->exiting)
		return 0;
	printed = s->printed;
	s->printed = 0;
	switch (ev->kind) {
	case EV_PRINTF:
		do_printf(s, ev, p);
		break;
	case EV_TIME: {
		char *t = fmt_time(ev->fmt);

		if (t)
			out_time(s->o, t);
		free(t);
		break;
	}
	case EV_HELPER_ERR: {
		int64_t rc;

		memcpy(&rc, p, 8);
		helper_error(s, ev, rc);
		break;
	}
	case EV_PRINT_MAP:
		agentctl_snapshot(s->ac, 1000);
		session_print_map(s, ev->map->index, ev->top, ev->div);
		s->printed = ev->map->index + 1;
		break;
	case EV_PRINT_VAL: {
		struct out_val v;

		maps_decode(ev->args->elems[0], p, &v);
		out_value(s->o, &v);
		maps_val_free(&v);
		break;
	}
	/*
	 * print(@m); clear(@m): the agent's part goes as the print saw it,
	 * so what came after shows at the next print (a new snapshot here
	 * would drop the updates made in between; the agent makes them at
	 * launch rate).
	 */
	case EV_CLEAR:
		if (printed != ev->map->index + 1)
			agentctl_snapshot(s->ac, 1000);
		maps_clear(s->obj, ev->map->index);
		agentctl_clear(s->ac, ev->map->index);
		break;
	case EV_ZERO:
		if (printed != ev->map->index + 1)
			agentctl_snapshot(s->ac, 1000);
		maps_zero(s->obj, ev->map->index);
		agentctl_zero(s->ac, ev->map->index);
		break;
	case EV_JOIN:
		do_join(s, ev->fmt, p, size - 8);
		break;
	case EV_CAT:
	case EV_SYSTEM: {
		char *text = render(ev, p);

		if (text && ev->kind == EV_CAT)
			do_cat(s, text);
		else if (text)
			do_system(s, text);
		free(text);
		break;
	}
	case EV_EXIT: {
		int64_t code;

		/*
		 * What the agent's host clauses sent before it prints first:
		 * a snapshot has the agent send its threads' events first
		 * (docs/hostpath.md).
		 */
		agentctl_snapshot(s->ac, 1000);
		memcpy(&code, p, 8);
		s->exiting = true;
		s->exit_code = (int)code;
		break;
	}
	}
	out_flush(s->o);
	return 0;
}

void session_report_lost(struct session *s)
{
	int fd = s->obj->maps[cg_lost_map(s->u)].fd;
	int ncpu = libbpf_num_possible_cpus();
	uint64_t *v = calloc(ncpu, sizeof(*v)), total = 0, dev;
	uint32_t key = 0;

	if (v && !bpf_map_lookup_elem(fd, &key, v)) {
		for (int i = 0; i < ncpu; i++)
			total += v[i];
		if (total > s->lost_seen)
			out_lost(s->o, total - s->lost_seen);
		s->lost_seen = total;
	}
	free(v);
	dev = agentctl_lost(s->ac);	/* device printf records */
	if (dev)
		out_lost(s->o, dev);
}

/* A signal that says the program crashed (not one sent to end it). */
static bool crash_signal(int sig)
{
	return sig == SIGSEGV || sig == SIGBUS || sig == SIGILL ||
	       sig == SIGFPE || sig == SIGABRT || sig == SIGTRAP ||
	       sig == SIGSYS;
}

/* Whether the traced process (-p or -c) is gone. */
static bool target_gone(const struct session_opts *opts)
{
	if (opts->child && opts->child->pid > 0) {
		pid_t pid = opts->child->pid;
		int st = 0;
		pid_t r = waitpid(pid, &st, WNOHANG);

		if (r == pid && WIFSIGNALED(st) && crash_signal(WTERMSIG(st)))
			fprintf(stderr, "gputrace: process %d was killed by "
				"signal %d (%s)%s\n", (int)pid, WTERMSIG(st),
				strsignal(WTERMSIG(st)),
				WCOREDUMP(st) ? ", core dumped" : "");
		if (r == pid || (r < 0 && errno == ECHILD)) {
			opts->child->pid = 0;
			return true;
		}
		return false;
	}
	return opts->pid > 0 && kill(opts->pid, 0) < 0 && errno == ESRCH;
}

/*
 * A descriptor that polls readable when the target ends (Linux 5.3's
 * pidfd), so the loop below notices at once rather than at its next
 * 100 ms timeout; -1 without a target or a kernel that has none.
 */
static int target_pidfd(const struct session_opts *opts)
{
	pid_t pid = opts->child && opts->child->pid > 0 ? opts->child->pid :
		    opts->pid;

#ifdef SYS_pidfd_open
	if (pid > 0)
		return (int)syscall(SYS_pidfd_open, pid, 0);
#endif
	return -1;
}

static int cmp_name(const void *a, const void *b)
{
	const struct map_sym *const *x = a, *const *y = b;

	return strcmp((*x)->name, (*y)->name);
}

struct map_sym **session_sorted_maps(struct session *s, int *n)
{
	struct map_sym **ms = calloc(s->u->nmaps + 1, sizeof(*ms));

	*n = 0;
	if (!ms)
		return NULL;
	for (struct map_sym *m = s->u->maps; m; m = m->next)
		if (m->host || m->device)
			ms[(*n)++] = m;
	qsort(ms, *n, sizeof(*ms), cmp_name);
	return ms;
}

void session_print_all(struct session *s, bool at_exit)
{
	int n;
	struct map_sym **ms = session_sorted_maps(s, &n);

	if (!ms)
		return;
	if (at_exit)
		out_exit_begin(s->o);
	for (int i = 0; i < n; i++)
		session_print_map(s, ms[i]->index, 0, 0);
	free(ms);
}

/* Run the programs of every BEGIN (or END) probe, in clause order. */
static int fire_all(struct session *s, const struct provider *prov,
		    struct ring_buffer *rb)
{
	for (int i = 0; i < s->obj->nprogs; i++) {
		struct gt_bpf_prog *p = &s->obj->progs[i];

		if (p->probe->prov != prov || !prov->fire)
			continue;
		if (prov->fire(p->probe) < 0) {
			fprintf(stderr, "gputrace: could not run %s\n", prov->name);
			return -1;
		}
		ring_buffer__consume(rb);
	}
	return 0;
}

/*
 * Attach the BEGIN/END probes (FIRED) or all the others.  The others go
 * in reverse order: the kernel runs the handlers of one function last
 * attached first, so several probes on one function run in the order
 * the program declares them, as in bpftrace.
 */
static int attach_range(struct session *s, bool fired, bool verbose)
{
	char err[4096];

	for (int i = s->obj->nprogs - 1; i >= 0; i--) {
		int k = fired ? s->obj->nprogs - 1 - i : i;
		struct probe *p = s->obj->progs[k].probe;

		if (!p->prov->fire != !fired)
			continue;
		if ((p->prov->device && s->ac) || p->in_agent)
			continue;	/* the agent installs it */
		if (p->prov->attach(p, s->obj->progs[k].fd, err, sizeof(err))) {
			fprintf(stderr, "gputrace: %s: %s\n", p->name, err);
			return -1;
		}
		if (verbose)
			fprintf(stderr, "gputrace: attached %s\n", p->name);
	}
	return 0;
}

void session_use_agent(struct session *s, struct agentctl *ac)
{
	struct agentctl_cb cb = { .on_printf = on_dev_printf,
				  .on_event = on_agent_event,
				  .on_khandle = on_khandle, .arg = s };

	s->ac = ac;
	agentctl_set_cb(ac, &cb);
}

int session_run(struct unit *u, struct gt_object *obj, struct out *o,
		const struct session_opts *opts)
{
	struct session s = { .u = u, .obj = obj, .o = o, .ac = opts->agent };
	struct agentctl_cb cb = { .on_printf = on_dev_printf,
				  .on_event = on_agent_event,
				  .on_khandle = on_khandle, .arg = &s };
	struct ring_buffer *rb = NULL;
	struct metrics *mx = NULL;
	struct sigaction sa = { .sa_handler = on_signal };
	struct sigaction usr1 = { .sa_handler = on_usr1 };
	char err[4096];
	int ret = 1, pidfd = -1;

	if (gt_object_load(obj, err, sizeof(err))) {
		fprintf(stderr, "gputrace: %s\n", err);
		return 1;
	}
	if (opts->agent_early && opts->attach_agent && s.ac) {
		agentctl_set_cb(s.ac, &cb);
		if (opts->attach_agent(opts->attach_arg)) {
			s.ac = NULL;
			if (opts->agent_failed(opts->attach_arg))
				goto out;
		}
	}
	maps_set_tfmts(u->tfmts, u->ntfmts);
	stacks_set_object(obj);
	rb = ring_buffer__new(obj->maps[cg_events_map(u)].fd, session_on_event, &s, NULL);
	if (!rb) {
		fprintf(stderr, "gputrace: cannot open the event ring buffer: %s\n",
			strerror(errno));
		goto out;
	}
	if ((uint64_t)obj->nprogs > btenv.max_probes) {
		fprintf(stderr, "ERROR: Can't attach to %d probes because it exceeds the current limit of %llu probes.\n"
			"You can increase the limit through the BPFTRACE_MAX_PROBES environment variable, but BE CAREFUL since a high number of probes attached can cause your system to crash.\n",
			obj->nprogs, (unsigned long long)btenv.max_probes);
		goto out;
	}
	/* the address is taken before any probe is attached */
	if (opts->metrics && metrics_start(opts->metrics, opts->metrics_any,
					   session_metrics_page, &s, &mx))
		goto out;
	if (!opts->quiet)
		out_attached(o, obj->nprogs);
	/* BEGIN and END first, and BEGIN runs before any other probe is
	 * attached (as in bpftrace) */
	if (attach_range(&s, true, opts->verbose))
		goto detach;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGUSR1, &usr1, NULL);
	if (s.ac)
		agentctl_set_cb(s.ac, &cb);
	if (fire_all(&s, &provider_begin, rb))
		goto detach;
	if (attach_range(&s, false, opts->verbose))
		goto detach;
	/* -p: the agent goes in once every probe is in place */
	if (opts->attach_agent && !opts->agent_early &&
	    opts->attach_agent(opts->attach_arg))
		goto detach;
	if (opts->child) {
		int e = child_release(opts->child);

		if (e) {
			fprintf(stderr, "gputrace: -c: cannot run the command: %s\n",
				strerror(-e));
			waitpid(opts->child->pid, NULL, 0);
			opts->child->pid = 0;
			goto detach;
		}
	}
	/* harnesses written for bpftrace wait for this line; bpftrace
	 * 0.17-0.22 write it on stderr once every probe is in place and the
	 * -c command runs (0.23 moved it to stdout) */
	if (getenv("__BPFTRACE_NOTIFY_PROBES_ATTACHED")) {
		fflush(stdout);
		fputs("__BPFTRACE_NOTIFY_PROBES_ATTACHED\n", stderr);
	}
	pidfd = target_pidfd(opts);
	while (!s.exiting && !interrupted && !target_gone(opts)) {
		/* negative fds are skipped */
		struct pollfd pf[4] = {
			{ .fd = ring_buffer__epoll_fd(rb), .events = POLLIN },
			{ .fd = agentctl_fd(s.ac), .events = POLLIN },
			{ .fd = pidfd, .events = POLLIN },
			{ .fd = metrics_fd(mx), .events = POLLIN },
		};
		int n = poll(pf, 4, 100);

		if (n < 0 && errno != EINTR) {
			fprintf(stderr, "gputrace: polling events: %s\n", strerror(errno));
			break;
		}
		/* -p: ended, though its parent may not have reaped it yet
		 * (kill() still finds a zombie); -c: target_gone reaps it */
		if (n > 0 && (pf[2].revents & POLLIN) &&
		    !(opts->child && opts->child->pid > 0))
			break;
		n = ring_buffer__consume(rb);
		if (n < 0 && n != -EINTR) {
			fprintf(stderr, "gputrace: reading events: %s\n", strerror(-n));
			break;
		}
		agentctl_poll(s.ac, 0);
		session_report_lost(&s);
		if (dump_maps) {
			dump_maps = 0;
			session_print_all(&s, false);
		}
		/* scrapes, on this thread: the maps are read between events */
		metrics_run(mx);
	}
	ret = 0;
	/* the last device maps, launches made before finished (or the final
	 * ones, after BYE) */
	agentctl_snapshot_last(s.ac, 2000);
	agentctl_warn_idle(s.ac);
detach:
	metrics_stop(mx);	/* the exit dump is the last word */
	mx = NULL;
	agentctl_detach(s.ac);
	/* BEGIN/END stay until END has run */
	for (int i = 0; i < obj->nprogs; i++) {
		struct probe *p = obj->progs[i].probe;

		if (p->prov->detach && !p->prov->fire)
			p->prov->detach(p);
	}
	if (ret == 0) {
		ring_buffer__consume(rb);
		/* END runs even after exit(); its own exit() is moot */
		bool was = s.exiting;

		s.exiting = false;
		fire_all(&s, &provider_end, rb);
		s.exiting = was;
		session_report_lost(&s);
		session_print_all(&s, true);
		ret = s.exit_code;
	}
	for (int i = 0; i < obj->nprogs; i++) {
		struct probe *p = obj->progs[i].probe;

		if (p->prov->detach && p->prov->fire)
			p->prov->detach(p);
	}
out:
	if (pidfd >= 0)
		close(pidfd);
	ring_buffer__free(rb);
	stacks_reset();
	gt_object_unload(obj);
	return ret;
}
