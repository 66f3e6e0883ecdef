/* SPDX-License-Identifier: MIT */
/*
 * Addresses to names, as bpftrace 0.17 (through bcc) shows them: user
 * addresses through the ELF objects that /proc/PID/maps names (their
 * symbol tables and separate debug files, C++ demangled with
 * parameters), kernel ones through /proc/kallsyms.  Tables are cached
 * per file and maps per pid until symbolize_reset().
 */
#ifndef GT_SYMBOLIZE_H
#define GT_SYMBOLIZE_H

#include <stdbool.h>
#include <stdint.h>

/*
 * User address ADDR of process PID: "name", with OFFSET "name+off", with
 * MODULE " (path)" after it.  Unresolved (no such process any more, no
 * symbol): "0x7f..." and " ([unknown])".  Caller frees.
 */
char *symbolize_user(int pid, uint64_t addr, bool offset, bool module);
/* Kernel address: "name" or "name+off"; "0xffff..." when unknown. */
char *symbolize_kernel(uint64_t addr, bool offset);
void symbolize_reset(void);

#endif
