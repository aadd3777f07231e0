// Exact reduction of a huge argument modulo pi/2 (Payne-Hanek), in scalar integer arithmetic:
// the lanes of sin/cos (sin_cos.h) past the range of their Cody-Waite reduction come here one by
// one (GnuVecOps::reduce_pio2_huge), so that sin and cos keep their ulp bound over the whole
// range. Integer code plus one long double product, compiled once in the baseline library
// (ops/cpu/reduce_pio2.cpp; per-ISA kernel objects only call it): the same bits whatever the
// vector width or ISA.
//
// x = M 2^(E-52) (M the 53-bit integer significand). x * 2/pi mod 4 needs the bits of 2/pi from
// 2^-(E-55) on (earlier ones give multiples of 4): 192 of them, times M, is a 245-bit integer R
// with x * 2/pi = R 2^-188 + (error < 2^-135). Its bits 188-189 are the quadrant, the 188 below
// the fraction, rounded to the nearest quadrant (fraction in [-1/2, 1/2)); r = fraction * pi/2.
// The fraction keeps 124 + 64 bits: the double nearest a multiple of pi/2 has |r| ~ 2^-61, so r
// has more than 60 significant bits everywhere before its final rounding to double.
#pragma once
#include <cstdint>

namespace kiln::vecmath {

// r and q with x = q pi/2 + r, |r| <= pi/4 (r rounded to double, q mod 4), for a finite x with
// |x| >= 2^-8 (smaller ones would read before the table; sin/cos use it past 6000 / 1.5e6).
void reduce_pio2_huge(double x, double& r, int& q);

// The lanes of x (n of them) with bound < |x| < inf get r[i] and k[i] (the quadrant) of the
// exact reduction; the others keep theirs. A vector backend spills x, r and k, calls this and
// reloads them (GnuVecOps::reduce_pio2_huge; a JIT backend can call these by address).
void reduce_pio2_huge_lanes(const float* x, int n, double bound, float* r, int32_t* k);
void reduce_pio2_huge_lanes(const double* x, int n, double bound, double* r, int64_t* k);

}  // namespace kiln::vecmath
