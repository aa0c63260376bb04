#!/usr/bin/env python3
"""Prints the cached powers of ten Grisu2 uses (rusty_core::json::v3::fpconv): 10^k for
k = -348, -340, ..., 340, each as a 64-bit significand f rounded to nearest, and the
binary exponent e with 10^k ~= f * 2^e (f's top bit set). Exact integer arithmetic."""

from fractions import Fraction


def cached_power(k):
    value = Fraction(10) ** k
    e = value.numerator.bit_length() - value.denominator.bit_length() - 63
    while True:
        scaled = value / (Fraction(2) ** e)
        f = round(scaled)  # nearest (ties never occur for powers of ten here)
        if f >= 2**64:
            e += 1
        elif f < 2**63:
            e -= 1
        else:
            return f, e


print("/// Cached powers of ten, (significand, binary exponent), from 10^-348 to 10^340 in")
print("/// steps of 8 (tools/grisu_powers.py).")
print("const POWERS: [(u64, i32); 87] = [")
for i in range(87):
    f, e = cached_power(-348 + 8 * i)
    print(f"    ({f}, {e}),")
print("];")
