// SPDX-License-Identifier: MIT
/*
 * A stand-in for the CUDA runtime's registration entry points, so that a
 * library built with `nvcc -cudart none` can be loaded without a GPU and
 * the test can see the wrapper pointers its constructors pass in.
 */
#include <stddef.h>

void *fatbin_shim_wrappers[64];
int fatbin_shim_count;
static int handle;

void **__cudaRegisterFatBinary(void *wrapper)
{
	if (fatbin_shim_count < 64)
		fatbin_shim_wrappers[fatbin_shim_count++] = wrapper;
	return (void **)&handle;
}

void __cudaRegisterFatBinaryEnd(void **h) { }
void __cudaUnregisterFatBinary(void **h) { }
void __cudaRegisterFunction(void) { }
void __cudaRegisterVar(void) { }
void __cudaRegisterManagedVar(void) { }
int __cudaInitModule(void **h) { return 0; }
int __cudaPopCallConfiguration(void) { return 1; }
int __cudaPushCallConfiguration(void) { return 1; }
int __cudaLaunchKernel(void) { return 1; }
void *__cudaGetKernel(void) { return NULL; }
