// SPDX-License-Identifier: MIT
/*
 * Output tests.  Each scene below rebuilds, through the out_* calls, what
 * one bpftrace 0.17 one-liner printed, and compares the whole stdout byte
 * for byte with what the real bpftrace printed (the want_* strings, each
 * captured with the one-liner named above it).  Maps are handed over in a
 * scrambled order so the sorting is tested too.  smload has no bpftrace
 * counterpart: its expectations follow docs/output.md.
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/output.h"
#include "tests/unit/unit.h"

/*
 * bpftrace -e 'BEGIN { @x = count(); @s = sum(5); @s = sum(7); exit();
 * }'
 */
static const char want_basic_text[] =
	"Attaching 1 probe...\n"
	"\n"
	"\n"
	"@s: 12\n"
	"@x: 1\n";

/*
 * bpftrace -f json -e 'BEGIN { @x = count(); @s = sum(5); @s = sum(7);
 * exit(); }'
 */
static const char want_basic_json[] =
	"{\"type\": \"attached_probes\", \"data\": {\"probes\": 1}}\n"
	"\n"
	"\n"
	"{\"type\": \"map\", \"data\": {\"@s\": 12}}\n"
	"{\"type\": \"map\", \"data\": {\"@x\": 1}}\n";

/*
 * bpftrace -e 'BEGIN { @a = 3; @b[-5] = -7; @c = sum(-3); @m[1] =
 * count(); @m[2] = count(); @m[2] = count(); exit(); }'
 */
static const char want_signed_text[] =
	"Attaching 1 probe...\n"
	"\n"
	"\n"
	"@a: 3\n"
	"@b[-5]: -7\n"
	"@c: -3\n"
	"@m[1]: 1\n"
	"@m[2]: 2\n";

/*
 * bpftrace -f json -e 'BEGIN { @a = 3; @b[-5] = -7; @c = sum(-3); @m[1]
 * = count(); @m[2] = count(); @m[2] = count(); exit(); }'
 */
static const char want_signed_json[] =
	"{\"type\": \"attached_probes\", \"data\": {\"probes\": 1}}\n"
	"\n"
	"\n"
	"{\"type\": \"map\", \"data\": {\"@a\": 3}}\n"
	"{\"type\": \"map\", \"data\": {\"@b\": {\"-5\": -7}}}\n"
	"{\"type\": \"map\", \"data\": {\"@c\": -3}}\n"
	"{\"type\": \"map\", \"data\": {\"@m\": {\"1\": 1, \"2\": 2}}}\n";

/*
 * bpftrace -e 'BEGIN { @m[1] = -5; @m[2] = 3; @m[3] = -7; @u[1] =
 * count(); @u[2] = count(); @u[2] = count(); @u[3] = count(); @u[3] =
 * count(); @u[3] = count(); exit(); }'
 */
static const char want_sortint_text[] =
	"Attaching 1 probe...\n"
	"\n"
	"\n"
	"@m[3]: -7\n"
	"@m[1]: -5\n"
	"@m[2]: 3\n"
	"@u[1]: 1\n"
	"@u[2]: 2\n"
	"@u[3]: 3\n";

/*
 * bpftrace -f json -e 'BEGIN { @m[1] = -5; @m[2] = 3; @m[3] = -7; @u[1]
 * = count(); @u[2] = count(); @u[2] = count(); @u[3] = count(); @u[3] =
 * count(); @u[3] = count(); exit(); }'
 */
static const char want_sortint_json[] =
	"{\"type\": \"attached_probes\", \"data\": {\"probes\": 1}}\n"
	"\n"
	"\n"
	"{\"type\": \"map\", \"data\": {\"@m\": {\"3\": -7, \"1\": -5, \"2"
	"\": 3}}}\n"
	"{\"type\": \"map\", \"data\": {\"@u\": {\"1\": 1, \"2\": 2, \"3\":"
	" 3}}}\n";

/*
 * bpftrace -e 'BEGIN { @m["b"] = 5; @m["a"] = 6; @m["c"] = 1; @m["abc"]
 * = 9; exit(); }'
 */
static const char want_sortstr_text[] =
	"Attaching 1 probe...\n"
	"\n"
	"\n"
	"@m[c]: 1\n"
	"@m[b]: 5\n"
	"@m[a]: 6\n"
	"@m[abc]: 9\n";

/*
 * bpftrace -f json -e 'BEGIN { @m["b"] = 5; @m["a"] = 6; @m["c"] = 1;
 * @m["abc"] = 9; exit(); }'
 */
static const char want_sortstr_json[] =
	"{\"type\": \"attached_probes\", \"data\": {\"probes\": 1}}\n"
	"\n"
	"\n"
	"{\"type\": \"map\", \"data\": {\"@m\": {\"c\": 1, \"b\": 5, \"a\":"
	" 6, \"abc\": 9}}}\n";

/*
 * bpftrace -e 'BEGIN { @m[1, "abc"] = 2; @m[2, "x"] = 1; @s[-1] = "a";
 * @s[2] = "b"; @s[1] = "c"; @t = (1, "a"); @u[3] = (-2, "bc", 7);
 * exit(); }'
 */
static const char want_bykey_text[] =
	"Attaching 1 probe...\n"
	"\n"
	"\n"
	"@m[2, x]: 1\n"
	"@m[1, abc]: 2\n"
	"@s[1]: c\n"
	"@s[2]: b\n"
	"@s[-1]: a\n"
	"@t: (1, a)\n"
	"@u[3]: (-2, bc, 7)\n";

/*
 * bpftrace -f json -e 'BEGIN { @m[1, "abc"] = 2; @m[2, "x"] = 1; @s[-1]
 * = "a"; @s[2] = "b"; @s[1] = "c"; @t = (1, "a"); @u[3] = (-2, "bc", 7);
 * exit(); }'
 */
static const char want_bykey_json[] =
	"{\"type\": \"attached_probes\", \"data\": {\"probes\": 1}}\n"
	"\n"
	"\n"
	"{\"type\": \"map\", \"data\": {\"@m\": {\"2,x\": 1, \"1,abc\": 2}}"
	"}\n"
	"{\"type\": \"map\", \"data\": {\"@s\": {\"1\": \"c\", \"2\": \"b\""
	", \"-1\": \"a\"}}}\n"
	"{\"type\": \"map\", \"data\": {\"@t\": [1,\"a\"]}}\n"
	"{\"type\": \"map\", \"data\": {\"@u\": {\"3\": [-2,\"bc\",7]}}}\n";

/*
 * bpftrace -e 'BEGIN { @c = count(); @d = min(-5); @f = avg(-5); @f =
 * avg(-2); @g = sum(-1); @h = -1; @j = max(5); @k = min(7); exit(); }'
 */
static const char want_minmax_text[] =
	"Attaching 1 probe...\n"
	"\n"
	"\n"
	"@c: 1\n"
	"@d: -5\n"
	"@f: -3\n"
	"\n"
	"@g: -1\n"
	"@h: -1\n"
	"@j: 5\n"
	"@k: 7\n";

/*
 * bpftrace -f json -e 'BEGIN { @c = count(); @d = min(-5); @f = avg(-5);
 * @f = avg(-2); @g = sum(-1); @h = -1; @j = max(5); @k = min(7); exit();
 * }'
 */
static const char want_minmax_json[] =
	"{\"type\": \"attached_probes\", \"data\": {\"probes\": 1}}\n"
	"\n"
	"\n"
	"{\"type\": \"map\", \"data\": {\"@c\": 1}}\n"
	"{\"type\": \"map\", \"data\": {\"@d\": -5}}\n"
	"{\"type\": \"stats\", \"data\": {\"@f\": -3}}\n"
	"{\"type\": \"map\", \"data\": {\"@g\": -1}}\n"
	"{\"type\": \"map\", \"data\": {\"@h\": -1}}\n"
	"{\"type\": \"map\", \"data\": {\"@j\": 5}}\n"
	"{\"type\": \"map\", \"data\": {\"@k\": 7}}\n";

/*
 * bpftrace -e 'BEGIN { @x = avg(10); @y = stats(10); @y = stats(20); @z
 * = 1; @s[1] = stats(5); @s[2] = stats(7); @s[3] = stats(-1); @a[1] =
 * avg(5); @a[2] = avg(7); @a[3] = avg(-1); exit(); }'
 */
static const char want_stats_text[] =
	"Attaching 1 probe...\n"
	"\n"
	"\n"
	"@a[3]: -1\n"
	"@a[1]: 5\n"
	"@a[2]: 7\n"
	"\n"
	"@s[3]: count 1, average -1, total -1\n"
	"@s[1]: count 1, average 5, total 5\n"
	"@s[2]: count 1, average 7, total 7\n"
	"\n"
	"@x: 10\n"
	"\n"
	"@y: count 2, average 15, total 30\n"
	"\n"
	"@z: 1\n";

/*
 * bpftrace -f json -e 'BEGIN { @x = avg(10); @y = stats(10); @y =
 * stats(20); @z = 1; @s[1] = stats(5); @s[2] = stats(7); @s[3] =
 * stats(-1); @a[1] = avg(5); @a[2] = avg(7); @a[3] = avg(-1); exit(); }'
 */
static const char want_stats_json[] =
	"{\"type\": \"attached_probes\", \"data\": {\"probes\": 1}}\n"
	"\n"
	"\n"
	"{\"type\": \"stats\", \"data\": {\"@a\": {\"3\": -1, \"1\": 5, \"2"
	"\": 7}}}\n"
	"{\"type\": \"stats\", \"data\": {\"@s\": {\"3\": {\"count\": 1, \""
	"average\": -1, \"total\": -1}, \"1\": {\"count\": 1, \"average\": "
	"5, \"total\": 5}, \"2\": {\"count\": 1, \"average\": 7, \"total\":"
	" 7}}}}\n"
	"{\"type\": \"stats\", \"data\": {\"@x\": 10}}\n"
	"{\"type\": \"stats\", \"data\": {\"@y\": {\"count\": 2, \"average"
	"\": 15, \"total\": 30}}}\n"
	"{\"type\": \"map\", \"data\": {\"@z\": 1}}\n";

/*
 * bpftrace -e 'BEGIN { print(5); print(-5); print("s"); print((1,
 * "abc")); print((1, (2, "x"))); print("a\tb\"c\\"); exit(); }'
 */
static const char want_values_text[] =
	"Attaching 1 probe...\n"
	"5\n"
	"-5\n"
	"s\n"
	"(1, abc)\n"
	"(1, (2, x))\n"
	"a\tb\"c\\\n"
	"\n"
	"\n";

/*
 * bpftrace -f json -e 'BEGIN { print(5); print(-5); print("s");
 * print((1, "abc")); print((1, (2, "x"))); print("a\tb\"c\\"); exit();
 * }'
 */
static const char want_values_json[] =
	"{\"type\": \"attached_probes\", \"data\": {\"probes\": 1}}\n"
	"{\"type\": \"value\", \"data\": 5}\n"
	"{\"type\": \"value\", \"data\": -5}\n"
	"{\"type\": \"value\", \"data\": \"s\"}\n"
	"{\"type\": \"value\", \"data\": [1,\"abc\"]}\n"
	"{\"type\": \"value\", \"data\": [1,[2,\"x\"]]}\n"
	"{\"type\": \"value\", \"data\": \"a\\tb\\\"c\\\\\"}\n"
	"\n"
	"\n";

/*
 * bpftrace -e 'BEGIN { @m[1] = count(); @m[2] = count(); @m[2] =
 * count(); @m[3] = count(); @m[3] = count(); @m[3] = count(); print(@m,
 * 2); print(@m, 0, 2); print(@m, 1, 2); @a[1] = avg(5); @a[2] = avg(7);
 * @a[3] = avg(-1); print(@a, 1); print(@a, 0, 2); clear(@m); clear(@a);
 * exit(); }'
 */
static const char want_top_text[] =
	"Attaching 1 probe...\n"
	"@m[2]: 2\n"
	"@m[3]: 3\n"
	"@m[1]: 0\n"
	"@m[2]: 1\n"
	"@m[3]: 1\n"
	"@m[3]: 1\n"
	"@a[2]: 7\n"
	"\n"
	"@a[3]: 0\n"
	"@a[1]: 2\n"
	"@a[2]: 3\n"
	"\n"
	"\n"
	"\n"
	"\n"
	"\n"
	"\n";

/*
 * bpftrace -f json -e 'BEGIN { @m[1] = count(); @m[2] = count(); @m[2] =
 * count(); @m[3] = count(); @m[3] = count(); @m[3] = count(); print(@m,
 * 2); print(@m, 0, 2); print(@m, 1, 2); @a[1] = avg(5); @a[2] = avg(7);
 * @a[3] = avg(-1); print(@a, 1); print(@a, 0, 2); clear(@m); clear(@a);
 * exit(); }'
 */
static const char want_top_json[] =
	"{\"type\": \"attached_probes\", \"data\": {\"probes\": 1}}\n"
	"{\"type\": \"map\", \"data\": {\"@m\": {\"2\": 2, \"3\": 3}}}\n"
	"{\"type\": \"map\", \"data\": {\"@m\": {\"1\": 0, \"2\": 1, \"3\":"
	" 1}}}\n"
	"{\"type\": \"map\", \"data\": {\"@m\": {\"3\": 1}}}\n"
	"{\"type\": \"stats\", \"data\": {\"@a\": {\"2\": 7}}}\n"
	"{\"type\": \"stats\", \"data\": {\"@a\": {\"3\": 0, \"1\": 2, \"2"
	"\": 3}}}\n"
	"\n"
	"\n";

/*
 * bpftrace -e 'BEGIN { @h[1] = hist(5); @h[2] = hist(5); @h[2] =
 * hist(5); @h[3] = hist(100); @h[3] = hist(100); @h[3] = hist(100);
 * print(@h, 2, 2); @l[1] = lhist(5, 0, 10, 1); @l[2] = lhist(7, 0, 10,
 * 1); @l[2] = lhist(7, 0, 10, 1); print(@l, 1, 2); exit(); }'
 */
static const char want_histtop_text[] =
	"Attaching 1 probe...\n"
	"@h[2]: \n"
	"[4, 8)                 1 |@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@"
	"@@@@@@@@@@@@|\n"
	"\n"
	"@h[3]: \n"
	"[64, 128)              1 |@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@"
	"@@@@@@@@@@@@|\n"
	"\n"
	"@l[2]: \n"
	"[7, 8)                 2 |@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@"
	"@@@@@@@@@@@@|\n"
	"\n"
	"\n"
	"\n"
	"@h[1]: \n"
	"[4, 8)                 1 |@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@"
	"@@@@@@@@@@@@|\n"
	"\n"
	"@h[2]: \n"
	"[4, 8)                 2 |@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@"
	"@@@@@@@@@@@@|\n"
	"\n"
	"@h[3]: \n"
	"[64, 128)              3 |@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@"
	"@@@@@@@@@@@@|\n"
	"\n"
	"@l[1]: \n"
	"[5, 6)                 1 |@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@"
	"@@@@@@@@@@@@|\n"
	"\n"
	"@l[2]: \n"
	"[7, 8)                 2 |@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@"
	"@@@@@@@@@@@@|\n"
	"\n";

/*
 * bpftrace -f json -e 'BEGIN { @h[1] = hist(5); @h[2] = hist(5); @h[2] =
 * hist(5); @h[3] = hist(100); @h[3] = hist(100); @h[3] = hist(100);
 * print(@h, 2, 2); @l[1] = lhist(5, 0, 10, 1); @l[2] = lhist(7, 0, 10,
 * 1); @l[2] = lhist(7, 0, 10, 1); print(@l, 1, 2); exit(); }'
 */
static const char want_histtop_json[] =
	"{\"type\": \"attached_probes\", \"data\": {\"probes\": 1}}\n"
	"{\"type\": \"hist\", \"data\": {\"@h\": {\"2\": [{\"min\": 4, \"ma"
	"x\": 7, \"count\": 1}], \"3\": [{\"min\": 64, \"max\": 127, \"coun"
	"t\": 1}]}}}\n"
	"{\"type\": \"hist\", \"data\": {\"@l\": {\"2\": [{\"min\": 7, \"ma"
	"x\": 7, \"count\": 2}]}}}\n"
	"\n"
	"\n"
	"{\"type\": \"hist\", \"data\": {\"@h\": {\"1\": [{\"min\": 4, \"ma"
	"x\": 7, \"count\": 1}], \"2\": [{\"min\": 4, \"max\": 7, \"count\""
	": 2}], \"3\": [{\"min\": 64, \"max\": 127, \"count\": 3}]}}}\n"
	"{\"type\": \"hist\", \"data\": {\"@l\": {\"1\": [{\"min\": 5, \"ma"
	"x\": 5, \"count\": 1}], \"2\": [{\"min\": 7, \"max\": 7, \"count\""
	": 2}]}}}\n";

/*
 * bpftrace -e 'BEGIN { @x[1] = 1; delete(@x[1]); @h[1] = hist(3);
 * zero(@h); @a[1] = avg(3); clear(@a); @c = count(); zero(@c); @g =
 * hist(1); clear(@g); @f = 1; print(@x); print(@a); exit(); }'
 */
static const char want_empty_text[] =
	"Attaching 1 probe...\n"
	"\n"
	"\n"
	"\n"
	"\n"
	"\n"
	"\n"
	"\n"
	"@c: 0\n"
	"@f: 1\n"
	"\n"
	"@h[1]: \n"
	"\n"
	"\n";

/*
 * bpftrace -f json -e 'BEGIN { @x[1] = 1; delete(@x[1]); @h[1] =
 * hist(3); zero(@h); @a[1] = avg(3); clear(@a); @c = count(); zero(@c);
 * @g = hist(1); clear(@g); @f = 1; print(@x); print(@a); exit(); }'
 */
static const char want_empty_json[] =
	"{\"type\": \"attached_probes\", \"data\": {\"probes\": 1}}\n"
	"\n"
	"\n"
	"{\"type\": \"map\", \"data\": {\"@c\": 0}}\n"
	"{\"type\": \"map\", \"data\": {\"@f\": 1}}\n"
	"{\"type\": \"hist\", \"data\": {\"@h\": {\"1\": []}}}\n";

/*
 * bpftrace -e 'BEGIN { @h = hist(-1); @h = hist(0); @h = hist(1); @h =
 * hist(2); @h = hist(3); @h = hist(4); @h = hist(1023); @h = hist(1024);
 * @h = hist(1024); exit(); }'
 */
static const char want_hist_text[] =
	"Attaching 1 probe...\n"
	"\n"
	"\n"
	"@h: \n"
	"(..., 0)               1 |@@@@@@@@@@@@@@@@@@@@@@@@@@              "
	"            |\n"
	"[0]                    1 |@@@@@@@@@@@@@@@@@@@@@@@@@@              "
	"            |\n"
	"[1]                    1 |@@@@@@@@@@@@@@@@@@@@@@@@@@              "
	"            |\n"
	"[2, 4)                 2 |@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@"
	"@@@@@@@@@@@@|\n"
	"[4, 8)                 1 |@@@@@@@@@@@@@@@@@@@@@@@@@@              "
	"            |\n"
	"[8, 16)                0 |                                        "
	"            |\n"
	"[16, 32)               0 |                                        "
	"            |\n"
	"[32, 64)               0 |                                        "
	"            |\n"
	"[64, 128)              0 |                                        "
	"            |\n"
	"[128, 256)             0 |                                        "
	"            |\n"
	"[256, 512)             0 |                                        "
	"            |\n"
	"[512, 1K)              1 |@@@@@@@@@@@@@@@@@@@@@@@@@@              "
	"            |\n"
	"[1K, 2K)               2 |@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@"
	"@@@@@@@@@@@@|\n"
	"\n";

/*
 * bpftrace -f json -e 'BEGIN { @h = hist(-1); @h = hist(0); @h =
 * hist(1); @h = hist(2); @h = hist(3); @h = hist(4); @h = hist(1023); @h
 * = hist(1024); @h = hist(1024); exit(); }'
 */
static const char want_hist_json[] =
	"{\"type\": \"attached_probes\", \"data\": {\"probes\": 1}}\n"
	"\n"
	"\n"
	"{\"type\": \"hist\", \"data\": {\"@h\": [{\"max\": -1, \"count\": "
	"1}, {\"min\": 0, \"max\": 0, \"count\": 1}, {\"min\": 1, \"max\": "
	"1, \"count\": 1}, {\"min\": 2, \"max\": 3, \"count\": 2}, {\"min\""
	": 4, \"max\": 7, \"count\": 1}, {\"min\": 8, \"max\": 15, \"count"
	"\": 0}, {\"min\": 16, \"max\": 31, \"count\": 0}, {\"min\": 32, \""
	"max\": 63, \"count\": 0}, {\"min\": 64, \"max\": 127, \"count\": 0"
	"}, {\"min\": 128, \"max\": 255, \"count\": 0}, {\"min\": 256, \"ma"
	"x\": 511, \"count\": 0}, {\"min\": 512, \"max\": 1023, \"count\": "
	"1}, {\"min\": 1024, \"max\": 2047, \"count\": 2}]}}\n";

/*
 * bpftrace -e 'BEGIN { @h = hist(2147483647); @h = hist(2147483648); @h
 * = hist(4294967296); @h = hist(5000000000); @h = hist(1 << 40); @h =
 * hist(9223372036854775807); @h = hist(1048576); @h = hist(1073741824);
 * exit(); }'
 */
static const char want_histbig_text[] =
	"Attaching 1 probe...\n"
	"\n"
	"\n"
	"@h: \n"
	"[1M, 2M)               1 |@@@@@@@@@@                              "
	"            |\n"
	"[2M, 4M)               0 |                                        "
	"            |\n"
	"[4M, 8M)               0 |                                        "
	"            |\n"
	"[8M, 16M)              0 |                                        "
	"            |\n"
	"[16M, 32M)             0 |                                        "
	"            |\n"
	"[32M, 64M)             0 |                                        "
	"            |\n"
	"[64M, 128M)            0 |                                        "
	"            |\n"
	"[128M, 256M)           0 |                                        "
	"            |\n"
	"[256M, 512M)           0 |                                        "
	"            |\n"
	"[512M, 1G)             0 |                                        "
	"            |\n"
	"[1G, 2G)               2 |@@@@@@@@@@@@@@@@@@@@                    "
	"            |\n"
	"[2G, 4G)               5 |@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@"
	"@@@@@@@@@@@@|\n"
	"\n";

/*
 * bpftrace -f json -e 'BEGIN { @h = hist(2147483647); @h =
 * hist(2147483648); @h = hist(4294967296); @h = hist(5000000000); @h =
 * hist(1 << 40); @h = hist(9223372036854775807); @h = hist(1048576); @h
 * = hist(1073741824); exit(); }'
 */
static const char want_histbig_json[] =
	"{\"type\": \"attached_probes\", \"data\": {\"probes\": 1}}\n"
	"\n"
	"\n"
	"{\"type\": \"hist\", \"data\": {\"@h\": [{\"min\": 1048576, \"max"
	"\": 2097151, \"count\": 1}, {\"min\": 2097152, \"max\": 4194303, "
	"\"count\": 0}, {\"min\": 4194304, \"max\": 8388607, \"count\": 0},"
	" {\"min\": 8388608, \"max\": 16777215, \"count\": 0}, {\"min\": 16"
	"777216, \"max\": 33554431, \"count\": 0}, {\"min\": 33554432, \"ma"
	"x\": 67108863, \"count\": 0}, {\"min\": 67108864, \"max\": 1342177"
	"27, \"count\": 0}, {\"min\": 134217728, \"max\": 268435455, \"coun"
	"t\": 0}, {\"min\": 268435456, \"max\": 536870911, \"count\": 0}, {"
	"\"min\": 536870912, \"max\": 1073741823, \"count\": 0}, {\"min\": "
	"1073741824, \"max\": 2147483647, \"count\": 2}, {\"min\": -2147483"
	"648, \"max\": 0, \"count\": 5}]}}\n";

/*
 * bpftrace -e 'BEGIN { @h[1] = hist(5); @h[2] = hist(5); @h[2] =
 * hist(5); @h[3] = hist(100); @h[3] = hist(-100); @h[3] = hist(0);
 * exit(); }'
 */
static const char want_histkey_text[] =
	"Attaching 1 probe...\n"
	"\n"
	"\n"
	"@h[1]: \n"
	"[4, 8)                 1 |@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@"
	"@@@@@@@@@@@@|\n"
	"\n"
	"@h[2]: \n"
	"[4, 8)                 2 |@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@"
	"@@@@@@@@@@@@|\n"
	"\n"
	"@h[3]: \n"
	"(..., 0)               1 |@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@"
	"@@@@@@@@@@@@|\n"
	"[0]                    1 |@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@"
	"@@@@@@@@@@@@|\n"
	"[1]                    0 |                                        "
	"            |\n"
	"[2, 4)                 0 |                                        "
	"            |\n"
	"[4, 8)                 0 |                                        "
	"            |\n"
	"[8, 16)                0 |                                        "
	"            |\n"
	"[16, 32)               0 |                                        "
	"            |\n"
	"[32, 64)               0 |                                        "
	"            |\n"
	"[64, 128)              1 |@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@"
	"@@@@@@@@@@@@|\n"
	"\n";

/*
 * bpftrace -f json -e 'BEGIN { @h[1] = hist(5); @h[2] = hist(5); @h[2] =
 * hist(5); @h[3] = hist(100); @h[3] = hist(-100); @h[3] = hist(0);
 * exit(); }'
 */
static const char want_histkey_json[] =
	"{\"type\": \"attached_probes\", \"data\": {\"probes\": 1}}\n"
	"\n"
	"\n"
	"{\"type\": \"hist\", \"data\": {\"@h\": {\"1\": [{\"min\": 4, \"ma"
	"x\": 7, \"count\": 1}], \"2\": [{\"min\": 4, \"max\": 7, \"count\""
	": 2}], \"3\": [{\"max\": -1, \"count\": 1}, {\"min\": 0, \"max\": "
	"0, \"count\": 1}, {\"min\": 1, \"max\": 1, \"count\": 0}, {\"min\""
	": 2, \"max\": 3, \"count\": 0}, {\"min\": 4, \"max\": 7, \"count\""
	": 0}, {\"min\": 8, \"max\": 15, \"count\": 0}, {\"min\": 16, \"max"
	"\": 31, \"count\": 0}, {\"min\": 32, \"max\": 63, \"count\": 0}, {"
	"\"min\": 64, \"max\": 127, \"count\": 1}]}}}\n";

/*
 * bpftrace -e 'BEGIN { @l = lhist(-5, 0, 100, 10); @l = lhist(5, 0, 100,
 * 10); @l = lhist(15, 0, 100, 10); @l = lhist(15, 0, 100, 10); @l =
 * lhist(100, 0, 100, 10); @l = lhist(1000, 0, 100, 10); exit(); }'
 */
static const char want_lhist_text[] =
	"Attaching 1 probe...\n"
	"\n"
	"\n"
	"@l: \n"
	"(..., 0)               1 |@@@@@@@@@@@@@@@@@@@@@@@@@@              "
	"            |\n"
	"[0, 10)                1 |@@@@@@@@@@@@@@@@@@@@@@@@@@              "
	"            |\n"
	"[10, 20)               2 |@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@"
	"@@@@@@@@@@@@|\n"
	"[20, 30)               0 |                                        "
	"            |\n"
	"[30, 40)               0 |                                        "
	"            |\n"
	"[40, 50)               0 |                                        "
	"            |\n"
	"[50, 60)               0 |                                        "
	"            |\n"
	"[60, 70)               0 |                                        "
	"            |\n"
	"[70, 80)               0 |                                        "
	"            |\n"
	"[80, 90)               0 |                                        "
	"            |\n"
	"[90, 100)              0 |                                        "
	"            |\n"
	"[100, ...)             2 |@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@"
	"@@@@@@@@@@@@|\n"
	"\n";

/*
 * bpftrace -f json -e 'BEGIN { @l = lhist(-5, 0, 100, 10); @l = lhist(5,
 * 0, 100, 10); @l = lhist(15, 0, 100, 10); @l = lhist(15, 0, 100, 10);
 * @l = lhist(100, 0, 100, 10); @l = lhist(1000, 0, 100, 10); exit(); }'
 */
static const char want_lhist_json[] =
	"{\"type\": \"attached_probes\", \"data\": {\"probes\": 1}}\n"
	"\n"
	"\n"
	"{\"type\": \"hist\", \"data\": {\"@l\": [{\"max\": -1, \"count\": "
	"1}, {\"min\": 0, \"max\": 9, \"count\": 1}, {\"min\": 10, \"max\":"
	" 19, \"count\": 2}, {\"min\": 20, \"max\": 29, \"count\": 0}, {\"m"
	"in\": 30, \"max\": 39, \"count\": 0}, {\"min\": 40, \"max\": 49, "
	"\"count\": 0}, {\"min\": 50, \"max\": 59, \"count\": 0}, {\"min\":"
	" 60, \"max\": 69, \"count\": 0}, {\"min\": 70, \"max\": 79, \"coun"
	"t\": 0}, {\"min\": 80, \"max\": 89, \"count\": 0}, {\"min\": 90, "
	"\"max\": 99, \"count\": 0}, {\"min\": 100, \"count\": 2}]}}\n";

/*
 * bpftrace -e 'BEGIN { @l = lhist(2048, 0, 4096, 1024); @l = lhist(5000,
 * 0, 4096, 1024); @k = lhist(3000000, 0, 4194304, 1048576); @k =
 * lhist(0, 0, 4194304, 1048576); @n = lhist(7, 0, 10, 3); @n = lhist(9,
 * 0, 10, 3); @n = lhist(10, 0, 10, 3); @p["a"] = lhist(25, 0, 100, 10);
 * @p["a"] = lhist(45, 0, 100, 10); exit(); }'
 */
static const char want_lhist2_text[] =
	"Attaching 1 probe...\n"
	"\n"
	"\n"
	"@k: \n"
	"[0, 1M)                1 |@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@"
	"@@@@@@@@@@@@|\n"
	"[1M, 2M)               0 |                                        "
	"            |\n"
	"[2M, 3M)               1 |@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@"
	"@@@@@@@@@@@@|\n"
	"\n"
	"@l: \n"
	"[2K, 3K)               1 |@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@"
	"@@@@@@@@@@@@|\n"
	"[3K, 4K)               0 |                                        "
	"            |\n"
	"[4K, ...)              1 |@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@"
	"@@@@@@@@@@@@|\n"
	"\n"
	"@n: \n"
	"[6, 9)                 1 |@@@@@@@@@@@@@@@@@@@@@@@@@@              "
	"            |\n"
	"[10, ...)              2 |@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@"
	"@@@@@@@@@@@@|\n"
	"\n"
	"@p[a]: \n"
	"[20, 30)               1 |@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@"
	"@@@@@@@@@@@@|\n"
	"[30, 40)               0 |                                        "
	"            |\n"
	"[40, 50)               1 |@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@"
	"@@@@@@@@@@@@|\n"
	"\n";

/*
 * bpftrace -f json -e 'BEGIN { @l = lhist(2048, 0, 4096, 1024); @l =
 * lhist(5000, 0, 4096, 1024); @k = lhist(3000000, 0, 4194304, 1048576);
 * @k = lhist(0, 0, 4194304, 1048576); @n = lhist(7, 0, 10, 3); @n =
 * lhist(9, 0, 10, 3); @n = lhist(10, 0, 10, 3); @p["a"] = lhist(25, 0,
 * 100, 10); @p["a"] = lhist(45, 0, 100, 10); exit(); }'
 */
static const char want_lhist2_json[] =
	"{\"type\": \"attached_probes\", \"data\": {\"probes\": 1}}\n"
	"\n"
	"\n"
	"{\"type\": \"hist\", \"data\": {\"@k\": [{\"min\": 0, \"max\": 104"
	"8575, \"count\": 1}, {\"min\": 1048576, \"max\": 2097151, \"count"
	"\": 0}, {\"min\": 2097152, \"max\": 3145727, \"count\": 1}]}}\n"
	"{\"type\": \"hist\", \"data\": {\"@l\": [{\"min\": 2048, \"max\": "
	"3071, \"count\": 1}, {\"min\": 3072, \"max\": 4095, \"count\": 0},"
	" {\"min\": 4096, \"count\": 1}]}}\n"
	"{\"type\": \"hist\", \"data\": {\"@n\": [{\"min\": 6, \"max\": 8, "
	"\"count\": 1}, {\"min\": 10, \"count\": 2}]}}\n"
	"{\"type\": \"hist\", \"data\": {\"@p\": {\"a\": [{\"min\": 20, \"m"
	"ax\": 29, \"count\": 1}, {\"min\": 30, \"max\": 39, \"count\": 0},"
	" {\"min\": 40, \"max\": 49, \"count\": 1}]}}}\n";

/*
 * bpftrace -e 'BEGIN { @h = hist(1); @h = hist(2); @h = hist(2); @h =
 * hist(4); @h = hist(4); @h = hist(4); @h = hist(8); @h = hist(8); @h =
 * hist(8); @h = hist(8); @h = hist(8); @h = hist(8); @h = hist(16); @h =
 * hist(16); @h = hist(16); @h = hist(16); @h = hist(16); @h = hist(16);
 * @h = hist(16); exit(); }'
 */
static const char want_bars_text[] =
	"Attaching 1 probe...\n"
	"\n"
	"\n"
	"@h: \n"
	"[1]                    1 |@@@@@@@                                 "
	"            |\n"
	"[2, 4)                 2 |@@@@@@@@@@@@@@                          "
	"            |\n"
	"[4, 8)                 3 |@@@@@@@@@@@@@@@@@@@@@@                  "
	"            |\n"
	"[8, 16)                6 |@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@"
	"@@@@        |\n"
	"[16, 32)               7 |@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@"
	"@@@@@@@@@@@@|\n"
	"\n";

/*
 * bpftrace -f json -e 'BEGIN { @h = hist(1); @h = hist(2); @h = hist(2);
 * @h = hist(4); @h = hist(4); @h = hist(4); @h = hist(8); @h = hist(8);
 * @h = hist(8); @h = hist(8); @h = hist(8); @h = hist(8); @h = hist(16);
 * @h = hist(16); @h = hist(16); @h = hist(16); @h = hist(16); @h =
 * hist(16); @h = hist(16); exit(); }'
 */
static const char want_bars_json[] =
	"{\"type\": \"attached_probes\", \"data\": {\"probes\": 1}}\n"
	"\n"
	"\n"
	"{\"type\": \"hist\", \"data\": {\"@h\": [{\"min\": 1, \"max\": 1, "
	"\"count\": 1}, {\"min\": 2, \"max\": 3, \"count\": 2}, {\"min\": 4"
	", \"max\": 7, \"count\": 3}, {\"min\": 8, \"max\": 15, \"count\": "
	"6}, {\"min\": 16, \"max\": 31, \"count\": 7}]}}\n";

/*
 * bpftrace -e 'BEGIN { printf("hi %d\n", 5); printf("no newline");
 * printf("tab\there\n"); exit(); } END { }'
 */
static const char want_msgs_text[] =
	"Attaching 2 probes...\n"
	"hi 5\n"
	"no newlinetab\there\n"
	"\n"
	"\n";

/*
 * bpftrace -f json -e 'BEGIN { printf("hi %d\n", 5); printf("no
 * newline"); printf("tab\there\n"); exit(); } END { }'
 */
static const char want_msgs_json[] =
	"{\"type\": \"attached_probes\", \"data\": {\"probes\": 2}}\n"
	"{\"type\": \"printf\", \"data\": \"hi 5\\n\"}\n"
	"{\"type\": \"printf\", \"data\": \"no newline\"}\n"
	"{\"type\": \"printf\", \"data\": \"tab\\there\\n\"}\n"
	"\n"
	"\n";

/* Not from bpftrace runs: bpftrace prints "Lost N events" (its source). */
static const char want_lost_text[] = "Lost 5 events\n";
static const char want_lost_json[] =
	"{\"type\": \"lost_events\", \"data\": {\"events\": 5}}\n";

#define N(a) (sizeof(a) / sizeof((a)[0]))
#define I(x) ((struct out_val){ .type = OV_INT, .i = (x) })
#define U(x) ((struct out_val){ .type = OV_UINT, .i = (int64_t)(x) })
#define S(x) ((struct out_val){ .type = OV_STR, .s = (x) })
#define T(...) ((struct out_val){ .type = OV_TUPLE,			\
	.elems = (struct out_val[]){ __VA_ARGS__ },			\
	.nelems = N(((struct out_val[]){ __VA_ARGS__ })) })
#define MAP(nm, ag, ents) ((struct out_map){ .name = (nm), .agg = (ag), \
	.entries = (ents), .n = N(ents) })

/* hist(x) and lhist(x, ...) as the probe would count them */
static void hist(struct out_entry *e, int64_t x)
{
	e->buckets[out_hist_index(x)]++;
}

static void lhist(struct out_entry *e, const struct out_map *m, int64_t x)
{
	e->buckets[out_lhist_index(x, m->lmin, m->lmax, m->lstep)]++;
}

#define HIST_ENTRY(k) { .key = (k), .nbuckets = OUT_HIST_BUCKETS,	\
	.buckets = (uint64_t[OUT_HIST_BUCKETS]){ 0 } }
#define LHIST_ENTRY(k, nb) { .key = (k), .nbuckets = (nb),		\
	.buckets = (uint64_t[nb]){ 0 } }

typedef void scene_fn(struct out *o);

static char *render(enum out_format fmt, bool utf8, scene_fn *fn)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	struct out o = { .f = f, .fmt = fmt, .utf8 = utf8 };

	if (!f)
		return NULL;
	fn(&o);
	fclose(f);
	return buf;
}

static void check_scene(const char *name, scene_fn *fn, const char *text,
			const char *json)
{
	char label[64];
	char *got;

	got = render(OUT_TEXT, true, fn);
	snprintf(label, sizeof(label), "%s text", name);
	CHECK_STR(got, text, label);
	free(got);
	got = render(OUT_JSON, true, fn);
	snprintf(label, sizeof(label), "%s json", name);
	CHECK_STR(got, json, label);
	free(got);
}

static void scene_basic(struct out *o)
{
	struct out_entry s[] = { { .val = I(12) } };
	struct out_entry x[] = { { .val = U(1) } };

	out_attached(o, 1);
	out_exit_begin(o);
	out_map(o, &MAP("@s", OA_SUM, s));
	out_map(o, &MAP("@x", OA_COUNT, x));
}

static void scene_signed(struct out *o)
{
	struct out_entry a[] = { { .val = I(3) } };
	struct out_entry b[] = { { .key = I(-5), .val = I(-7) } };
	struct out_entry c[] = { { .val = I(-3) } };
	struct out_entry m[] = {
		{ .key = I(2), .val = U(2) }, { .key = I(1), .val = U(1) },
	};

	out_attached(o, 1);
	out_exit_begin(o);
	out_map(o, &MAP("@a", OA_NONE, a));
	out_map(o, &MAP("@b", OA_NONE, b));
	out_map(o, &MAP("@c", OA_SUM, c));
	out_map(o, &MAP("@m", OA_COUNT, m));
}

static void scene_sortint(struct out *o)
{
	struct out_entry m[] = {
		{ .key = I(1), .val = I(-5) }, { .key = I(2), .val = I(3) },
		{ .key = I(3), .val = I(-7) },
	};
	struct out_entry u[] = {
		{ .key = I(3), .val = U(3) }, { .key = I(1), .val = U(1) },
		{ .key = I(2), .val = U(2) },
	};

	out_attached(o, 1);
	out_exit_begin(o);
	out_map(o, &MAP("@m", OA_NONE, m));
	out_map(o, &MAP("@u", OA_COUNT, u));
}

static void scene_sortstr(struct out *o)
{
	struct out_entry m[] = {
		{ .key = S("b"), .val = I(5) }, { .key = S("a"), .val = I(6) },
		{ .key = S("c"), .val = I(1) },
		{ .key = S("abc"), .val = I(9) },
	};

	out_attached(o, 1);
	out_exit_begin(o);
	out_map(o, &MAP("@m", OA_NONE, m));
}

static void scene_bykey(struct out *o)
{
	struct out_entry m[] = {
		{ .key = T(I(1), S("abc")), .val = I(2) },
		{ .key = T(I(2), S("x")), .val = I(1) },
	};
	struct out_entry s[] = {	/* string values: sorted by key */
		{ .key = I(-1), .val = S("a") }, { .key = I(2), .val = S("b") },
		{ .key = I(1), .val = S("c") },
	};
	struct out_entry t[] = { { .val = T(I(1), S("a")) } };
	struct out_entry u[] = { { .key = I(3), .val = T(I(-2), S("bc"), I(7)) } };

	out_attached(o, 1);
	out_exit_begin(o);
	out_map(o, &MAP("@m", OA_NONE, m));
	out_map(o, &MAP("@s", OA_NONE, s));
	out_map(o, &MAP("@t", OA_NONE, t));
	out_map(o, &MAP("@u", OA_NONE, u));
}

static void scene_minmax(struct out *o)
{
	struct out_entry c[] = { { .val = U(1) } };
	struct out_entry d[] = { { .val = I(-5) } };
	struct out_entry f[] = { { .count = 2, .total = -7 } };
	struct out_entry g[] = { { .val = I(-1) } };
	struct out_entry h[] = { { .val = I(-1) } };
	struct out_entry j[] = { { .val = I(5) } };
	struct out_entry k[] = { { .val = I(7) } };

	out_attached(o, 1);
	out_exit_begin(o);
	out_map(o, &MAP("@c", OA_COUNT, c));
	out_map(o, &MAP("@d", OA_MIN, d));
	out_map(o, &MAP("@f", OA_AVG, f));
	out_map(o, &MAP("@g", OA_SUM, g));
	out_map(o, &MAP("@h", OA_NONE, h));
	out_map(o, &MAP("@j", OA_MAX, j));
	out_map(o, &MAP("@k", OA_MIN, k));
}

static void scene_stats(struct out *o)
{
	struct out_entry a[] = {
		{ .key = I(1), .count = 1, .total = 5 },
		{ .key = I(2), .count = 1, .total = 7 },
		{ .key = I(3), .count = 1, .total = -1 },
	};
	struct out_entry x[] = { { .count = 1, .total = 10 } };
	struct out_entry y[] = { { .count = 2, .total = 30 } };
	struct out_entry z[] = { { .val = I(1) } };

	out_attached(o, 1);
	out_exit_begin(o);
	out_map(o, &MAP("@a", OA_AVG, a));
	out_map(o, &MAP("@s", OA_STATS, a));
	out_map(o, &MAP("@x", OA_AVG, x));
	out_map(o, &MAP("@y", OA_STATS, y));
	out_map(o, &MAP("@z", OA_NONE, z));
}

static void scene_values(struct out *o)
{
	out_attached(o, 1);
	out_value(o, &I(5));
	out_value(o, &I(-5));
	out_value(o, &S("s"));
	out_value(o, &T(I(1), S("abc")));
	out_value(o, &T(I(1), T(I(2), S("x"))));
	out_value(o, &S("a\tb\"c\\"));
	out_exit_begin(o);
}

static void scene_top(struct out *o)
{
	struct out_entry m[] = {
		{ .key = I(3), .val = U(3) }, { .key = I(2), .val = U(2) },
		{ .key = I(1), .val = U(1) },
	};
	struct out_entry a[] = {
		{ .key = I(1), .count = 1, .total = 5 },
		{ .key = I(2), .count = 1, .total = 7 },
		{ .key = I(3), .count = 1, .total = -1 },
	};
	struct out_map mm = MAP("@m", OA_COUNT, m);
	struct out_map am = MAP("@a", OA_AVG, a);

	out_attached(o, 1);
	out_map_top(o, &mm, 2, 0);
	out_map_top(o, &mm, 0, 2);
	out_map_top(o, &mm, 1, 2);
	out_map_top(o, &am, 1, 0);
	out_map_top(o, &am, 0, 2);
	/* clear(@m); clear(@a) */
	mm.n = 0;
	am.n = 0;
	out_exit_begin(o);
	out_map(o, &am);
	out_map(o, &mm);
}

static void scene_histtop(struct out *o)
{
	struct out_entry h[] = {
		HIST_ENTRY(I(3)), HIST_ENTRY(I(1)), HIST_ENTRY(I(2)),
	};
	struct out_entry l[] = { LHIST_ENTRY(I(2), 12), LHIST_ENTRY(I(1), 12) };
	struct out_map hm = MAP("@h", OA_HIST, h);
	struct out_map lm = MAP("@l", OA_LHIST, l);

	lm.lmin = 0;
	lm.lmax = 10;
	lm.lstep = 1;
	hist(&h[1], 5);
	hist(&h[2], 5);
	hist(&h[2], 5);
	for (int i = 0; i < 3; i++)
		hist(&h[0], 100);
	lhist(&l[1], &lm, 5);
	lhist(&l[0], &lm, 7);
	lhist(&l[0], &lm, 7);
	out_attached(o, 1);
	out_map_top(o, &hm, 2, 2);
	out_map_top(o, &lm, 1, 2);	/* lhist ignores div */
	out_exit_begin(o);
	out_map(o, &hm);
	out_map(o, &lm);
}

static void scene_empty(struct out *o)
{
	struct out_entry none[1];
	struct out_entry c[] = { { .val = U(0) } };
	struct out_entry f[] = { { .val = I(1) } };
	struct out_entry h[] = { HIST_ENTRY(I(1)) };	/* zero(@h) */
	struct out_map x = { .name = "@x", .agg = OA_NONE, .entries = none };
	struct out_map a = { .name = "@a", .agg = OA_AVG, .entries = none };
	struct out_map g = { .name = "@g", .agg = OA_HIST, .entries = none };

	out_attached(o, 1);
	out_map(o, &x);
	out_map(o, &a);
	out_exit_begin(o);
	out_map(o, &a);
	out_map(o, &MAP("@c", OA_COUNT, c));
	out_map(o, &MAP("@f", OA_NONE, f));
	out_map(o, &g);
	out_map(o, &MAP("@h", OA_HIST, h));
	out_map(o, &x);
}

static void hist_scene(struct out *o, const int64_t *xs, size_t n)
{
	struct out_entry h[] = { HIST_ENTRY(((struct out_val){ 0 })) };

	for (size_t i = 0; i < n; i++)
		hist(&h[0], xs[i]);
	out_attached(o, 1);
	out_exit_begin(o);
	out_map(o, &MAP("@h", OA_HIST, h));
}

static void scene_hist(struct out *o)
{
	static const int64_t xs[] = { -1, 0, 1, 2, 3, 4, 1023, 1024, 1024 };

	hist_scene(o, xs, N(xs));
}

static void scene_histbig(struct out *o)
{
	static const int64_t xs[] = {
		2147483647, 2147483648, 4294967296, 5000000000,
		(int64_t)1 << 40, INT64_MAX, 1048576, 1073741824,
	};

	hist_scene(o, xs, N(xs));
}

static void scene_bars(struct out *o)
{
	static const int64_t xs[] = {
		1, 2, 2, 4, 4, 4, 8, 8, 8, 8, 8, 8, 16, 16, 16, 16, 16, 16, 16,
	};

	hist_scene(o, xs, N(xs));
}

static void scene_histkey(struct out *o)
{
	struct out_entry h[] = {
		HIST_ENTRY(I(3)), HIST_ENTRY(I(2)), HIST_ENTRY(I(1)),
	};

	hist(&h[2], 5);
	hist(&h[1], 5);
	hist(&h[1], 5);
	hist(&h[0], 100);
	hist(&h[0], -100);
	hist(&h[0], 0);
	out_attached(o, 1);
	out_exit_begin(o);
	out_map(o, &MAP("@h", OA_HIST, h));
}

static void scene_lhist(struct out *o)
{
	static const int64_t xs[] = { -5, 5, 15, 15, 100, 1000 };
	struct out_entry l[] = { LHIST_ENTRY(((struct out_val){ 0 }), 12) };
	struct out_map m = MAP("@l", OA_LHIST, l);

	m.lmax = 100;
	m.lstep = 10;
	for (size_t i = 0; i < N(xs); i++)
		lhist(&l[0], &m, xs[i]);
	out_attached(o, 1);
	out_exit_begin(o);
	out_map(o, &m);
}

static void scene_lhist2(struct out *o)
{
	struct out_entry k[] = { LHIST_ENTRY(((struct out_val){ 0 }), 6) };
	struct out_entry l[] = { LHIST_ENTRY(((struct out_val){ 0 }), 6) };
	struct out_entry n[] = { LHIST_ENTRY(((struct out_val){ 0 }), 5) };
	struct out_entry p[] = { LHIST_ENTRY(S("a"), 12) };
	struct out_map km = MAP("@k", OA_LHIST, k);
	struct out_map lm = MAP("@l", OA_LHIST, l);
	struct out_map nm = MAP("@n", OA_LHIST, n);
	struct out_map pm = MAP("@p", OA_LHIST, p);

	km.lmax = 4194304;
	km.lstep = 1048576;
	lm.lmax = 4096;
	lm.lstep = 1024;
	nm.lmax = 10;
	nm.lstep = 3;
	pm.lmax = 100;
	pm.lstep = 10;
	lhist(&l[0], &lm, 2048);
	lhist(&l[0], &lm, 5000);
	lhist(&k[0], &km, 3000000);
	lhist(&k[0], &km, 0);
	lhist(&n[0], &nm, 7);
	lhist(&n[0], &nm, 9);
	lhist(&n[0], &nm, 10);
	lhist(&p[0], &pm, 25);
	lhist(&p[0], &pm, 45);
	out_attached(o, 1);
	out_exit_begin(o);
	out_map(o, &km);
	out_map(o, &lm);
	out_map(o, &nm);
	out_map(o, &pm);
}

static void scene_msgs(struct out *o)
{
	out_attached(o, 2);
	out_printf(o, "hi 5\n", 5);
	out_printf(o, "no newline", 10);
	out_printf(o, "tab\there\n", 9);
	out_exit_begin(o);
}

static void scene_lost(struct out *o)
{
	out_lost(o, 5);
}

static void test_indexes(void)
{
	/* buckets as the hist one-liners above placed them */
	static const struct { int64_t n; int idx; } h[] = {
		{ INT64_MIN, 0 }, { -100, 0 }, { -1, 0 }, { 0, 1 }, { 1, 2 },
		{ 2, 3 }, { 3, 3 }, { 4, 4 }, { 5, 4 }, { 100, 8 },
		{ 1023, 11 }, { 1024, 12 }, { 1048576, 22 },
		{ 1073741824, 32 }, { 2147483647, 32 }, { 2147483648, 33 },
		{ 4294967296, 33 }, { 5000000000, 33 },
		{ (int64_t)1 << 40, 33 }, { INT64_MAX, 33 },
	};
	char name[64];

	for (size_t i = 0; i < N(h); i++) {
		snprintf(name, sizeof(name), "hist index %lld",
			 (long long)h[i].n);
		CHECK(out_hist_index(h[i].n) == h[i].idx, name);
	}
	CHECK(out_lhist_nbuckets(0, 100, 10) == 12, "lhist nbuckets 0..100/10");
	CHECK(out_lhist_nbuckets(0, 10, 3) == 5, "lhist nbuckets 0..10/3");
	/* lhist(x, 0, 10, 3): 7 in [6, 9), 9 and 10 in [10, ...) */
	CHECK(out_lhist_index(7, 0, 10, 3) == 3, "lhist index 7 (0,10,3)");
	CHECK(out_lhist_index(9, 0, 10, 3) == 4, "lhist index 9 (0,10,3)");
	CHECK(out_lhist_index(10, 0, 10, 3) == 4, "lhist index 10 (0,10,3)");
	CHECK(out_lhist_index(-5, 0, 100, 10) == 0, "lhist index below");
	CHECK(out_lhist_index(0, 0, 100, 10) == 1, "lhist index min");
	CHECK(out_lhist_index(99, 0, 100, 10) == 10, "lhist index 99");
	CHECK(out_lhist_index(100, 0, 100, 10) == 11, "lhist index max");
	CHECK(out_lhist_index(INT64_MAX, 0, 100, 10) == 11, "lhist index huge");
	CHECK(out_lhist_index(-25, -100, 100, 10) == 8, "lhist index negative");
}

static void test_val_str(void)
{
	char *s = out_val_str(&T(I(-1), S("a b"), U(UINT64_MAX), T(I(2))));

	CHECK_STR(s, "(-1, a b, 18446744073709551615, (2))", "out_val_str tuple");
	free(s);
}

/* A negative lhist range (bpftrace insists on min >= 0; we allow it). */
static void scene_neglhist(struct out *o)
{
	struct out_entry l[] = { LHIST_ENTRY(((struct out_val){ 0 }), 6) };
	struct out_map m = MAP("@l", OA_LHIST, l);

	m.lmin = -2048;
	m.lmax = 2048;
	m.lstep = 1024;
	lhist(&l[0], &m, -3000);
	lhist(&l[0], &m, -1);
	lhist(&l[0], &m, 0);
	out_map(o, &m);
}

static const char want_neglhist_text[] =
	"@l: \n"
	"(..., -2K)             1 |"
	"@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@|\n"
	"[-2K, -1K)             0 |"
	"                                                    |\n"
	"[-1K, 0)               1 |"
	"@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@|\n"
	"[0, 1K)                1 |"
	"@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@|\n"
	"\n";

/* smload: 132 SMs loaded in proportion to sm % 8, plus a nearly idle GPU */
static uint64_t load8[132], load_one[20];

static struct out_map smload_map(struct out_entry *e, size_t n)
{
	for (int i = 0; i < 132; i++)
		load8[i] = i % 8;
	load_one[3] = 5;
	e[0] = (struct out_entry){ .key = S("vadd"), .buckets = load8,
				   .nbuckets = 132 };
	if (n > 1)
		e[1] = (struct out_entry){ .key = S("gemm"),
					   .buckets = load_one,
					   .nbuckets = 20 };
	return (struct out_map){ .name = "@load", .agg = OA_SMLOAD,
				 .entries = e, .n = n };
}

static void scene_smload(struct out *o)
{
	struct out_entry e[2];
	struct out_map m = smload_map(e, 2);

	out_map(o, &m);
}

static void scene_smload_div(struct out *o)
{
	struct out_entry e[2];
	struct out_map m = smload_map(e, 2);

	out_map_top(o, &m, 1, 2);	/* the busiest entry, loads halved */
}

static void scene_smload_idle(struct out *o)
{
	uint64_t zero[3] = { 0 };
	struct out_entry e[] = { { .buckets = zero, .nbuckets = 3 } };

	out_map(o, &MAP("@idle", OA_SMLOAD, e));
}

static char *smload_want(const char *row, const char *last,
			 const char *full)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	fputs("@load[gemm]:\n"
	      "  SMs 20, total 5, mean 0.25, min 0 (SM 0), max 5 (SM 3), "
	      "imbalance 20.00, idle 19\n", f);
	fprintf(f, "  SM   0 |      %s%s                        |\n",
		full, full);
	fprintf(f, "  SM  16 |        |\n"
		"  scale: ' ' idle ... '%s' 5 (max)\n\n", full);
	fputs("@load[vadd]:\n"
	      "  SMs 132, total 454, mean 3.44, min 0 (SM 0), max 7 (SM 7), "
	      "imbalance 2.04, idle 17\n", f);
	for (int sm = 0; sm < 128; sm += 16)
		fprintf(f, "  SM %3d |%s%s|\n", sm, row, row);
	fprintf(f, "  SM 128 |%s|\n", last);
	fprintf(f, "  scale: ' ' idle ... '%s' 7 (max)\n\n", full);
	fclose(f);
	return buf;
}

static void test_smload(void)
{
	const char *w;
	char *want, *got, *p;
	size_t len = 0;
	FILE *f;

	want = smload_want("  ▂▂▃▃▄▄▅▅▆▆▇▇██", "  ▂▂▃▃▄▄", "█");
	got = render(OUT_TEXT, true, scene_smload);
	CHECK_STR(got, want, "smload text utf8");
	free(want);
	free(got);

	want = smload_want("  ::--==**##%%@@", "  ::--==", "@");
	got = render(OUT_TEXT, false, scene_smload);
	CHECK_STR(got, want, "smload text ascii");
	free(want);
	free(got);

	got = render(OUT_TEXT, false, scene_smload_div);
	/* v % 8 / 2: 0 0 1 1 2 2 3 3; 16 such rounds, then 0 0 1 1 */
	w = "@load[vadd]:\n  SMs 132, total 194, mean 1.47, min 0 (SM 0), "
	    "max 3 (SM 6), imbalance 2.04, idle 34\n"
	    "  SM   0 |    ----****@@@@    ----****@@@@|\n";
	CHECK(got && !strncmp(got, w, strlen(w)), "smload top and div");
	CHECK(got && !strstr(got, "gemm"), "smload top drops the idlest");
	free(got);

	got = render(OUT_TEXT, true, scene_smload_idle);
	CHECK_STR(got, "@idle:\n"
		  "  SMs 3, total 0, mean 0.00, min 0 (SM 0), max 0 (SM 0), "
		  "imbalance 0.00, idle 3\n"
		  "  SM   0 |      |\n"
		  "  scale: ' ' idle ... '█' 0 (max)\n\n", "smload all idle");
	free(got);

	want = NULL;
	f = open_memstream(&want, &len);
	fputs("{\"type\": \"smload\", \"data\": {\"@load\": {\"gemm\": "
	      "{\"sms\": [0, 0, 0, 5, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, "
	      "0, 0, 0, 0], \"total\": 5, \"mean\": 0.250, \"min\": 0, "
	      "\"min_sm\": 0, \"max\": 5, \"max_sm\": 3, \"imbalance\": "
	      "20.000, \"idle\": 19}, \"vadd\": {\"sms\": [", f);
	for (int i = 0; i < 132; i++)
		fprintf(f, i ? ", %d" : "%d", i % 8);
	fputs("], \"total\": 454, \"mean\": 3.439, \"min\": 0, \"min_sm\": 0, "
	      "\"max\": 7, \"max_sm\": 7, \"imbalance\": 2.035, "
	      "\"idle\": 17}}}}\n", f);
	fclose(f);
	got = render(OUT_JSON, true, scene_smload);
	CHECK_STR(got, want, "smload json");
	free(want);
	free(got);

	/* an unkeyed map: the object straight under the name */
	got = render(OUT_JSON, true, scene_smload_idle);
	p = got ? strstr(got, "\"@idle\": {\"sms\": [0, 0, 0]") : NULL;
	CHECK(p != NULL, "smload json unkeyed");
	free(got);
}

static void scene_utf8(struct out *o)
{
	out_printf(o, "\xc3\xa9\x01\n", 4);
}

int main(void)
{
	test_indexes();
	test_val_str();
	check_scene("basic", scene_basic, want_basic_text, want_basic_json);
	check_scene("signed", scene_signed, want_signed_text, want_signed_json);
	check_scene("sortint", scene_sortint, want_sortint_text,
		    want_sortint_json);
	check_scene("sortstr", scene_sortstr, want_sortstr_text,
		    want_sortstr_json);
	check_scene("bykey", scene_bykey, want_bykey_text, want_bykey_json);
	check_scene("minmax", scene_minmax, want_minmax_text, want_minmax_json);
	check_scene("stats", scene_stats, want_stats_text, want_stats_json);
	check_scene("values", scene_values, want_values_text, want_values_json);
	check_scene("top", scene_top, want_top_text, want_top_json);
	check_scene("histtop", scene_histtop, want_histtop_text,
		    want_histtop_json);
	check_scene("empty", scene_empty, want_empty_text, want_empty_json);
	check_scene("hist", scene_hist, want_hist_text, want_hist_json);
	check_scene("histbig", scene_histbig, want_histbig_text,
		    want_histbig_json);
	check_scene("histkey", scene_histkey, want_histkey_text,
		    want_histkey_json);
	check_scene("lhist", scene_lhist, want_lhist_text, want_lhist_json);
	check_scene("lhist2", scene_lhist2, want_lhist2_text, want_lhist2_json);
	check_scene("bars", scene_bars, want_bars_text, want_bars_json);
	check_scene("msgs", scene_msgs, want_msgs_text, want_msgs_json);
	check_scene("lost", scene_lost, want_lost_text, want_lost_json);

	char *got = render(OUT_TEXT, true, scene_neglhist);

	CHECK_STR(got, want_neglhist_text, "negative lhist text");
	free(got);
	/* bpftrace would print "\uffffffc3\uffffffa9": we keep UTF-8 valid */
	got = render(OUT_JSON, true, scene_utf8);
	CHECK_STR(got, "{\"type\": \"printf\", "
		  "\"data\": \"\xc3\xa9\\u0001\\n\"}\n", "json keeps utf-8");
	free(got);
	test_smload();
	UNIT_END();
}
