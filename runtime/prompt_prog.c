// SPDX-License-Identifier: MIT
/*
 * The prompt's clauses: each line (or `load`) is compiled together with
 * the clauses still running, so map types stay consistent, and only its
 * own programs are loaded.  User maps are shared by name: the first
 * object that has @m creates it, later objects load with a copy of its
 * fd (docs/prompt.md).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <bpf/libbpf.h>

#include "lang/ast.h"
#include "probes/provider.h"
#include "runtime/btenv.h"
#include "runtime/agentctl.h"
#include "runtime/hostpath.h"
#include "runtime/inject.h"
#include "runtime/maps.h"
#include "runtime/prompt_priv.h"

/* Whether the tree at N (a list) calls printf, print or time. */
static bool prints(const struct node *n)
{
	for (; n; n = n->next) {
		if (n->kind == N_CALL && (!strcmp(n->str, "printf") ||
					  !strcmp(n->str, "print") ||
					  !strcmp(n->str, "time")))
			return true;
		if (prints(n->a) || prints(n->b) || prints(n->c) ||
		    prints(n->args))
			return true;
	}
	return false;
}

/* Offset of LINE:COL in TEXT. */
static size_t offset_of(const char *text, size_t len, struct loc l)
{
	size_t i = 0;

	for (int line = 1; line < l.line && i < len; i++)
		if (text[i] == '\n')
			line++;
	i += l.col - 1;
	return i < len ? i : len;
}

/* Append S (N bytes) to the growing buffer *BUF. */
static int append(char **buf, size_t *len, size_t *cap, const char *s,
		  size_t n)
{
	if (*len + n + 1 > *cap) {
		size_t c = (*len + n + 1) * 2;
		char *b = realloc(*buf, c);

		if (!b)
			return -ENOMEM;
		*buf = b;
		*cap = c;
	}
	memcpy(*buf + *len, s, n);
	*len += n;
	(*buf)[*len] = 0;
	return 0;
}

/* Earlier active clauses, one after the other, then TEXT. */
static char *join(struct prompt *p, const char *text, int *nold, int *base)
{
	size_t len = 0, cap = 0;
	char *buf = NULL;

	*nold = *base = 0;
	for (struct pr_gen *g = p->gens; g; g = g->next)
		for (int i = 0; i < g->ncl; i++) {
			const char *t = g->cl[i].text;

			if (!g->cl[i].active)
				continue;
			if (append(&buf, &len, &cap, t, strlen(t)) ||
			    append(&buf, &len, &cap, "\n", 1))
				goto nomem;
			(*nold)++;
		}
	for (size_t i = 0; i < len; i++)
		*base += buf[i] == '\n';
	if (append(&buf, &len, &cap, text, strlen(text)))
		goto nomem;
	return buf;
nomem:
	free(buf);
	return NULL;
}

static void gen_free(struct pr_gen *g)
{
	agentctl_free(g->ac);
	agent_config_free(&g->hcfg);
	free(g->host_maps);
	if (g->have_ds)
		device_set_free(&g->ds);
	if (g->have_obj) {
		gt_object_unload(&g->obj);
		cg_free(&g->obj);
	}
	unit_free(g->u);
	for (int i = 0; i < g->ncl; i++)
		free(g->cl[i].text);
	free(g->cl);
	free(g->owner);
	free(g->loaded);
	free(g->attached);
	free(g->all);
	free(g);
}

/* Which of our clauses (or extras, or an earlier clause) owns program I. */
static int owner_of(const struct pr_gen *g, int i)
{
	const struct probe *pr = g->obj.progs[i].probe;

	for (int k = 0; k < g->u->prog->nclauses; k++) {
		const struct clause_info *ci = &g->u->clauses[k];

		for (int j = 0; j < ci->nprobes; j++)
			if (ci->probes[j] == pr)
				return k >= g->first ? k - g->first : -2;
	}
	return -1;
}

/* Whether a running clause has a cuda: probe (a uprobe on libcuda). */
static bool cuda_running(const struct prompt *p)
{
	for (const struct pr_gen *g = p->gens; g; g = g->next)
		for (int i = 0; i < g->obj.nprogs; i++)
			if (g->owner[i] >= 0 && g->attached[i] &&
			    !strncmp(g->obj.progs[i].probe->name, "cuda:", 5))
				return true;
	return false;
}

/*
 * gpu: probes and cuda:complete run in the attached target through the
 * agent (CUPTI times the kernels there), one set at a time
 * (docs/prompt.md).  gpu:sample is a host probe but needs the agent too
 * (it turns PC sampling on at the next launch in each context).  Marks
 * G device.
 */
static int check_device(struct prompt *p, struct pr_gen *g, struct clause *cl)
{
	const struct clause_info *ci = &g->u->clauses[cl->index];

	for (int j = 0; j < ci->nprobes; j++) {
		const struct probe *pr = ci->probes[j];
		bool complete = !strncmp(pr->name, "cuda:complete", 13);
		const char *why = NULL;

		if (!pr->prov->device && !complete &&
		    pr->prov != &provider_gpu_sample)
			continue;
		else if (!p->pid)
			why = complete ? "cuda:complete needs a target: attach "
					 "PID first" :
			      "gpu: probes need a target: attach PID first";
		else if (p->dev)
			why = "gpu: or cuda:complete clauses are running "
			      "already: remove them first (the agent takes one "
			      "set at a time)";
		else if (cuda_running(p))
			why = "cuda: probes sit on libcuda's entry points, "
			      "which the agent patches: remove them first, and "
			      "add them again after the gpu: clause";
		if (why) {
			diag_error(cl->loc, "%s: %s", pr->name, why);
			return -EINVAL;
		}
		g->device = true;
	}
	return 0;
}

/* Load the agent into the target with G's gpu: and cuda:complete
 * clauses. */
static int start_agent(struct prompt *p, struct pr_gen *g)
{
	struct agentctl_opts ao = { .verbose = p->verbose,
				    .attach_pid = p->pid };
	const char *const *globs = NULL;
	int n;

	const char *const *sglobs;
	uint32_t period;
	int nsample = gpu_sample_globs(&g->obj, &sglobs, &period);

	if (inject_check(p->pid) ||
	    agentctl_open(&ao, &g->ac))
		return -EINVAL;
	agentctl_set_samples(g->ac, sglobs, nsample, period);
	n = cuda_complete_globs(&g->obj, &globs);
	if (n > 0)
		agentctl_set_completes(g->ac, globs, n);
	agentctl_set_complete_queued(g->ac, cuda_complete_queued(&g->obj));
	if (g->hcfg.nhprogs)
		agentctl_set_host(g->ac, &g->hcfg, g->host_maps);
	if (!agentctl_configure(g->ac, g->u, &g->ds)) {
		session_use_agent(&g->s, g->ac);
		if (!inject_agentctl(p->pid, g->ac, p->verbose))
			goto ok;
	}
	g->s.ac = NULL;
	agentctl_free(g->ac);
	g->ac = NULL;
	return -EIO;
ok:
	p->dev = g;
	/* cuda: clauses from now on read the agent's launches */
	provider_agent_lib = provider_hooked_lib = agentctl_lib(g->ac);
	return 0;
}

/* G's gpu: clauses are gone: the agent detaches, its last maps stay. */
static void stop_agent(struct prompt *p, struct pr_gen *g)
{
	if (!g->ac || g->ac_done)
		return;
	agentctl_snapshot_last(g->ac, 2000);
	agentctl_detach(g->ac);
	g->ac_done = true;
	if (p->dev == g) {
		p->dev = NULL;
		provider_agent_lib = provider_hooked_lib = NULL;
	}
}

/*
 * cuda:complete's uprobe is on the agent library, which a line compiles
 * against before the agent is in the target: its path, while no agent
 * runs (the one agentctl_open() will inject).  On a line that brings
 * the agent in (DEV), its cuda: uprobes go on the agent's wrappers too,
 * as with -p: the agent patches the driver's entry points, and a uprobe
 * there would leave it no room for its jump.
 */
static void agent_lib_for_compile(struct prompt *p, bool dev)
{
	static char *lib;

	if (p->dev || !p->pid || provider_agent_lib)
		return;
	if (!lib)
		lib = agentctl_find_lib(NULL);
	provider_agent_lib = lib;
	if (dev)
		provider_hooked_lib = lib;
}

/*
 * The line that brings the agent in: the agent runs its cuda: clauses,
 * as with -p (docs/hostpath.md), unless one of them writes a map an
 * earlier line has (printed from that line's side, which has no agent).
 * Programs the agent runs are neither loaded nor attached.
 */
static int host_select(struct prompt *p, struct pr_gen *g)
{
	int n;

	g->host_maps = calloc(g->obj.nmaps + 1, sizeof(*g->host_maps));
	if (!g->host_maps)
		return -ENOMEM;
	n = hostpath_select(&g->obj, g->u, p->verbose, &g->hcfg,
			    g->host_maps);
	for (int j = 0; j < g->obj.nmaps && n > 0; j++) {
		const char *name = g->obj.maps[j].name;

		if (!g->host_maps[j] || !pr_map_find(p, name))
			continue;
		if (p->verbose)
			fprintf(stderr, "gputrace: %s is an earlier line's map: this line's cuda: clauses run as kernel uprobes\n",
				name);
		for (int i = 0; i < g->obj.nprogs; i++)
			if (g->obj.progs[i].probe)
				g->obj.progs[i].probe->in_agent = false;
		agent_config_free(&g->hcfg);
		memset(g->host_maps, 0, g->obj.nmaps * sizeof(*g->host_maps));
		n = 0;
	}
	for (int i = 0; i < g->obj.nprogs && n > 0; i++)
		if (g->obj.progs[i].probe && g->obj.progs[i].probe->in_agent)
			g->loaded[i] = false;
	return n < 0 ? n : 0;
}

static bool has_device_progs(const struct gt_object *obj)
{
	for (int i = 0; i < obj->nprogs; i++)
		if (obj->progs[i].probe->prov->device)
			return true;
	return false;
}

int pr_agent_fd(struct prompt *p)
{
	return p->dev ? agentctl_fd(p->dev->ac) : -1;
}

void pr_agent_poll(struct prompt *p)
{
	if (p->dev)
		agentctl_poll(p->dev->ac, 0);
}

/* Give OBJ's user maps the fds of the shared ones; 0 or -EINVAL. */
static int share_maps(struct prompt *p, struct pr_gen *g)
{
	for (int i = 0; i < g->obj.nmaps; i++) {
		struct gt_map_def *d = &g->obj.maps[i];
		struct pr_map *m = d->name[0] == '@' ? pr_map_find(p, d->name) : NULL;
		const struct gt_map_def *s;

		if (!m)
			continue;
		s = &m->g->obj.maps[m->idx];
		if (s->type != d->type || s->key_size != d->key_size ||
		    s->value_size != d->value_size ||
		    s->max_entries != d->max_entries) {
			fprintf(stderr, "%s: error: %s holds values of another type "
				"(earlier clauses); use another name\n",
				g->src.name, d->name);
			return -EINVAL;
		}
		d->fd = dup(s->fd);
		if (d->fd < 0) {
			fprintf(stderr, "gputrace: %s: %s\n", d->name, strerror(errno));
			return -errno;
		}
	}
	return 0;
}

static bool map_written(const struct unit *u, const char *name)
{
	for (const struct map_sym *m = u->maps; m; m = m->next)
		if (!strcmp(m->name, name))
			return m->host || m->device;
	return false;
}

/* After a successful load: the maps new to the session are shared now. */
static void register_maps(struct prompt *p, struct pr_gen *g)
{
	for (int i = 0; i < g->obj.nmaps; i++) {
		const char *name = g->obj.maps[i].name;
		bool w = map_written(g->u, name);
		struct pr_map *m, *nm;

		if (name[0] != '@')
			continue;
		m = pr_map_find(p, name);
		if (m) {
			if (w && !m->written) {
				/* decode with the layout of a writer */
				m->g = g;
				m->idx = i;
				m->written = true;
			}
			continue;
		}
		nm = realloc(p->maps, (p->nmaps + 1) * sizeof(*nm));
		if (!nm)
			continue;	/* still works; not printed by name */
		p->maps = nm;
		nm[p->nmaps].name = g->obj.maps[i].name;
		nm[p->nmaps].g = g;
		nm[p->nmaps].idx = i;
		nm[p->nmaps].written = w;
		p->nmaps++;
	}
}

static void detach_prog(struct pr_gen *g, int i)
{
	struct probe *pr = g->obj.progs[i].probe;

	if (g->attached[i] && pr->prov->detach)
		pr->prov->detach(pr);
	g->attached[i] = false;
}

/*
 * Attach our programs: BEGIN and END first, then BEGIN runs, then the
 * others in reverse order (the kernel runs the last attached first, so
 * several probes on one function run in program order, as session.c).
 */
static int attach_gen(struct prompt *p, struct pr_gen *g)
{
	char err[4096];

	for (int pass = 0; pass < 3; pass++)
		for (int n = 0; n < g->obj.nprogs; n++) {
			int i = pass == 2 ? g->obj.nprogs - 1 - n : n;
			struct probe *pr = g->obj.progs[i].probe;
			bool fired = pr->prov->fire != NULL;

			/* gpu: probes: the agent installs them */
			if (!g->loaded[i] || fired != (pass < 2) ||
			    pr->prov->device)
				continue;
			if (pass == 1) {
				if (pr->prov == &provider_begin &&
				    pr->prov->fire(pr) < 0) {
					fprintf(stderr, "gputrace: could not run BEGIN\n");
					return -EIO;
				}
				ring_buffer__consume(p->rb);
				continue;
			}
			if (pr->prov->attach(pr, g->obj.progs[i].fd, err,
					     sizeof(err))) {
				fprintf(stderr, "gputrace: %s: %s\n", pr->name, err);
				return -EINVAL;
			}
			g->attached[i] = true;
			if (p->verbose)
				fprintf(stderr, "gputrace: attached %s\n", pr->name);
		}
	return 0;
}

/* Number the new clauses, keep their text, mark them running. */
static int take_clauses(struct prompt *p, struct pr_gen *g,
			struct program *prog)
{
	struct clause *cl = prog->clauses;

	g->ncl = prog->nclauses - g->first;
	g->cl = calloc(g->ncl, sizeof(*g->cl));
	if (!g->cl)
		return -ENOMEM;
	for (int k = 0; k < g->first; k++)
		cl = cl->next;
	for (int k = 0; cl; cl = cl->next, k++) {
		size_t a = offset_of(g->all, g->src.len, cl->loc);
		size_t b = cl->next ? offset_of(g->all, g->src.len, cl->next->loc) :
				      g->src.len;
		const struct clause_info *ci = &g->u->clauses[cl->index];

		while (b > a && (g->all[b - 1] == '\n' || g->all[b - 1] == ' '))
			b--;
		g->cl[k].text = strndup(g->all + a, b - a);
		if (!g->cl[k].text)
			return -ENOMEM;
		bool again = false;	/* fires more than once */

		for (int j = 0; j < ci->nprobes; j++) {
			const struct provider *pv = ci->probes[j]->prov;

			if (pv != &provider_begin && pv != &provider_end)
				again = true;
			if (pv != &provider_begin && pv != &provider_end &&
			    pv != &provider_interval)
				g->cl[k].scoped = true;
		}
		g->cl[k].prints = again && (prints(cl->body) || prints(cl->pred));
	}
	return 0;
}

/* Which programs to load: ours, and the providers' extras if we need them. */
static int plan_load(struct pr_gen *g)
{
	bool extras = false;
	int n = g->obj.nprogs;

	g->owner = calloc(n + 1, sizeof(*g->owner));
	g->loaded = calloc(n + 1, sizeof(*g->loaded));
	g->attached = calloc(n + 1, sizeof(*g->attached));
	if (!g->owner || !g->loaded || !g->attached)
		return -ENOMEM;
	for (int i = 0; i < n; i++) {
		g->owner[i] = owner_of(g, i);
		if (g->owner[i] >= 0 && g->obj.progs[i].probe->prov->extras)
			extras = true;
	}
	for (int i = 0; i < n; i++)
		g->loaded[i] = g->owner[i] >= 0 || (g->owner[i] == -1 && extras);
	return 0;
}

int pr_add(struct prompt *p, const char *name, const char *text)
{
	struct pr_gen *g = calloc(1, sizeof(*g));
	struct sema_opts sem = { .target_pid = p->pid };
	struct cg_opts copts = { .start_ns = p->start_ns,
				 .map_keys_max = btenv.map_keys_max };
	struct program *prog = NULL;
	char err[4096];
	int base, ret = -EINVAL;
	bool sema_check_failed;

	if (!g)
		return -ENOMEM;
	g->all = join(p, text, &g->first, &base);
	if (!g->all) {
		free(g);
		return -ENOMEM;
	}
	g->src = (struct source){ .name = name, .text = g->all,
				  .len = strlen(g->all), .line_base = base };
	diag_reset();
	if (ast_parse(&g->src, &prog))
		goto fail;
	if (prog->nclauses == g->first) {
		fprintf(stderr, "%s: error: no probe clause\n", name);
		goto fail;
	}
	agent_lib_for_compile(p, hostpath_needs_agent(prog, g->first));
	sema_check_failed = sema_check(prog, &sem, &g->u) != 0;
	if (!p->dev)	/* until start_agent() */
		provider_agent_lib = NULL;
	ret = -EINVAL;
	if (sema_check_failed)
		goto fail;
	for (struct clause *cl = prog->clauses; cl; cl = cl->next)
		if (cl->index >= g->first && check_device(p, g, cl))
			goto fail;
	g->have_obj = true;
	ret = cg_build(g->u, &copts, &g->obj);
	/* the hidden naming probes came with it (cuda: extras) */
	if (!p->dev)
		provider_hooked_lib = NULL;
	if (ret)
		goto fail;
	ret = -EINVAL;
	if (g->device && has_device_progs(&g->obj)) {
		if (device_verify(g->u, &g->obj, NULL) ||
		    device_lower(g->u, &g->obj, &g->ds))
			goto fail;
		g->have_ds = true;
	}
	ret = -ENOMEM;
	if (take_clauses(p, g, prog) || plan_load(g) ||
	    (g->device && host_select(p, g)))
		goto fail;
	ret = share_maps(p, g);
	if (ret)
		goto fail;
	ret = gt_object_load_part(&g->obj, g->loaded, err, sizeof(err));
	if (ret) {
		fprintf(stderr, "gputrace: %s\n", err);
		goto fail;
	}
	g->s = (struct session){ .u = g->u, .obj = &g->obj, .o = p->o };
	int efd = g->obj.maps[cg_events_map(g->u)].fd;

	ret = p->rb ? ring_buffer__add(p->rb, efd, session_on_event, &g->s) : 0;
	if (!p->rb)
		p->rb = ring_buffer__new(efd, session_on_event, &g->s, NULL);
	if (ret || !p->rb) {
		fprintf(stderr, "gputrace: cannot open the event ring buffer\n");
		ret = -EIO;
		goto fail;
	}
	/* from here on the ring buffer knows our map: G stays in the list */
	*p->tail = g;
	p->tail = &g->next;
	register_maps(p, g);
	for (int k = 0; k < g->ncl; k++) {
		g->cl[k].id = ++p->next_id;
		g->cl[k].active = true;
	}
	if (!p->quiet) {
		/* before BEGIN runs, as bpftrace's "Attaching N probes..." */
		int n = 0;

		for (int i = 0; i < g->obj.nprogs; i++)
			n += g->owner[i] >= 0;
		printf("Attaching %d probe%s (id %d", n, n == 1 ? "" : "s",
		       g->cl[0].id);
		if (g->ncl > 1)
			printf("-%d", g->cl[g->ncl - 1].id);
		printf(")...\n");
		fflush(stdout);
	}
	ret = attach_gen(p, g);
	if (!ret && g->device)
		ret = start_agent(p, g);
	if (ret) {
		for (int k = 0; k < g->ncl; k++)
			pr_remove(p, g->cl[k].id);
		return ret;
	}
	return 0;
fail:
	if (!p->dev)
		provider_hooked_lib = NULL;
	if (diag_hidden_errors())
		fputs("gputrace: an earlier clause no longer compiles (the "
		      "target changed?); remove it\n", stderr);
	diag_reset();
	gen_free(g);
	return ret;
}

static void gen_idle(struct prompt *p, struct pr_gen *g)
{
	for (int k = 0; k < g->ncl; k++)
		if (g->cl[k].active)
			return;
	stop_agent(p, g);
	/* no clause left: the providers' extras go too */
	for (int i = 0; i < g->obj.nprogs; i++)
		if (g->owner[i] == -1)
			detach_prog(g, i);
}

static void remove_clause(struct prompt *p, struct pr_gen *g, int k)
{
	for (int i = 0; i < g->obj.nprogs; i++) {
		if (g->owner[i] != k)
			continue;
		detach_prog(g, i);
		if (g->obj.progs[i].fd >= 0)
			close(g->obj.progs[i].fd);
		g->obj.progs[i].fd = -1;
		g->loaded[i] = false;
	}
	g->cl[k].active = false;
	gen_idle(p, g);
}

int pr_remove(struct prompt *p, int id)
{
	for (struct pr_gen *g = p->gens; g; g = g->next)
		for (int k = 0; k < g->ncl; k++)
			if (g->cl[k].id == id && g->cl[k].active) {
				remove_clause(p, g, k);
				return 0;
			}
	return -ENOENT;
}

void pr_list(struct prompt *p)
{
	int n = 0;

	for (struct pr_gen *g = p->gens; g; g = g->next)
		for (int k = 0; k < g->ncl; k++) {
			const char *t = g->cl[k].text;
			int len = strcspn(t, "\n");

			if (!g->cl[k].active)
				continue;
			printf("%3d  %.*s%s\n", g->cl[k].id, len > 100 ? 100 : len, t,
			       len > 100 || t[len] ? " ..." : "");
			n++;
		}
	if (!n)
		printf("no probes\n");
}

void pr_detach(struct prompt *p)
{
	for (struct pr_gen *g = p->gens; g; g = g->next)
		for (int k = 0; k < g->ncl; k++)
			if (g->cl[k].active && g->cl[k].scoped) {
				remove_clause(p, g, k);
				printf("removed probe %d\n", g->cl[k].id);
			}
	p->pid = 0;
}

int pr_stop_printing(struct prompt *p)
{
	int n = 0;

	for (struct pr_gen *g = p->gens; g; g = g->next)
		for (int k = 0; k < g->ncl; k++)
			if (g->cl[k].active && g->cl[k].prints) {
				remove_clause(p, g, k);
				printf("stopped probe %d\n", g->cl[k].id);
				n++;
			}
	return n;
}

int pr_ring_fd(struct prompt *p)
{
	return p->rb ? ring_buffer__epoll_fd(p->rb) : -1;
}

/* Events and lost-event counts; the number of records handled. */
int pr_poll(struct prompt *p)
{
	int n;

	if (!p->rb)
		return 0;
	n = ring_buffer__consume(p->rb);
	for (struct pr_gen *g = p->gens; g; g = g->next)
		session_report_lost(&g->s);
	fflush(p->o->f);
	return n;
}

bool pr_exiting(struct prompt *p, int *code)
{
	for (struct pr_gen *g = p->gens; g; g = g->next)
		if (g->s.exiting) {
			*code = g->s.exit_code;
			return true;
		}
	return false;
}

struct pr_map *pr_map_find(struct prompt *p, const char *name)
{
	for (int i = 0; i < p->nmaps; i++)
		if (!strcmp(p->maps[i].name, name))
			return &p->maps[i];
	return NULL;
}

/* The device maps as they are now (before printing). */
static void dev_snapshot(struct prompt *p)
{
	if (p->dev)
		agentctl_snapshot(p->dev->ac, 1000);
}

void pr_print_map(struct prompt *p, struct pr_map *m)
{
	dev_snapshot(p);
	session_print_map(&m->g->s, m->idx, 0, 0);
	fflush(p->o->f);
}

static int cmp_map(const void *a, const void *b)
{
	const struct pr_map *x = a, *y = b;

	return strcmp(x->name, y->name);
}

void pr_print_all(struct prompt *p, bool at_exit)
{
	dev_snapshot(p);
	if (p->nmaps)
		qsort(p->maps, p->nmaps, sizeof(*p->maps), cmp_map);
	if (at_exit && p->nmaps)
		out_exit_begin(p->o);
	for (int i = 0; i < p->nmaps; i++)
		if (p->maps[i].written)
			session_print_map(&p->maps[i].g->s, p->maps[i].idx, 0, 0);
	fflush(p->o->f);
}

/*
 * The kernel's part and the agent's (gpu: clauses, the cuda: clauses it
 * runs): its images as they are now become the base printing subtracts,
 * as for clear() in a probe (session.c).
 */
int pr_clear(struct prompt *p, struct pr_map *m)
{
	if (p->dev == m->g)
		agentctl_snapshot(m->g->ac, 1000);
	agentctl_clear(m->g->s.ac, m->idx);
	return maps_clear(&m->g->obj, m->idx);
}

/* Leaving: detach, run END, print the maps, free everything. */
int pr_end(struct prompt *p)
{
	int code = 0;

	for (struct pr_gen *g = p->gens; g; g = g->next)
		for (int i = 0; i < g->obj.nprogs; i++)
			if (!g->obj.progs[i].probe->prov->fire)
				detach_prog(g, i);
	pr_poll(p);
	pr_exiting(p, &code);
	for (struct pr_gen *g = p->gens; g; g = g->next) {
		g->s.exiting = false;	/* END runs even after exit() */
		for (int i = 0; i < g->obj.nprogs; i++) {
			struct probe *pr = g->obj.progs[i].probe;

			if (g->attached[i] && pr->prov == &provider_end) {
				pr->prov->fire(pr);
				ring_buffer__consume(p->rb);
			}
		}
	}
	pr_poll(p);
	if (p->dev)
		stop_agent(p, p->dev);
	pr_print_all(p, true);
	for (struct pr_gen *g = p->gens; g; g = g->next)
		for (int i = 0; i < g->obj.nprogs; i++)
			detach_prog(g, i);
	ring_buffer__free(p->rb);
	p->rb = NULL;
	while (p->gens) {
		struct pr_gen *g = p->gens;

		p->gens = g->next;
		gen_free(g);
	}
	p->tail = &p->gens;
	free(p->maps);
	p->maps = NULL;
	p->nmaps = 0;
	return code;
}
