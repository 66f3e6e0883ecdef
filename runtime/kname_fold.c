// SPDX-License-Identifier: MIT
/*
 * Short kernel names.  PyTorch's are 200-400 characters, most of them
 * the template arguments (lambdas of lambdas, std::array<char*, 2ul>):
 *
 *   at::native::vectorized_elementwise_kernel<4, at::native::
 *   GeluCUDAKernelImpl(at::TensorIteratorBase&, ...)::{lambda()#2}::
 *   operator()() const::{lambda(float)#1}, std::array<char*, 2ul> >
 *
 * prints as at::native::vectorized_elementwise_kernel<...>.  One pass
 * over the name at bracket depth 0; what is inside a bracket pair is
 * skipped whole.
 */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/kname_fold.h"

static bool starts(const char *s, const char *w);
static size_t op_len(const char *s);

/*
 * The index just past the bracket that closes the one at S[I].  An
 * operator's symbol (&cmp::operator<, operator()) and "->" (decltype)
 * inside are not brackets: counted as such, the group would end early
 * and most of the name stay.
 */
static size_t skip_group(const char *s, size_t i)
{
	int depth = 0;

	for (; s[i]; i++) {
		char c = s[i];

		if (depth && starts(s + i, "operator") && op_len(s + i + 8)) {
			i += 8 + op_len(s + i + 8) - 1;
			continue;
		}
		if (depth && c == '-' && s[i + 1] == '>') {
			i++;
			continue;
		}

		if (c == '<' || c == '(' || c == '[' || c == '{')
			depth++;
		else if (c == '>' || c == ')' || c == ']' || c == '}')
			depth--;
		if (!depth)
			return i + 1;
	}
	return i;
}

static bool starts(const char *s, const char *w)
{
	return !strncmp(s, w, strlen(w));
}

/* After "operator" at S: the length of the operator's symbol. */
static size_t op_len(const char *s)
{
	static const char *const ops[] = {
		"()", "[]", "<<=", ">>=", "<<", ">>", "<=>", "<=", ">=", "->*",
		"->", "<", ">", NULL,
	};

	for (int i = 0; ops[i]; i++)
		if (starts(s, ops[i]))
			return strlen(ops[i]);
	return 0;
}

char *kname_fold(const char *name)
{
	size_t n = strlen(name), o = 0, i = 0;
	char *out = malloc(n + 8);

	if (!out)
		return NULL;
	while (name[i]) {
		char c = name[i];

		if (starts(name + i, "(anonymous namespace)")) {
			memcpy(out + o, name + i, 21);
			o += 21;
			i += 21;
		} else if (starts(name + i, "operator") &&
			   op_len(name + i + 8)) {
			size_t k = 8 + op_len(name + i + 8);

			memcpy(out + o, name + i, k);
			o += k;
			i += k;
		} else if (c == '<') {
			i = skip_group(name, i);
			memcpy(out + o, "<...>", 5);
			o += 5;
		} else if (c == '(') {
			size_t e = skip_group(name, i);

			/* a scope's parameters (f(int)::{lambda()#1}) fold;
			 * the kernel's own end the name */
			if (!starts(name + e, "::") &&
			    !starts(name + e, " const::"))
				break;
			memcpy(out + o, e == i + 2 ? "()" : "(...)",
			       e == i + 2 ? 2 : 5);
			o += e == i + 2 ? 2 : 5;
			i = e;
			if (starts(name + i, " const"))
				i += 6;
		} else if (starts(name + i, "{lambda(")) {
			size_t e = skip_group(name, i);
			const char *h = memchr(name + i, '#', e - i);

			/* {lambda(float)#1} -> {lambda#1} */
			memcpy(out + o, "{lambda", 7);
			o += 7;
			if (h) {
				memcpy(out + o, h, e - (size_t)(h - name) - 1);
				o += e - (size_t)(h - name) - 1;
			}
			out[o++] = '}';
			i = e;
		} else if (c == ' ' && name[i + 1] == '<') {
			i++;	/* operator< <int> */
		} else if (c == ' ' && !(o && out[o - 1] == ',')) {
			/* what came before a space at depth 0 was the
			 * return type ("void "); a qualifier after it ends
			 * the name */
			if (starts(name + i + 1, "const") ||
			    starts(name + i + 1, "volatile") ||
			    name[i + 1] == '&' || name[i + 1] == '[')
				break;
			o = 0;
			i++;
		} else {
			out[o++] = c;
			i++;
		}
	}
	out[o] = 0;
	return out;
}
