// SPDX-License-Identifier: MIT
/*
 * The tracer's side of the agent protocol (gpucode/agent_proto.h),
 * just enough to test the agent: start CMD with the agent preloaded,
 * print what it says, ask for one snapshot, and at its goodbye print the
 * device maps found in the segment.
 *
 *	agent_tracer SOCKPATH AGENT.so CONFIG CMD [ARGS...]
 *
 * Fault modes (tests/accept/agent_faults.sh), AGENT_TRACER_FAULT=
 *	close	close the socket right after the hello, then wait for CMD
 *	kill	print "child PID" and SIGKILL itself right after the hello
 */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "gpucode/agent_proto.h"

static int send_msg(int fd, uint32_t type, uint64_t seq)
{
	struct agent_msg m = { .type = type, .seq = seq };

	return send(fd, &m, sizeof(m), MSG_NOSIGNAL) == sizeof(m) ? 0 : -1;
}

static int print_entry(const void *key, const uint64_t *val, void *arg)
{
	const struct agent_seg_map *im = arg;

	printf("segment: map %u gpu %u: %llu\n", im->map, im->gpu,
	       (unsigned long long)val[0]);
	return 0;
}

static void print_segment(const uint8_t *seg, uint64_t bye_seq)
{
	const struct agent_seg_hdr *h = (const void *)seg;

	if (h->magic != AGENT_SEG_MAGIC) {
		printf("segment: no snapshot\n");
		return;
	}
	printf("segment: seq %llu (bye %llu), %u images\n",
	       (unsigned long long)h->seq, (unsigned long long)bye_seq,
	       h->nimages);
	for (uint32_t i = 0; i < h->nimages; i++) {
		const struct agent_seg_map *im = &h->images[i];

		if (im->offset + im->bytes > AGENT_SEG_BYTES ||
		    devrt_map_bytes(&im->desc) != im->bytes) {
			printf("segment: image %u is damaged\n", i);
			continue;
		}
		devrt_map_foreach(&im->desc, seg + im->offset, print_entry,
				  (void *)im);
	}
}

int main(int argc, char **argv)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	union {
		struct agent_msg m;
		uint8_t b[1 << 17];
	} u;
	const char *fault = getenv("AGENT_TRACER_FAULT");
	int lfd, fd, seg, status;
	char segstr[16];
	uint8_t *map;
	pid_t pid;

	if (argc < 5 || strlen(argv[1]) >= sizeof(sa.sun_path)) {
		fprintf(stderr, "usage: agent_tracer SOCK AGENT CONFIG CMD...\n");
		return 2;
	}
	strcpy(sa.sun_path, argv[1]);
	unlink(argv[1]);
	lfd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	seg = memfd_create("gputrace-seg", 0);
	if (lfd < 0 || seg < 0 || bind(lfd, (void *)&sa, sizeof(sa)) ||
	    listen(lfd, 4) || ftruncate(seg, AGENT_SEG_BYTES)) {
		perror("agent_tracer: setup");
		return 1;
	}
	snprintf(segstr, sizeof(segstr), "%d", seg);
	pid = fork();
	if (pid == 0) {
		setenv(AGENT_ENV_CONFIG, argv[3], 1);
		setenv(AGENT_ENV_SOCK, argv[1], 1);
		setenv(AGENT_ENV_SEG, segstr, 1);
		setenv("LD_PRELOAD", argv[2], 1);
		execv(argv[4], argv + 4);
		_exit(127);
	}
	alarm(60);
	fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
	if (fd < 0) {
		perror("agent_tracer: accept");
		return 1;
	}
	for (;;) {
		ssize_t n = recv(fd, &u, sizeof(u), 0);

		if (n <= 0) {
			printf("connection closed\n");
			break;
		}
		if ((size_t)n < sizeof(u.m) || u.m.len != n - sizeof(u.m)) {
			printf("bad message (%zd bytes)\n", n);
			continue;
		}
		switch (u.m.type) {
		case AGENT_MSG_HELLO:
			printf("hello\n");
			if (fault && !strcmp(fault, "close")) {
				close(fd);
				printf("closed\n");
				goto out;
			}
			if (fault && !strcmp(fault, "kill")) {
				printf("child %d\n", (int)pid);
				fflush(stdout);
				raise(SIGKILL);
			}
			send_msg(fd, AGENT_MSG_SNAPSHOT, 1);
			break;
		case AGENT_MSG_REPORT:
			printf("report: %.*s\n", (int)u.m.len,
			       (char *)u.b + sizeof(u.m));
			break;
		case AGENT_MSG_SNAPSHOT_DONE:
			printf("snapshot %llu done\n",
			       (unsigned long long)u.m.seq);
			break;
		case AGENT_MSG_PRINTF:
			printf("printf: %u bytes\n", u.m.len);
			break;
		case AGENT_MSG_BYE:
			printf("bye\n");
			map = mmap(NULL, AGENT_SEG_BYTES, PROT_READ,
				   MAP_SHARED, seg, 0);
			if (map != MAP_FAILED)
				print_segment(map, u.m.seq);
			/* read: the agent may go */
			send_msg(fd, AGENT_MSG_BYE_ACK, u.m.seq);
			goto out;
		default:
			printf("unknown message %u\n", u.m.type);
		}
	}
out:
	fflush(stdout);
	waitpid(pid, &status, 0);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}
