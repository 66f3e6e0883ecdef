/* SPDX-License-Identifier: MIT */
#ifndef GT_LEX_H
#define GT_LEX_H

#include <stddef.h>

void lex_start(const char *text, size_t len);
void lex_end(void);
int gt_yylex(void);

#endif
