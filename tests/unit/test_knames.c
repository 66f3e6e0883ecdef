// SPDX-License-Identifier: MIT
/*
 * Kernel keys (gpucode/kname.h) and their names at print time
 * (runtime/knames.c, maps_decode): whole names, instantiations apart,
 * unknown keys printed as such, plain strings untouched.
 */
#include <stdlib.h>
#include <string.h>

#include "compiler/types.h"
#include "gpucode/kname.h"
#include "lang/ast.h"
#include "runtime/knames.h"
#include "runtime/maps.h"
#include "unit.h"

#define SF "_ZN2hz6detail49stencil_kernel_with_a_name_long_enough_to_pass_64IfLi3EEEvPT_i"
#define SD "_ZN2hz6detail49stencil_kernel_with_a_name_long_enough_to_pass_64IdLi3EEEvPT_i"

static char *decode(const struct type *t, const void *key)
{
	struct out_val v;
	char *s;

	maps_decode(t, key, &v);
	s = strdup(v.type == OV_STR && v.s ? v.s : "(not a string)");
	maps_val_free(&v);
	return s;
}

int main(void)
{
	struct type *sym = type_symbol();
	char kf[GT_STRLEN], kd[GT_STRLEN], plain[GT_STRLEN] = "_Z4vaddPfS_S_i";
	char *s;
	int ok;

	/* FNV-1a 64 reference values */
	CHECK(kname_hash("") == 0xcbf29ce484222325ull, "hash/empty");
	CHECK(kname_hash("a") == 0xaf63dc4c8601ec8cull, "hash/a");
	kname_key(kf, sizeof(kf), SF);
	kname_key(kd, sizeof(kd), SD);
	CHECK(memcmp(kf, kd, sizeof(kf)) != 0, "key/instantiations differ");
	CHECK(kname_key_hash(kf, &ok) == kname_hash(SF) && ok, "key/hash");
	kname_key_hash(plain, &ok);
	CHECK(!ok, "key/plain text is no key");

	s = decode(sym, kf);
	CHECK(!strncmp(s, "unknown#", 8), "decode/unknown key");
	free(s);
	CHECK(knames_add(SF) == 0 && knames_add(SD) == 0, "add");
	CHECK(knames_add(SF) == 0, "add/twice");
	s = decode(sym, kf);
	CHECK_STR(s, "hz::detail::stencil_kernel_with_a_name_long_enough_to_pass_64<float, 3>",
		  "decode/float");
	free(s);
	s = decode(sym, kd);
	CHECK_STR(s, "hz::detail::stencil_kernel_with_a_name_long_enough_to_pass_64<double, 3>",
		  "decode/double");
	free(s);
	s = decode(sym, plain);
	CHECK_STR(s, "vadd", "decode/plain mangled string");
	free(s);
	knames_add("reduce_sum");
	kname_key(kf, sizeof(kf), "reduce_sum");
	s = decode(sym, kf);
	CHECK_STR(s, "reduce_sum", "decode/C name");
	free(s);
	/* many names: the table grows */
	for (int i = 0; i < 1000; i++) {
		char n[32];

		snprintf(n, sizeof(n), "k%d", i);
		knames_add(n);
	}
	kname_key(kf, sizeof(kf), "k777");
	s = decode(sym, kf);
	CHECK_STR(s, "k777", "decode/after growth");
	free(s);
	knames_reset();
	ast_free_all();
	UNIT_END();
}
