/* SPDX-License-Identifier: MIT */
/* Inside runtime/agentctl*.c: the controller's state, shared by its files. */
#ifndef GT_AGENTCTL_PRIV_H
#define GT_AGENTCTL_PRIV_H

#include <limits.h>
#include <stddef.h>

#include "runtime/agentctl.h"

/* One map image of a snapshot, copied out of the segment. */
struct agentctl_img {
	uint32_t map, gpu;
	uint64_t drops;			/* printf drops (map 0 images) */
	struct devrt_map_desc desc;	/* checked against the config */
	uint8_t *data;			/* devrt_map_bytes(&desc) bytes */
};

/* One agent (one process of the target). */
struct agentctl_conn {
	int fd;				/* -1 once gone */
	int pid;
	bool hello, bye, gone;
	bool cuda;			/* it launched kernels: it has maps */
	bool late_told;
	uint64_t want;			/* seq of our outstanding SNAPSHOT */
	bool got;			/* its DONE came */
	/* its latest snapshot (outlives the process) */
	struct agentctl_img *imgs;
	int nimgs;
	uint64_t have_seq;		/* its seq */
	uint64_t host_lost;		/* events its host clauses lost */
};

/* Raw device entries of one map: key bytes -> value words. */
struct agentctl_tab {
	size_t klen;			/* key bytes, a multiple of 8 */
	uint32_t nwords;
	size_t n, cap;
	uint8_t *keys;
	uint64_t *vals;			/* n * nwords */
	size_t *slot;			/* open addressing: index + 1 */
	size_t nslot;
};

/* What clear()/zero() left: subtracted from later snapshots. */
struct agentctl_base {
	bool set;
	bool zero;			/* zero(): keys stay, at 0 */
	struct agentctl_tab tab;
};

struct agentctl {
	struct agentctl_opts o;
	char dir[PATH_MAX];
	char *cfg_path, *sock_path, *lib;
	char *env_str[4];
	const char *env[5];
	int lfd, ep, seg_fd;
	/* the segment's regions, read-only, mapped once an agent wrote */
	const uint8_t *seg[AGENT_SEG_REGIONS];
	struct agentctl_conn *conns;
	int nconns, capconns;
	/* every process's latest snapshot, one list (data owned by conns) */
	struct agentctl_img *imgs;
	int nimgs;
	const struct unit *u;
	struct agent_config cfg;	/* nmaps == 0 until configured */
	struct agentctl_cb cb;
	char **seen;			/* REPORT lines already shown */
	int nseen;
	char **matched;			/* KNAME: kernels a clause matched */
	int nmatched;
	uint64_t seq;
	uint64_t lost_seen;
	uint64_t *drops_seen;		/* per map */
	struct agentctl_base *base;	/* per map */
	/* event records received, delivered in order outside handle() (a
	 * print from the agent takes a snapshot, which reads messages) */
	uint8_t *evq;
	size_t evq_head, evq_len, evq_cap;
	bool delivering;
};

/* agentctl_merge.c */
int agentctl_tab_init(struct agentctl_tab *t, size_t klen, uint32_t nwords);
/* Index of KEY, added with zero words when new (*ADDED); -ENOMEM. */
long agentctl_tab_get(struct agentctl_tab *t, const void *key, bool *added);
void agentctl_tab_free(struct agentctl_tab *t);
/* Every map MAP's image of every agent, combined by raw key. */
int agentctl_collect(struct agentctl *ac, int map, struct agentctl_tab *t);

#endif
