// SPDX-License-Identifier: MIT
/*
 * The /metrics endpoint: libmicrohttpd in external polling mode, driven
 * by the session's event loop through one epoll descriptor, so a page
 * is built on the loop's thread and reads the maps as print() does.
 * libmicrohttpd is opened at run time: Debian's static archive needs a
 * static GnuTLS (and p11-kit, which has none), and the binary must run
 * where only the tracer was copied; without the library --metrics fails
 * with a message, nothing else changes.
 *
 * A client cannot stall the loop: sockets are non-blocking, a
 * connection silent for METRICS_TIMEOUT_S seconds is dropped, at most
 * METRICS_MAX_CONN connections are open, and each one's request buffer
 * is bounded.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <netdb.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <netinet/in.h>

#include "runtime/metrics.h"

#ifdef GT_HAVE_MHD
#include <microhttpd.h>

#define METRICS_TIMEOUT_S	5
#define METRICS_MAX_CONN	64
#define METRICS_CONN_MEM	(32 * 1024)

struct mhd_api {
	struct MHD_Daemon *(*start)(unsigned int, uint16_t,
				    MHD_AcceptPolicyCallback, void *,
				    MHD_AccessHandlerCallback, void *, ...);
	void (*stop)(struct MHD_Daemon *);
	enum MHD_Result (*run)(struct MHD_Daemon *);
	const union MHD_DaemonInfo *(*info)(struct MHD_Daemon *,
					    enum MHD_DaemonInfoType, ...);
	struct MHD_Response *(*from_buffer)(size_t, void *,
					    enum MHD_ResponseMemoryMode);
	enum MHD_Result (*add_header)(struct MHD_Response *, const char *,
				      const char *);
	enum MHD_Result (*queue)(struct MHD_Connection *, unsigned int,
				 struct MHD_Response *);
	void (*destroy)(struct MHD_Response *);
};
#endif

struct metrics {
#ifdef GT_HAVE_MHD
	struct mhd_api api;
	struct MHD_Daemon *d;
#endif
	void *lib;		/* libmicrohttpd, never closed */
	int fd;			/* the daemon's epoll descriptor */
	metrics_page_fn page;
	void *arg;
};

static bool unspecified(const struct sockaddr_storage *ss)
{
	if (ss->ss_family == AF_INET)
		return ((const struct sockaddr_in *)ss)->sin_addr.s_addr ==
		       htonl(INADDR_ANY);
	if (ss->ss_family == AF_INET6)
		return IN6_IS_ADDR_UNSPECIFIED(
			&((const struct sockaddr_in6 *)ss)->sin6_addr);
	return false;
}

int metrics_parse_addr(const char *spec, bool any,
		       struct sockaddr_storage *ss, socklen_t *len,
		       char *err, size_t errlen)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM,
				  .ai_flags = AI_NUMERICSERV };
	struct addrinfo *res = NULL;
	const char *colon = strrchr(spec, ':'), *port;
	char host[256];
	char *end;
	long p;
	int e;

	if (!colon) {
		snprintf(host, sizeof(host), "127.0.0.1");
		port = spec;
	} else if (spec[0] == '[') {
		/* [ADDR6]:PORT */
		if (colon[-1] != ']' || colon - spec - 2 >= (long)sizeof(host))
			goto bad;
		snprintf(host, sizeof(host), "%.*s", (int)(colon - spec - 2),
			 spec + 1);
		port = colon + 1;
	} else {
		if (memchr(spec, ':', colon - spec) ||
		    colon - spec >= (long)sizeof(host))
			goto bad;	/* a bare IPv6 address: say [ADDR] */
		snprintf(host, sizeof(host), "%.*s", (int)(colon - spec), spec);
		port = colon + 1;
	}
	errno = 0;
	p = strtol(port, &end, 10);
	if (!*port || *end || errno || p < 0 || p > 65535 || !host[0])
		goto bad;
	e = getaddrinfo(host, port, &hints, &res);
	if (e || !res) {
		snprintf(err, errlen, "--metrics: %s: %s", host, gai_strerror(e));
		return -EINVAL;
	}
	memcpy(ss, res->ai_addr, res->ai_addrlen);
	*len = res->ai_addrlen;
	freeaddrinfo(res);
	if (unspecified(ss) && !any) {
		snprintf(err, errlen, "--metrics %s would serve the maps on "
			 "every network; add --metrics-any to mean it", spec);
		return -EINVAL;
	}
	return 0;
bad:
	snprintf(err, errlen, "--metrics: '%s' is not PORT, ADDR:PORT or "
		 "[ADDR6]:PORT", spec);
	return -EINVAL;
}

#ifdef GT_HAVE_MHD
static int load_api(struct metrics *m)
{
	struct mhd_api *a = &m->api;

	m->lib = dlopen("libmicrohttpd.so.12", RTLD_NOW | RTLD_LOCAL);
	if (!m->lib) {
		fprintf(stderr, "gputrace: --metrics needs libmicrohttpd.so.12 "
			"(Debian's libmicrohttpd12): %s\n", dlerror());
		return -ENOENT;
	}
	*(void **)&a->start = dlsym(m->lib, "MHD_start_daemon");
	*(void **)&a->stop = dlsym(m->lib, "MHD_stop_daemon");
	*(void **)&a->run = dlsym(m->lib, "MHD_run");
	*(void **)&a->info = dlsym(m->lib, "MHD_get_daemon_info");
	*(void **)&a->from_buffer = dlsym(m->lib,
					  "MHD_create_response_from_buffer");
	*(void **)&a->add_header = dlsym(m->lib, "MHD_add_response_header");
	*(void **)&a->queue = dlsym(m->lib, "MHD_queue_response");
	*(void **)&a->destroy = dlsym(m->lib, "MHD_destroy_response");
	if (!a->start || !a->stop || !a->run || !a->info || !a->from_buffer ||
	    !a->add_header || !a->queue || !a->destroy) {
		fprintf(stderr, "gputrace: --metrics: libmicrohttpd.so.12 lacks "
			"a function gputrace uses\n");
		return -ENOSYS;
	}
	return 0;
}

static enum MHD_Result reply(struct metrics *m, struct MHD_Connection *c,
			     unsigned int status, char *body, size_t len,
			     const char *type)
{
	struct MHD_Response *r;
	enum MHD_Result ret;

	r = m->api.from_buffer(len, body, MHD_RESPMEM_MUST_FREE);
	if (!r) {
		free(body);
		return MHD_NO;
	}
	m->api.add_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
	if (status == MHD_HTTP_METHOD_NOT_ALLOWED)
		m->api.add_header(r, MHD_HTTP_HEADER_ALLOW, "GET, HEAD");
	ret = m->api.queue(c, status, r);
	m->api.destroy(r);
	return ret;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c,
				  const char *url, const char *method,
				  const char *version, const char *upload,
				  size_t *upload_size, void **con_cls)
{
	static int seen;
	struct metrics *m = cls;
	size_t len = 0;
	char *body;

	/* answered on the second call, once the headers are all in (then
	 * libmicrohttpd keeps the connection alive); a body that other
	 * methods send is not waited for */
	if (!*con_cls &&
	    (!strcmp(method, "GET") || !strcmp(method, "HEAD"))) {
		*con_cls = &seen;
		return MHD_YES;
	}
	if (strcmp(method, "GET") && strcmp(method, "HEAD"))
		return reply(m, c, MHD_HTTP_METHOD_NOT_ALLOWED,
			     strdup("only GET and HEAD\n"), 18, "text/plain");
	if (strcmp(url, "/metrics"))
		return reply(m, c, MHD_HTTP_NOT_FOUND,
			     strdup("gputrace serves /metrics\n"), 25,
			     "text/plain");
	body = m->page(m->arg, &len);
	if (!body)
		return reply(m, c, MHD_HTTP_INTERNAL_SERVER_ERROR,
			     strdup("out of memory\n"), 14, "text/plain");
	return reply(m, c, MHD_HTTP_OK, body, len,
		     "text/plain; version=0.0.4; charset=utf-8");
}

/* Our own socket: bind errors said plainly, port 0 told back. */
static int listen_on(const struct sockaddr_storage *ss, socklen_t len,
		     const char *spec)
{
	int one = 1;
	int fd = socket(ss->ss_family, SOCK_STREAM | SOCK_NONBLOCK |
			SOCK_CLOEXEC, 0);

	if (fd < 0 ||
	    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    bind(fd, (const struct sockaddr *)ss, len) || listen(fd, 64)) {
		int e = errno;

		fprintf(stderr, "gputrace: --metrics %s: %s\n", spec,
			strerror(e));
		if (fd >= 0)
			close(fd);
		return -e;
	}
	return fd;
}

static void say_where(int fd)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);
	char host[INET6_ADDRSTRLEN], port[8];

	if (getsockname(fd, (struct sockaddr *)&ss, &len) ||
	    getnameinfo((struct sockaddr *)&ss, len, host, sizeof(host), port,
			sizeof(port), NI_NUMERICHOST | NI_NUMERICSERV))
		return;
	fprintf(stderr, ss.ss_family == AF_INET6 ?
		"gputrace: metrics on http://[%s]:%s/metrics\n" :
		"gputrace: metrics on http://%s:%s/metrics\n", host, port);
}

int metrics_start(const char *spec, bool any, metrics_page_fn page,
		  void *arg, struct metrics **out)
{
	struct sockaddr_storage ss;
	socklen_t len;
	char err[512];
	struct metrics *m;
	const union MHD_DaemonInfo *di;
	int e, fd;

	e = metrics_parse_addr(spec, any, &ss, &len, err, sizeof(err));
	if (e) {
		fprintf(stderr, "gputrace: %s\n", err);
		return e;
	}
	m = calloc(1, sizeof(*m));
	if (!m)
		return -ENOMEM;
	m->page = page;
	m->arg = arg;
	m->fd = -1;
	e = load_api(m);
	if (e)
		goto fail;
	fd = listen_on(&ss, len, spec);
	if (fd < 0) {
		e = fd;
		goto fail;
	}
	m->d = m->api.start(MHD_USE_EPOLL |
			    (ss.ss_family == AF_INET6 ? MHD_USE_IPv6 : 0),
			    0, NULL, NULL, on_request, m,
			    MHD_OPTION_LISTEN_SOCKET, fd,
			    MHD_OPTION_CONNECTION_TIMEOUT,
			    (unsigned int)METRICS_TIMEOUT_S,
			    MHD_OPTION_CONNECTION_LIMIT,
			    (unsigned int)METRICS_MAX_CONN,
			    MHD_OPTION_CONNECTION_MEMORY_LIMIT,
			    (size_t)METRICS_CONN_MEM,
			    MHD_OPTION_END);
	di = m->d ? m->api.info(m->d, MHD_DAEMON_INFO_EPOLL_FD) : NULL;
	if (!di) {
		fprintf(stderr, "gputrace: --metrics %s: libmicrohttpd "
			"could not start\n", spec);
		if (!m->d)
			close(fd);
		e = -EIO;
		goto fail;
	}
	m->fd = di->epoll_fd;
	say_where(fd);
	*out = m;
	return 0;
fail:
	metrics_stop(m);
	return e;
}

int metrics_fd(const struct metrics *m)
{
	return m ? m->fd : -1;
}

void metrics_run(struct metrics *m)
{
	if (m)
		m->api.run(m->d);
}

void metrics_stop(struct metrics *m)
{
	if (!m)
		return;
	if (m->d)
		m->api.stop(m->d);
	/* the library stays open: GnuTLS' global state, which it set up,
	 * must stay reachable (LeakSanitizer), and a dlclose gains nothing */
	free(m);
}

#else /* !GT_HAVE_MHD */

int metrics_start(const char *spec, bool any, metrics_page_fn page,
		  void *arg, struct metrics **out)
{
	fprintf(stderr, "gputrace: --metrics: this gputrace was built "
		"without libmicrohttpd's header (libmicrohttpd-dev)\n");
	return -ENOSYS;
}

int metrics_fd(const struct metrics *m)
{
	return -1;
}

void metrics_run(struct metrics *m)
{
}

void metrics_stop(struct metrics *m)
{
}
#endif
