// SPDX-License-Identifier: MIT
/* The semaphore-guarded probe of usdt_target (its own file: with
 * _SDT_HAS_SEMAPHORES every probe of a file needs a semaphore). */
#define _SDT_HAS_SEMAPHORES 1
#include <stdio.h>
#include <sys/sdt.h>

unsigned short gt_guarded_semaphore
	__attribute__((unused, section(".probes")));

void usdt_guarded(int i)
{
	/* the argument's cost is only paid under a tracer */
	if (gt_guarded_semaphore)
		DTRACE_PROBE1(gt, guarded, i * 100);
}
