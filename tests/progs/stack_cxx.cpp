// SPDX-License-Identifier: MIT
/*
 * A C++ workload for the stack tests: st_leaf() (C linkage, in
 * stack_target's style) reached through a namespace, a class template's
 * method, an overload and an operator, so stacks show demangled frames
 * with their parameters.  Each round: shapes::Box<int>::area() once,
 * shapes::scale(double) twice, shapes::Box<int>::operator()(long) three
 * times, shapes::scale(int) four times; st_done() at the end.  No library calls: it links without
 * libstdc++.
 *
 *   stack_cxx [-n ROUNDS] [-w SYM[+OFF],...] [-k]
 */
#include <signal.h>
#include <unistd.h>

#include "probe_wait.h"

extern "C" int st_leaf(int x)
{
	return x + 1;
}

extern "C" void st_done(void)
{
}

namespace shapes {

template <typename T> struct Box {
	T w, h;
	T area() const
	{
		return (T)st_leaf((int)(w * h));
	}
	T operator()(long k) const
	{
		return (T)st_leaf((int)k) + w;
	}
};

int scale(int x)
{
	return st_leaf(x) * 2;
}

double scale(double x)
{
	return st_leaf((int)x) * 2.0;
}

}

int main(int argc, char **argv)
{
	struct probe_opts o = { .rounds = 3 };
	shapes::Box<int> b = { 2, 3 };
	long sum = 0;

	if (probe_opts(argc, argv, &o,
		       "usage: stack_cxx [-n ROUNDS] [-w SYM[+OFF],...] [-k]"))
		return 2;
	if (o.wait && wait_probes("stack_cxx", o.wait))
		return 1;
	for (int r = 0; r < o.rounds; r++) {
		sum += b.area();
		for (int i = 0; i < 2; i++)
			sum += (long)shapes::scale(1.5 * r);
		for (int i = 0; i < 3; i++)
			sum += b(r);
		for (int i = 0; i < 4; i++)
			sum += shapes::scale(r);
	}
	st_done();
	if (o.keep)
		pause();
	return sum == -1;
}
