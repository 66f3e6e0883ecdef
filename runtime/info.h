/* SPDX-License-Identifier: MIT */
/* --info: what this system offers gputrace, in bpftrace --info's layout. */
#ifndef GT_INFO_H
#define GT_INFO_H

#include <stdio.h>

int info_print(FILE *f, const char *version);

#endif
