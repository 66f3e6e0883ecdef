/* SPDX-License-Identifier: MIT */
/*
 * Device verifier: comparing abstract states (for pruning) and printing
 * them (for -d verifier).
 */
#include <inttypes.h>
#include <string.h>

#include "compiler/verifier_priv.h"

void vf_mark_null(struct vf_state *st, int32_t id, bool is_null)
{
	struct vf_reg *r;
	int i;

	for (i = 0; i < VF_NREGS + VF_SLOTS; i++) {
		r = i < VF_NREGS ? &st->regs[i] : &st->spill[i - VF_NREGS];
		if (r->type != VT_MAP_VALUE_OR_NULL || r->id != id)
			continue;
		if (is_null) {
			vf_set_scalar(r, true, 0);
		} else {
			r->type = VT_MAP_VALUE;
			r->id = 0;
		}
	}
}

/*
 * Is every concrete value that CUR allows also allowed by OLD?  A scalar
 * covers one whose range is inside its own, a register never written
 * covers anything (OLD's path never read it).
 */
static bool reg_covers(const struct vf_reg *old, const struct vf_reg *cur)
{
	if (old->type == VT_NOT_INIT)
		return true;
	if (old->type != cur->type)
		return false;
	if (old->type == VT_SCALAR)
		return old->umin <= cur->umin && cur->umax <= old->umax;
	return old->map == cur->map && old->id == cur->id &&
	       old->off == cur->off;
}

static bool slot_covers(const struct vf_state *old, const struct vf_state *cur,
			int slot)
{
	const uint8_t *ob = &old->stack[slot * 8], *cb = &cur->stack[slot * 8];
	const struct vf_reg *cs = &cur->spill[slot];
	int i;

	for (i = 0; i < 8; i++) {
		if (ob[i] == VS_INVALID)
			continue;
		if (ob[i] == VS_MISC) {
			/* a spilled scalar reads like misc bytes, a pointer not */
			if (cb[i] == VS_MISC ||
			    (cb[i] == VS_SPILL && cs->type == VT_SCALAR))
				continue;
			return false;
		}
		if (cb[i] != VS_SPILL)
			return false;
	}
	if (ob[0] == VS_SPILL)
		return reg_covers(&old->spill[slot], cs);
	return true;
}

bool vf_state_covers(const struct vf_state *old, const struct vf_state *cur)
{
	int i;

	for (i = 0; i < VF_NREGS; i++)
		if (!reg_covers(&old->regs[i], &cur->regs[i]))
			return false;
	for (i = 0; i < VF_SLOTS; i++)
		if (!slot_covers(old, cur, i))
			return false;
	return true;
}

void vf_print_reg(FILE *f, const struct vf_env *v, const struct vf_reg *r)
{
	switch (r->type) {
	case VT_NOT_INIT:
		fprintf(f, "?");
		break;
	case VT_SCALAR:
		if (r->known)
			fprintf(f, "%" PRId64, (int64_t)r->val);
		else if (!r->umin && r->umax == UINT64_MAX)
			fprintf(f, "scalar");
		else if (!r->umin)
			fprintf(f, "scalar(umax=%" PRIu64 ")", r->umax);
		else
			fprintf(f, "scalar(umin=%" PRIu64 ",umax=%" PRIu64 ")",
				r->umin, r->umax);
		break;
	case VT_CTX:
		fprintf(f, "ctx");
		break;
	case VT_STACK:
		fprintf(f, "fp%" PRId64, r->off);
		break;
	case VT_MAP_VALUE:
	case VT_MAP_VALUE_OR_NULL:
		fprintf(f, "map_value%s(map=%d,off=%" PRId64,
			r->type == VT_MAP_VALUE ? "" : "_or_null",
			v->maps[r->map].id, r->off);
		if (r->id)
			fprintf(f, ",id=%d", r->id);
		fprintf(f, ")");
		break;
	}
}

void vf_print_state(FILE *f, const struct vf_env *v, const struct vf_state *st)
{
	static const char glyph[] = { [VS_INVALID] = '?', [VS_MISC] = 'm',
				      [VS_SPILL] = 's' };
	const char *sep = "";
	int i, j;

	for (i = 0; i < VF_NREGS; i++) {
		if (st->regs[i].type == VT_NOT_INIT)
			continue;
		fprintf(f, "%sR%d=", sep, i);
		vf_print_reg(f, v, &st->regs[i]);
		sep = " ";
	}
	/* slots from fp-8 downwards, as the kernel log lists them */
	for (i = VF_SLOTS - 1; i >= 0; i--) {
		const uint8_t *b = &st->stack[i * 8];

		if (!memchr(b, VS_MISC, 8) && !memchr(b, VS_SPILL, 8))
			continue;
		fprintf(f, "%sfp%d=", sep, (i - VF_SLOTS) * 8);
		if (b[0] == VS_SPILL) {
			vf_print_reg(f, v, &st->spill[i]);
		} else {
			/* lowest address first */
			for (j = 0; j < 8; j++)
				fputc(glyph[b[j]], f);
		}
		sep = " ";
	}
	fputc('\n', f);
}
