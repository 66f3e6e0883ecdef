// SPDX-License-Identifier: MIT
/*
 * libgtdemo.so: C++ functions for the uprobe tests (namespaces, an
 * overload, a template, a method), so that demangling and matching by
 * demangled name are exercised.  gtdemo_run(r) calls each once.  No
 * library calls: it links without libstdc++.
 */
namespace gtdemo {

template <typename T> T scale(T x)
{
	return x * 3;
}

int twice(int x)
{
	return 2 * x;
}

double twice(double x)
{
	return 2 * x;
}

struct Counter {
	int n;
	int bump(int by);
};

int Counter::bump(int by)
{
	n += by;
	return n;
}

}

extern "C" int gtdemo_run(int r)
{
	gtdemo::Counter c = { 0 };

	return gtdemo::scale<int>(r) + gtdemo::twice(r) +
	       (int)gtdemo::twice(1.5) + c.bump(r + 1);
}
