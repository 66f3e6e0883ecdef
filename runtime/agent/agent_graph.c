// SPDX-License-Identifier: MIT
/*
 * Kernels in CUDA graphs.  A stream capture records the launches that
 * reach agent_launch, which already puts the instrumented copy and its
 * launch parameter into the captured node.  Graphs built by hand get the
 * same substitution where their kernel nodes are made or changed:
 * cuGraphAddKernelNode, cuGraphAddNode, the node and exec-node
 * SetParams calls.  The driver copies a node's parameter values when the
 * call is made, so the launch parameter can live on our stack; clones,
 * child graphs, cuGraphExecUpdate and every instantiation then carry the
 * instrumented copy without more work.  A node's launch parameter is
 * taken once, when the node is made: `launch` and `launch_ns` are those
 * of that moment for every launch of the graph (docs/agent.md).
 */
#ifdef GT_AGENT_SO
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include "runtime/agent/agent_priv.h"

/* A kernel node's parameters with the instrumented copy in place. */
struct node_sub {
	CUDA_KERNEL_NODE_PARAMS_v2 kp;
	struct agent_launch_param lp;
	void *small[32], **params;
	uint64_t xbuf[512];
	void *xout[5];
};

/*
 * KP (the v2 layout; V1: only the fields before `kern`) names a kernel a
 * clause matches: fill S with the parameters to give the driver instead
 * and return true.  False: pass KP on untouched.
 */
static bool node_sub(const CUDA_KERNEL_NODE_PARAMS_v2 *kp, bool v2,
		     struct node_sub *s)
{
	struct agent_kernel *k;
	struct agent_inst *in;
	uintptr_t h;
	CUcontext ctx = NULL;
	size_t xsize;

	if (!kp || !agent_tracing() || agent.detached)
		return false;
	agent_saw_cuda();
	h = (uintptr_t)kp->func;
	if (!h && v2) {
		h = (uintptr_t)kp->kern;
		ctx = kp->ctx;
	}
	k = h ? agent_kernel_get(h) : NULL;
	if (!k || !agent_kernel_matched(k))
		return false;
	if (!ctx && agent_drv.ctx_get_current(&ctx) != CUDA_SUCCESS)
		return false;
	in = ctx ? agent_kernel_inst(k, ctx) : NULL;
	if (!in || !in->fn)
		return false;
	agent_inst_fit_smem(k, in, kp->sharedMemBytes);
	memset(s, 0, sizeof(*s));
	memcpy(&s->kp, kp, v2 ? sizeof(s->kp) :
	       sizeof(CUDA_KERNEL_NODE_PARAMS_v1));
	agent_param_fill(&s->lp, k, in);
	if (kp->extra) {
		if (kp->kernelParams ||
		    agent_extra_build(kp->extra, &s->lp, in->ctx_off, s->xbuf,
				      sizeof(s->xbuf), &xsize, s->xout) < 0) {
			agent_report_once("not instrumented in a graph: %s: "
					  "unsupported `extra` form",
					  k->pretty);
			return false;
		}
		s->kp.extra = s->xout;
	} else {
		if (in->nparams > 0 && !kp->kernelParams)
			return false;	/* invalid: the driver says so */
		s->params = agent_params_append(kp->kernelParams, in->nparams,
						&s->lp, s->small,
						sizeof(s->small) /
						sizeof(s->small[0]));
		if (!s->params)
			return false;
		s->kp.kernelParams = s->params;
	}
	s->kp.func = in->fn;	/* with func set, kern and ctx are unused */
	s->kp.kern = NULL;
	s->kp.ctx = NULL;
	return true;
}

static void node_sub_done(struct node_sub *s)
{
	if (s->params && s->params != s->small)
		free(s->params);
}

/*
 * Run CALL with the node parameters in P (type T, V2 layout or not)
 * swapped for their instrumented form when a clause matches the kernel.
 */
#define WITH_SUB(T, P, V2, CALL) \
	do { \
		struct node_sub s_; \
		const T *p_ = (P); \
		CUresult r_; \
		if (!node_sub((const CUDA_KERNEL_NODE_PARAMS_v2 *)p_, V2, &s_)) \
			return (CALL); \
		p_ = (const T *)&s_.kp; \
		r_ = (CALL); \
		node_sub_done(&s_); \
		return r_; \
	} while (0)

CUresult gt_graph_add_kernel(CUgraphNode *n, CUgraph g, const CUgraphNode *d,
			     size_t nd, const CUDA_KERNEL_NODE_PARAMS_v1 *p)
{
	REAL(graph_add_kernel);
	WITH_SUB(CUDA_KERNEL_NODE_PARAMS_v1, p, false,
		 agent_drv.graph_add_kernel(n, g, d, nd, p_));
}

CUresult gt_graph_add_kernel_v2(CUgraphNode *n, CUgraph g,
				const CUgraphNode *d, size_t nd,
				const CUDA_KERNEL_NODE_PARAMS_v2 *p)
{
	REAL(graph_add_kernel_v2);
	WITH_SUB(CUDA_KERNEL_NODE_PARAMS_v2, p, true,
		 agent_drv.graph_add_kernel_v2(n, g, d, nd, p_));
}

CUresult gt_kernel_node_set(CUgraphNode n, const CUDA_KERNEL_NODE_PARAMS_v1 *p)
{
	REAL(kernel_node_set);
	WITH_SUB(CUDA_KERNEL_NODE_PARAMS_v1, p, false,
		 agent_drv.kernel_node_set(n, p_));
}

CUresult gt_kernel_node_set_v2(CUgraphNode n,
			       const CUDA_KERNEL_NODE_PARAMS_v2 *p)
{
	REAL(kernel_node_set_v2);
	WITH_SUB(CUDA_KERNEL_NODE_PARAMS_v2, p, true,
		 agent_drv.kernel_node_set_v2(n, p_));
}

CUresult gt_exec_kernel_node_set(CUgraphExec e, CUgraphNode n,
				 const CUDA_KERNEL_NODE_PARAMS_v1 *p)
{
	REAL(exec_kernel_node_set);
	WITH_SUB(CUDA_KERNEL_NODE_PARAMS_v1, p, false,
		 agent_drv.exec_kernel_node_set(e, n, p_));
}

CUresult gt_exec_kernel_node_set_v2(CUgraphExec e, CUgraphNode n,
				    const CUDA_KERNEL_NODE_PARAMS_v2 *p)
{
	REAL(exec_kernel_node_set_v2);
	WITH_SUB(CUDA_KERNEL_NODE_PARAMS_v2, p, true,
		 agent_drv.exec_kernel_node_set_v2(e, n, p_));
}

/*
 * A node's parameters read back name the kernel as it was given, not our
 * copy: the CUDA runtime maps the handle back to its own entry and knows
 * nothing of our module.  The launch parameter stays in kernelParams,
 * past the kernel's own, where setting them again ignores it.
 */
static void node_unsub(CUfunction *func, CUkernel *kern)
{
	struct agent_kernel *k;
	CUfunction f = NULL;

	if (!*func || !agent_tracing())
		return;
	k = agent_kernel_get((uintptr_t)*func);
	if (!k || k->handle == (uintptr_t)*func)
		return;
	agent_debug("graph node of %s read back", k->pretty);
	if (!k->is_kernel)
		f = (CUfunction)k->handle;
	else if (agent_drv.kernel_get_function)
		agent_drv.kernel_get_function(&f, (CUkernel)k->handle);
	*func = f;
	/* the runtime finds its entry by the CUkernel, which the driver
	 * fills in for functions of a library */
	if (kern)
		*kern = (CUkernel)(k->is_kernel ? k->handle : k->kern);
}

CUresult gt_kernel_node_get(CUgraphNode n, CUDA_KERNEL_NODE_PARAMS_v1 *p)
{
	CUresult r;

	REAL(kernel_node_get);
	r = agent_drv.kernel_node_get(n, p);
	if (r == CUDA_SUCCESS && p)
		node_unsub(&p->func, NULL);
	return r;
}

CUresult gt_kernel_node_get_v2(CUgraphNode n, CUDA_KERNEL_NODE_PARAMS_v2 *p)
{
	CUresult r;

	REAL(kernel_node_get_v2);
	r = agent_drv.kernel_node_get_v2(n, p);
	if (r == CUDA_SUCCESS && p)
		node_unsub(&p->func, &p->kern);
	return r;
}

/*
 * The generic node calls: a kernel node's parameters are the v3 layout
 * (the v2 one) inside CUgraphNodeParams; other node types pass through.
 */
#define WITH_NODE_SUB(P, CALL) \
	do { \
		struct node_sub s_; \
		CUgraphNodeParams np_, *p_ = (P); \
		CUresult r_; \
		if (!p_ || p_->type != CU_GRAPH_NODE_TYPE_KERNEL || \
		    !node_sub((const CUDA_KERNEL_NODE_PARAMS_v2 *)&p_->kernel, \
			      true, &s_)) \
			return (CALL); \
		np_ = *p_; \
		memcpy(&np_.kernel, &s_.kp, sizeof(s_.kp)); \
		p_ = &np_; \
		r_ = (CALL); \
		node_sub_done(&s_); \
		return r_; \
	} while (0)

CUresult gt_graph_add_node(CUgraphNode *n, CUgraph g, const CUgraphNode *d,
			   size_t nd, CUgraphNodeParams *p)
{
	REAL(graph_add_node);
	WITH_NODE_SUB(p, agent_drv.graph_add_node(n, g, d, nd, p_));
}

CUresult gt_graph_add_node_v2(CUgraphNode *n, CUgraph g,
			      const CUgraphNode *d, const CUgraphEdgeData *e,
			      size_t nd, CUgraphNodeParams *p)
{
	REAL(graph_add_node_v2);
	WITH_NODE_SUB(p, agent_drv.graph_add_node_v2(n, g, d, e, nd, p_));
}

CUresult gt_node_set(CUgraphNode n, CUgraphNodeParams *p)
{
	REAL(node_set);
	WITH_NODE_SUB(p, agent_drv.node_set(n, p_));
}

CUresult gt_exec_node_set(CUgraphExec e, CUgraphNode n, CUgraphNodeParams *p)
{
	REAL(exec_node_set);
	WITH_NODE_SUB(p, agent_drv.exec_node_set(e, n, p_));
}
#endif /* GT_AGENT_SO */
