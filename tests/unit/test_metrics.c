// SPDX-License-Identifier: MIT
/*
 * --metrics' page (runtime/metrics_text.c) for what the CPU-only accept
 * tests cannot make: smload() maps (device only), nested tuple keys,
 * tuple values, an lhist() below zero (and its _sum), bytes that are not UTF-8; and the
 * address parser (runtime/metrics_http.c).  Expectations follow from the
 * exposition format and the bucket rules in docs/fleet.md.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <arpa/inet.h>
#include <netinet/in.h>

#include "runtime/metrics.h"
#include "tests/unit/unit.h"

static char *page(const struct out_map *m)
{
	char *buf = NULL, *fam = metrics_family(m->name);
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	metrics_text_map(f, m, fam);
	fclose(f);
	free(fam);
	return buf;
}

static void test_family(void)
{
	char *s = metrics_family("@");

	CHECK_STR(s, "gputrace_map", "family of @");
	free(s);
	s = metrics_family("@kernel_ns");
	CHECK_STR(s, "gputrace_kernel_ns", "family of @kernel_ns");
	free(s);
	s = metrics_family("@a.b-c");
	CHECK_STR(s, "gputrace_a_b_c", "family sanitised");
	free(s);
}

static void test_smload(void)
{
	uint64_t loads[3] = { 7, 0, 9 };
	struct out_entry e = { .key = { .type = OV_STR, .s = "vadd" },
			       .buckets = loads, .nbuckets = 3 };
	struct out_map m = { .name = "@load", .agg = OA_SMLOAD,
			     .entries = &e, .n = 1 };
	char *s = page(&m);

	CHECK_STR(s, "# HELP gputrace_load gputrace map @load: smload() per SM\n"
		  "# TYPE gputrace_load gauge\n"
		  "gputrace_load{key=\"vadd\",sm=\"0\"} 7\n"
		  "gputrace_load{key=\"vadd\",sm=\"1\"} 0\n"
		  "gputrace_load{key=\"vadd\",sm=\"2\"} 9\n", "smload per SM");
	free(s);
}

static void test_tuples(void)
{
	struct out_val inner[2] = { { .type = OV_INT, .i = 2 },
				    { .type = OV_STR, .s = "x" } };
	struct out_val key[2] = { { .type = OV_UINT, .i = 1 },
				  { .type = OV_TUPLE, .elems = inner,
				    .nelems = 2 } };
	struct out_val val[2] = { { .type = OV_STR, .s = "a\\b" },
				  { .type = OV_INT, .i = -5 } };
	struct out_entry e = { .key = { .type = OV_TUPLE, .elems = key,
					.nelems = 2 },
			       .val = { .type = OV_TUPLE, .elems = val,
					.nelems = 2 } };
	struct out_map m = { .name = "@t", .agg = OA_NONE, .entries = &e,
			     .n = 1 };
	char *s = page(&m);

	CHECK_STR(s, "# HELP gputrace_t gputrace map @t\n"
		  "# TYPE gputrace_t gauge\n"
		  "gputrace_t{key0=\"1\",key1=\"(2, x)\",value0=\"a\\\\b\","
		  "value1=\"-5\"} 1\n", "tuple key and value as labels");
	free(s);
}

static void test_lhist_negative(void)
{
	/* lhist(v, -10, 10, 5): <-10 | [-10,-5) | [-5,0) | [0,5) | [5,10) | >=10 */
	uint64_t b[6] = { 1, 0, 2, 0, 1, 3 };
	/* say -20; -3, -1; 7; 10, 12, 30: the sum is the values' */
	struct out_entry e = { .buckets = b, .nbuckets = 6, .total = 35 };
	struct out_map m = { .name = "@l", .agg = OA_LHIST, .lmin = -10,
			     .lmax = 10, .lstep = 5, .entries = &e, .n = 1 };
	char *s = page(&m);

	CHECK_STR(s, "# HELP gputrace_l gputrace map @l: lhist()\n"
		  "# TYPE gputrace_l histogram\n"
		  "gputrace_l_bucket{le=\"-11\"} 1\n"
		  "gputrace_l_bucket{le=\"-6\"} 1\n"
		  "gputrace_l_bucket{le=\"-1\"} 3\n"
		  "gputrace_l_bucket{le=\"4\"} 3\n"
		  "gputrace_l_bucket{le=\"9\"} 4\n"
		  "gputrace_l_bucket{le=\"+Inf\"} 7\n"
		  "gputrace_l_sum 35\n"
		  "gputrace_l_count 7\n", "lhist below zero");
	free(s);
	/* values below zero only: a negative sum, as the format allows */
	e.total = -7;
	memset(b, 0, sizeof(b));
	b[0] = 1;
	b[2] = 1;
	s = page(&m);
	CHECK(s && strstr(s, "\ngputrace_l_sum -7\ngputrace_l_count 2\n"),
	      "lhist negative sum");
	free(s);
}

static void test_escape(void)
{
	/* an overlong '/', a lone continuation byte, a surrogate, then é */
	struct out_entry e = {
		.key = { .type = OV_STR, .s = "\xc0\xaf|\x80|\xed\xa0\x80|\xc3\xa9\"\n" },
		.val = { .type = OV_UINT, .i = 1 } };
	struct out_map m = { .name = "@e", .agg = OA_COUNT, .entries = &e,
			     .n = 1 };
	char *s = page(&m);

	CHECK_STR(s, "# HELP gputrace_e_total gputrace map @e: count()\n"
		  "# TYPE gputrace_e_total counter\n"
		  "gputrace_e_total{key=\"\xef\xbf\xbd\xef\xbf\xbd|\xef\xbf\xbd|"
		  "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd|\xc3\xa9\\\"\\n\"} 1\n",
		  "label escaping and UTF-8 repair");
	free(s);
}

static void test_addr(void)
{
	struct sockaddr_storage ss;
	socklen_t len;
	char err[256];
	struct sockaddr_in *in = (struct sockaddr_in *)&ss;

	CHECK(!metrics_parse_addr("9464", false, &ss, &len, err, sizeof(err)) &&
	      ss.ss_family == AF_INET && ntohs(in->sin_port) == 9464 &&
	      in->sin_addr.s_addr == htonl(INADDR_LOOPBACK), "PORT is 127.0.0.1");
	CHECK(!metrics_parse_addr("[::1]:80", false, &ss, &len, err, sizeof(err)) &&
	      ss.ss_family == AF_INET6, "[::1]:80");
	CHECK(metrics_parse_addr("0.0.0.0:80", false, &ss, &len, err,
				 sizeof(err)) == -EINVAL &&
	      strstr(err, "--metrics-any"), "0.0.0.0 refused");
	CHECK(metrics_parse_addr("[::]:80", false, &ss, &len, err,
				 sizeof(err)) == -EINVAL, ":: refused");
	CHECK(!metrics_parse_addr("0.0.0.0:80", true, &ss, &len, err, sizeof(err)),
	      "0.0.0.0 with --metrics-any");
	CHECK(metrics_parse_addr("127.0.0.1:", false, &ss, &len, err,
				 sizeof(err)) == -EINVAL, "no port");
	CHECK(metrics_parse_addr(":80", false, &ss, &len, err,
				 sizeof(err)) == -EINVAL, "no address");
	CHECK(metrics_parse_addr("", false, &ss, &len, err,
				 sizeof(err)) == -EINVAL, "empty");
	CHECK(metrics_parse_addr("[::1:80", false, &ss, &len, err,
				 sizeof(err)) == -EINVAL, "unclosed [");
	CHECK(metrics_parse_addr("80x", false, &ss, &len, err,
				 sizeof(err)) == -EINVAL, "port not a number");
}

int main(void)
{
	test_family();
	test_smload();
	test_tuples();
	test_lhist_negative();
	test_escape();
	test_addr();
	UNIT_END();
}
