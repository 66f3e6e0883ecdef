// SPDX-License-Identifier: MIT
/*
 * kname(kernel)'s folding (runtime/kname_fold.c) on names as PyTorch,
 * CUTLASS, CUB, Triton and plain CUDA C give them (demangled, with and
 * without the parameter list), and the fold of rows that print alike
 * (runtime/maps_fold.c).
 */
#include <stdlib.h>
#include <string.h>

#include "runtime/kname_fold.h"
#include "runtime/maps.h"
#include "unit.h"

static const char *const cases[][2] = {
	{ "at::native::vectorized_elementwise_kernel<4, at::native::GeluCUDAKernelImpl(at::TensorIteratorBase&, at::native::GeluType)::{lambda()#2}::operator()() const::{lambda()#2}::operator()() const::{lambda(float)#1}, std::array<char*, 2ul> >",
	  "at::native::vectorized_elementwise_kernel<...>" },
	{ "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, std::array<char*, 1ul> >(int, at::native::FillFunctor<float>, std::array<char*, 1ul>)",
	  "at::native::vectorized_elementwise_kernel<...>" },
	{ "void foo<int>(int*)", "foo<...>" },
	{ "void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<float, float>(int, float, float const*, float const*, float const*, float*, float*, float*)",
	  "at::native::(anonymous namespace)::vectorized_layer_norm_kernel<...>" },
	{ "at::native::(anonymous namespace)::cunn_SoftMaxForward<4, float, float, float, at::native::(anonymous namespace)::SoftMaxForwardEpilogue>",
	  "at::native::(anonymous namespace)::cunn_SoftMaxForward<...>" },
	{ "void at::native::elementwise_kernel<128, 2, at::native::gpu_kernel_impl_nocast<at::native::AUnaryFunctor<float, float, float, at::native::binary_internal::MulFunctor<float> > >(at::TensorIteratorBase&, at::native::AUnaryFunctor<float, float, float, at::native::binary_internal::MulFunctor<float> > const&)::{lambda(int)#1}>(int, at::native::gpu_kernel_impl_nocast<at::native::AUnaryFunctor<float, float, float, at::native::binary_internal::MulFunctor<float> > >(at::TensorIteratorBase&, at::native::AUnaryFunctor<float, float, float, at::native::binary_internal::MulFunctor<float> > const&)::{lambda(int)#1})",
	  "at::native::elementwise_kernel<...>" },
	{ "void cutlass::Kernel2<cutlass_80_tensorop_s1688gemm_64x64_16x6_tn_align4>(cutlass_80_tensorop_s1688gemm_64x64_16x6_tn_align4::Params)",
	  "cutlass::Kernel2<...>" },
	{ "cub::CUB_300001_SM_900::detail::scan::DeviceScanInitKernel<cub::CUB_300001_SM_900::ScanTileState<unsigned int, true> >",
	  "cub::CUB_300001_SM_900::detail::scan::DeviceScanInitKernel<...>" },
	{ "triton_per_fused_native_layer_norm_0", "triton_per_fused_native_layer_norm_0" },
	{ "add_kernel", "add_kernel" },
	{ "sm90_xmma_gemm_f32f32_tf32f32_f32_tn_n_tilesize128x128x32_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas",
	  "sm90_xmma_gemm_f32f32_tf32f32_f32_tn_n_tilesize128x128x32_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas" },
	{ "my::Functor::operator()", "my::Functor::operator()" },
	{ "ns::operator<<", "ns::operator<<" },
	{ "ns::operator< <int>", "ns::operator<<...>" },
	{ "void ns::foo<1>::bar(int) const", "ns::foo<...>::bar" },
	{ "unsigned int helper(float)", "helper" },
	{ "f(int)::{lambda()#1}::operator()() const", "f(...)::{lambda#1}::operator()" },
	{ "g()::{lambda(float)#3}::operator()", "g()::{lambda#3}::operator()" },
	/* template-free names stay whole, however long (cuBLAS's) */
	{ "sm80_xmma_gemm_f32f32_f32f32_f32_tn_n_tilesize32x32x8_stage3_warpsize1x2x1_ffma_aligna4_alignc4_execute_kernel__5x_cublas",
	  "sm80_xmma_gemm_f32f32_f32f32_f32_tn_n_tilesize32x32x8_stage3_warpsize1x2x1_ffma_aligna4_alignc4_execute_kernel__5x_cublas" },
	/* PyTorch 2.11's longest (ml_train.sh), lambdas inside the
	 * template arguments */
	{ "at::native::(anonymous namespace)::distribution_elementwise_grid_stride_kernel<float, 4, at::native::templates::cuda::normal_and_transform<float, float, at::CUDAGeneratorImpl*, at::native::templates::cuda::normal_kernel<at::CUDAGeneratorImpl*>(at::TensorBase const&, double, double, at::CUDAGeneratorImpl*)::{lambda()#1}::operator()() const::{lambda()#2}::operator()() const::{lambda(float)#1}>(at::TensorIteratorBase&, at::CUDAGeneratorImpl*, at::native::templates::cuda::normal_kernel<at::CUDAGeneratorImpl*>(at::TensorBase const&, double, double, at::CUDAGeneratorImpl*)::{lambda()#1}::operator()() const::{lambda()#2}::operator()() const::{lambda(float)#1})::{lambda(curandStatePhilox4_32_10*)#2}, at::native::templates::cuda::normal_kernel<at::CUDAGeneratorImpl*>(at::TensorBase const&, double, double, at::CUDAGeneratorImpl*)::{lambda()#1}::operator()() const::{lambda()#2}::operator()() const::{lambda(float)#1}>",
	  "at::native::(anonymous namespace)::distribution_elementwise_grid_stride_kernel<...>" },
	{ "at::native::unrolled_elementwise_kernel<at::native::direct_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda()#3}::operator()() const::{lambda()#6}::operator()() const::{lambda(double)#1}, std::array<char*, 2ul>, 4, TrivialOffsetCalculator<1, unsigned int>, TrivialOffsetCalculator<1, unsigned int>, at::native::memory::LoadWithCast<1>, at::native::memory::StoreWithCast<1> >",
	  "at::native::unrolled_elementwise_kernel<...>" },
	{ "at::native::reduce_kernel<512, 1, at::native::ReduceOp<bool, at::native::func_wrapper_t<bool, at::native::and_kernel_cuda(at::TensorIterator&)::{lambda()#1}::operator()() const::{lambda()#12}::operator()() const::{lambda(bool, bool)#1}>, unsigned int, bool, 4, 4> >",
	  "at::native::reduce_kernel<...>" },
	/* operators and -> inside template arguments are not brackets */
	{ "void k<&cmp::operator<, 2>(int)", "k<...>" },
	{ "void k<&cmp::operator>>, 2>::run(int)", "k<...>::run" },
	{ "void k<decltype (((int*)0)->x), 1>(int)", "k<...>" },
	{ "", "" },
};

int main(void)
{
	struct out_entry e[3] = { 0 };
	struct out_map om = { .agg = OA_COUNT, .entries = e, .n = 3 };
	char name[64];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *s = kname_fold(cases[i][0]);

		snprintf(name, sizeof(name), "fold/%zu", i);
		CHECK_STR(s, cases[i][1], name);
		free(s);
	}
	/* two instantiations and another kernel: two rows, counts summed */
	for (int i = 0; i < 3; i++) {
		e[i].key.type = OV_STR;
		e[i].key.s = strdup(i == 1 ? "vadd" : "foo<...>");
		e[i].val.type = OV_UINT;
		e[i].val.i = 10 + i;
	}
	maps_fold_alike(&om);
	CHECK(om.n == 2, "alike/rows");
	CHECK(om.n == 2 && !strcmp(e[0].key.s, "foo<...>") && e[0].val.i == 22 &&
	      !strcmp(e[1].key.s, "vadd") && e[1].val.i == 11, "alike/sum");
	for (size_t i = 0; i < om.n; i++)
		maps_val_free(&e[i].key);
	return unit_failed;
}
