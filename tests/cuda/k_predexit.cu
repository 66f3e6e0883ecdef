// nvcc: -arch=sm_80
// Predicated ret/exit that nvcc would not write itself: inline asm.
__global__ void pexit(const unsigned *in, unsigned *out)
{
	unsigned v = in[threadIdx.x];

	asm volatile("{\n\t.reg .pred p;\n\tsetp.eq.u32 p, %0, 5;\n"
		     "\t@p exit;\n\t}" :: "r"(v));
	asm volatile("{\n\t.reg .pred q;\n\tsetp.gt.u32 q, %0, 100;\n"
		     "\t@!q bra.uni skip%=;\n\tret;\nskip%=:\n\t}" :: "r"(v));
	asm volatile("{\n\t.reg .pred r;\n\tsetp.ne.u32 r, %0, 9;\n"
		     "\t@!r ret;\n\t}" :: "r"(v));
	out[threadIdx.x] = v * 3;
	if (v == 7)
		asm volatile("exit;");
	out[blockDim.x + threadIdx.x] = v;
}
