// SPDX-License-Identifier: MIT
/*
 * Which cuda: clauses run inside the agent (docs/hostpath.md) rather
 * than as kernel uprobes, and the part of the agent's configuration that
 * carries them: the programs as compiled for the kernel, and what each
 * map they use becomes in the agent.
 */
#define _GNU_SOURCE
#include <asm/ptrace.h>
#include <errno.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compiler/codegen.h"
#include "gpucode/hbpf.h"
#include "lang/ast.h"
#include "probes/cuda_priv.h"
#include "probes/provider.h"
#include "runtime/hostevents.h"
#include "runtime/hostpath.h"
#include "runtime/inject.h"

bool hostpath_off(void)
{
	const char *e = getenv(HOSTPATH_ENV_UPROBES);

	return e && *e && strcmp(e, "0");
}

/* Whether the tree at N takes a stack (ustack, kstack). */
static bool takes_stack(const struct node *n)
{
	for (; n; n = n->next) {
		if (n->str && (!strcmp(n->str, "ustack") ||
			       !strcmp(n->str, "kstack")))
			return true;
		if (takes_stack(n->a) || takes_stack(n->b) ||
		    takes_stack(n->c) || takes_stack(n->args))
			return true;
	}
	return false;
}

/* The cuda: events whose clauses the agent may run (at its hooks). */
static bool agent_event(const char *ev)
{
	static const char *const evs[] = {
		"launch", "malloc", "free", "memcpy", "sync", "graph",
	};

	for (size_t i = 0; i < sizeof(evs) / sizeof(evs[0]); i++)
		if (!fnmatch(ev, evs[i], 0))
			return true;
	return false;
}

/* The event of a cuda: probe's TEXT ("cuda:EV[:GLOB|@...]") into EV. */
static void cuda_event(const char *text, char *ev, size_t n)
{
	snprintf(ev, n, "%.*s", (int)strcspn(text + 5, ":@"), text + 5);
}

/*
 * The agent is started for cuda:launch, malloc, free, memcpy, sync and
 * graph clauses, unless a cuda: clause takes a stack: the agent's wrappers
 * sit between the program and the driver, so a kernel uprobe's stack
 * would show them (the stacks stay as they are without the agent).
 */
bool hostpath_wanted(const struct program *prog, bool verbose)
{
	bool launch = false;
	char ev[64];

	for (const struct clause *c = prog->clauses; c; c = c->next)
		for (const struct attach *a = c->aps; a; a = a->next) {
			if (strncmp(a->text, "cuda:", 5))
				continue;
			if (takes_stack(c->pred) || takes_stack(c->body))
				return false;
			cuda_event(a->text, ev, sizeof(ev));
			if (agent_event(ev))
				launch = true;
		}
	if (launch && hostpath_off()) {
		if (verbose)
			fprintf(stderr, "gputrace: %s=1: cuda: clauses run as kernel uprobes\n",
				HOSTPATH_ENV_UPROBES);
		return false;
	}
	return launch;
}

bool hostpath_needs_agent(const struct program *prog, int from)
{
	char ev[64];

	for (const struct clause *c = prog->clauses; c; c = c->next) {
		if (c->index < from)
			continue;
		for (const struct attach *a = c->aps; a; a = a->next) {
			if (!strncmp(a->text, "gpu:", 4))
				return true;
			if (strncmp(a->text, "cuda:", 5))
				continue;
			cuda_event(a->text, ev, sizeof(ev));
			if (!fnmatch(ev, "complete", 0))
				return true;
		}
	}
	return false;
}

static const struct map_sym *sym_of(const struct unit *u, int index)
{
	for (const struct map_sym *m = u->maps; m; m = m->next)
		if (m->index == index)
			return m;
	return NULL;
}

/* What map J of OBJ is to the agent. */
static void role_of(const struct gt_object *obj, const struct unit *u,
		    const struct cuda_shared *sh, int j, struct agent_hmap *h)
{
	const struct gt_map_def *d = &obj->maps[j];
	const struct map_sym *m = j < u->nmaps ? sym_of(u, j) : NULL;
	const struct map_layout *ml = m ? d->meta : NULL;

	memset(h, 0, sizeof(*h));
	h->key_size = d->key_size;
	h->value_size = d->value_size;
	if (m && ml && d->type == GT_MT_PERCPU_HASH && m->val &&
	    m->val->kind == T_AGG && m->val->agg != AGG_SMLOAD) {
		h->role = AGENT_HM_AGG;
		h->devmap = j;
		h->bucket = ml->has_bucket;
	} else if (sh && j == sh->names_map) {
		h->role = AGENT_HM_NAMES;
	} else if (j == cg_events_map(u)) {
		h->role = AGENT_HM_EVENTS;
	} else if (j == cg_lost_map(u)) {
		h->role = AGENT_HM_LOST;
	} else if (sh && j == sh->calls_map) {
		h->role = AGENT_HM_CALLS;
	}
}

static int entry_of(const char *func)
{
#define NAME_(name, sym, kind)	[AGENT_HE_##name] = sym,
	static const char *const names[AGENT_HE_END_] = {
		AGENT_HENTRIES(NAME_)
	};
#undef NAME_

	for (int i = 0; i < AGENT_HE_END_; i++)
		if (func && !strcmp(func, names[i]))
			return i;
	return -1;
}

/*
 * Why program P (of OBJ, whose maps are HM) cannot run in the agent, or
 * NULL; WHY holds the text.
 */
static const char *refuse(const struct gt_bpf_prog *prog,
			  const struct agent_hmap *hm, int nmaps,
			  bool events_ok, char *why, size_t len)
{
	const struct probe *p = prog->probe;
	struct hbpf_map *maps = calloc(nmaps + 1, sizeof(*maps));
	struct hbpf_prog hp = {
		.insns = prog->insns, .n = prog->ninsns, .maps = maps,
		.nmaps = nmaps, .ctx_size = sizeof(struct pt_regs),
	};
	char err[256];
	int helper, e;

	if (!maps) {
		snprintf(why, len, "out of memory");
		return why;
	}
	if (entry_of(p->func) < 0) {
		snprintf(why, len, "the agent has no hook on %s yet", p->func);
		goto out;
	}
	for (int j = 0; j < nmaps; j++) {
		maps[j].key_size = hm[j].key_size;
		maps[j].value_size = hm[j].value_size;
		maps[j].ring = hm[j].role == AGENT_HM_EVENTS;
	}
	for (size_t i = 0; i < prog->ninsns; i++) {
		const struct bpf_insn *in = &prog->insns[i];

		if (in->code == (BPF_JMP | BPF_CALL) &&
		    (in->imm == BPF_FUNC_map_delete_elem ||
		     in->imm == BPF_FUNC_ringbuf_reserve ||
		     (in->imm == BPF_FUNC_ringbuf_output && !events_ok))) {
			snprintf(why, len, "%s",
				 in->imm == BPF_FUNC_map_delete_elem ?
				 "delete() is not in the agent yet" :
				 in->imm == BPF_FUNC_ringbuf_reserve ?
				 "join() is not in the agent yet" :
				 "the program has cat(), system() or join(), whose events the tracer takes from the kernel only");
			goto out;
		}
	}
	for (size_t i = 0; i < prog->ninsns; i++) {
		const struct bpf_insn *in = &prog->insns[i];

		if (in->code != (BPF_LD | BPF_IMM | BPF_DW) ||
		    in->src_reg != BPF_PSEUDO_MAP_FD)
			continue;
		if (in->imm < 0 || in->imm >= nmaps ||
		    (hm[in->imm].role != AGENT_HM_AGG &&
		     hm[in->imm].role != AGENT_HM_NAMES &&
		     hm[in->imm].role != AGENT_HM_CALLS &&
		     !(events_ok && (hm[in->imm].role == AGENT_HM_EVENTS ||
				       hm[in->imm].role == AGENT_HM_LOST)))) {
			snprintf(why, len, "map %d is not an aggregation the agent keeps",
				 in->imm);
			goto out;
		}
	}
	e = hbpf_verify(&hp, &helper, err, sizeof(err));
	if (e == -EOPNOTSUPP)
		snprintf(why, len, "helper %d is the kernel's only", helper);
	else if (e)
		snprintf(why, len, "%s", err);
	else
		why = NULL;
	free(maps);
	return why;
out:
	free(maps);
	return why;
}

/*
 * A hidden saver (the entry value of a return-time event: malloc's
 * size, sync's start) serves the clauses on its entry point; where the
 * agent runs them all, the agent has the value itself, and the saver's
 * uprobe would only cost a trap per call: it is not attached either.
 */
static void drop_savers(struct gt_object *obj)
{
	for (int i = 0; i < obj->nprogs; i++) {
		struct probe *h = obj->progs[i].probe;
		const struct cuda_priv *hv = h ? h->priv : NULL;
		bool used = false;

		if (!h || h->prov != &provider_cuda || !hv || !hv->hidden ||
		    (hv->what != CH_SAVE_ARG1 && hv->what != CH_SAVE_PITCH &&
		     hv->what != CH_SAVE_TIME))
			continue;
		for (int k = 0; k < obj->nprogs && !used; k++) {
			const struct probe *q = obj->progs[k].probe;
			const struct cuda_priv *qv = q ? q->priv : NULL;

			used = q && q->prov == &provider_cuda && qv &&
			       !qv->hidden && !q->in_agent && q->func &&
			       h->func && !strcmp(q->func, h->func);
		}
		h->in_agent = !used;
	}
}

/*
 * The hidden programs that name kernel handles (uprobes on
 * cuModuleGetFunction, cuLibraryGetKernel, cuKernelGetFunction, entry
 * and return) feed .cuda_names for cuda:launch programs on the kernel
 * path.  When every launch program runs in the agent, the agent names
 * handles itself: the uprobes would only cost a trap (two with the
 * return) each time the program or the CUDA runtime asks for a handle,
 * which a runtime may do at every launch.  So they are neither loaded
 * nor attached (they still count in "Attaching N probes").
 */
static void namers_off(struct gt_object *obj, bool verbose)
{
	int namers = 0;

	for (int i = 0; i < obj->nprogs; i++) {
		const struct probe *p = obj->progs[i].probe;
		const struct cuda_priv *pv = p ? p->priv : NULL;

		if (!p || p->prov != &provider_cuda || !pv || pv->hidden ||
		    p->in_agent)
			continue;
		if (pv->ent && (pv->ent->lay == CL_LAUNCH ||
				pv->ent->lay == CL_LAUNCH_EX))
			return;	/* reads .cuda_names in the kernel */
	}
	for (int i = 0; i < obj->nprogs; i++) {
		struct probe *p = obj->progs[i].probe;
		const struct cuda_priv *pv = p ? p->priv : NULL;

		if (p && p->prov == &provider_cuda && pv && pv->hidden &&
		    (pv->what == CH_NAME_ENTRY || pv->what == CH_KERNEL_ENTRY ||
		     pv->what == CH_NAME_RET)) {
			p->in_agent = true;
			namers++;
		}
	}
	if (verbose && namers)
		fprintf(stderr, "gputrace: cuda: kernel handles are named by the agent: %d naming uprobes not attached\n",
			namers);
}

int hostpath_select(struct gt_object *obj, const struct unit *u,
		    bool verbose, struct agent_config *hc, bool *host_maps)
{
	const struct cuda_shared *sh = NULL;
	bool events_ok = hostev_unit_ok(u);
	char why[300];
	int n = 0;

	memset(hc, 0, sizeof(*hc));
	/*
	 * The agent's events reach the tracer as records of the kernel
	 * ring's form, each checked against its kind (runtime/hostevents.c):
	 * one event the tracer takes from the kernel only (cat, system,
	 * join) anywhere keeps every clause that sends events there.
	 */
	for (int i = 0; i < obj->nprogs && !sh; i++) {
		const struct probe *q = obj->progs[i].probe;
		const struct cuda_priv *pv = q ? q->priv : NULL;

		if (q && q->prov == &provider_cuda && pv && pv->sh)
			sh = pv->sh;
	}
	if (!sh)
		return 0;
	if (hostpath_off())
		return 0;
	hc->hmaps = calloc(obj->nmaps + 1, sizeof(*hc->hmaps));
	hc->hprogs = calloc(obj->nprogs + 1, sizeof(*hc->hprogs));
	if (!hc->hmaps || !hc->hprogs)
		return -ENOMEM;
	hc->nhmaps = obj->nmaps;
	for (int j = 0; j < obj->nmaps; j++)
		role_of(obj, u, sh, j, &hc->hmaps[j]);
	for (int i = 0; i < obj->nprogs; i++) {
		struct gt_bpf_prog *prog = &obj->progs[i];
		struct probe *p = prog->probe;
		const struct cuda_priv *pv = p ? p->priv : NULL;
		struct agent_hprog *hp;
		const char *no;

		if (!p || p->prov != &provider_cuda || !pv || pv->hidden)
			continue;
		no = refuse(prog, hc->hmaps, obj->nmaps, events_ok, why,
			    sizeof(why));
		if (no) {
			if (verbose)
				fprintf(stderr, "gputrace: %s@%s runs as a kernel uprobe: %s\n",
					p->name, p->func, no);
			continue;
		}
		hp = &hc->hprogs[hc->nhprogs];
		hp->entry = entry_of(p->func);
		hp->ninsns = prog->ninsns;
		hp->insns = malloc(prog->ninsns * sizeof(*hp->insns));
		if (!hp->insns)
			return -ENOMEM;
		memcpy(hp->insns, prog->insns, prog->ninsns * sizeof(*hp->insns));
		hc->nhprogs++;
		p->in_agent = true;
		for (size_t k = 0; k < prog->ninsns; k++) {
			const struct bpf_insn *in = &prog->insns[k];

			if (in->code == (BPF_LD | BPF_IMM | BPF_DW) &&
			    in->src_reg == BPF_PSEUDO_MAP_FD &&
			    hc->hmaps[in->imm].role == AGENT_HM_AGG)
				host_maps[in->imm] = true;
		}
		if (verbose)
			fprintf(stderr, "gputrace: %s@%s runs in the agent\n",
				p->name, p->func);
		n++;
	}
	if (n) {
		drop_savers(obj);
		namers_off(obj, verbose);
	}
	/* the GLOBs in bit order: the agent matches them itself */
	if (n && sh->nglobs) {
		hc->hglobs = calloc(sh->nglobs, sizeof(*hc->hglobs));
		if (!hc->hglobs)
			return -ENOMEM;
		for (; hc->nhglobs < sh->nglobs; hc->nhglobs++)
			if (!(hc->hglobs[hc->nhglobs] =
			      strdup(sh->globs[hc->nhglobs])))
				return -ENOMEM;
	}
	return n;
}

bool hostpath_attach_wanted(const struct program *prog, int pid, bool verbose)
{
	char why[512];

	if (!hostpath_wanted(prog, verbose))
		return false;
	if (inject_why(pid, why, sizeof(why))) {
		if (verbose)
			fprintf(stderr, "gputrace: cuda: clauses run as kernel uprobes: %s\n",
				why);
		return false;
	}
	return true;
}

int hostpath_fallback(struct gt_object *obj, const char *lib, char *err,
		      size_t errlen)
{
	bool *load = calloc(obj->nprogs + 1, sizeof(*load));
	int *fds = calloc(obj->nprogs + 1, sizeof(*fds));
	int e = -ENOMEM;

	if (!load || !fds) {
		snprintf(err, errlen, "out of memory");
		goto out;
	}
	for (int i = 0; i < obj->nprogs; i++) {
		struct probe *p = obj->progs[i].probe;

		fds[i] = obj->progs[i].fd;
		load[i] = p && p->in_agent;
		if (p)
			p->in_agent = false;
	}
	e = cuda_unhook(obj, lib);
	if (e) {
		snprintf(err, errlen, "a cuda: probe is not in the driver");
		goto out;
	}
	/* the namers read .cuda_match now: the fatbins' kernels */
	e = cuda_match_prepare(obj, err, errlen);
	if (e)
		goto out;
	/* the programs the agent was to run; the others keep their fds */
	e = gt_object_load_part(obj, load, err, errlen);
	if (!e)
		for (int i = 0; i < obj->nprogs; i++)
			if (!load[i])
				obj->progs[i].fd = fds[i];
out:
	free(load);
	free(fds);
	return e;
}
