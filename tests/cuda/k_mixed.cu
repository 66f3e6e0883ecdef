// nvcc: -arch=sm_80
// A long mixed parameter list: every scalar width, floats, pointers and
// structs passed by value (aligned 8, aligned 4 and odd-sized).
struct big { int a; double b; char c; };
struct trio { int x, y, z; };
struct tiny { char c[3]; };

__global__ void mixed(char c, short s, int i, long l, float f, double d,
		      int *p, big st, unsigned char uc, trio t, tiny ty,
		      unsigned long long ull, const double *pd, signed char sc)
{
	*p = c + s + i + (int)l + (int)f + (int)d + st.a + (int)st.b +
	     st.c + uc + t.x + t.y + t.z + ty.c[0] + ty.c[2] + (int)ull +
	     (int)pd[0] + sc;
}
