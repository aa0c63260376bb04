//! Floats to and from Ruby values without a call into Ruby for the common case: on 64-bit
//! Rubies most doubles are flonums, immediates that encode the double in the VALUE itself
//! (Ruby's own `rb_float_new` and `RFLOAT_VALUE` are inline functions doing the same).
//! canada.json's 111k floats each paid a call before.

use rb_sys::VALUE;

/// The flonum 0.0 (the one double whose encoding is not its bits rotated).
#[cfg(target_pointer_width = "64")]
const FLONUM_ZERO: VALUE = 0x8000_0000_0000_0002;

/// A Float for `f`: a flonum where Ruby makes one, else a heap Float.
#[inline(always)]
pub fn new(f: f64) -> VALUE {
    #[cfg(target_pointer_width = "64")]
    {
        let bits = f.to_bits();
        // Flonums hold the doubles whose exponent's top bits are 011 or 100 (about
        // 1e-77 to 1e77), except those that would encode as 0.
        let exponent_top = (bits >> 60) & 0x7;
        if bits != 0x3000_0000_0000_0000 && (exponent_top.wrapping_sub(3) & !1) == 0 {
            return ((bits.rotate_left(3) & !1) | 2) as VALUE;
        }
        if bits == 0 {
            return FLONUM_ZERO;
        }
    }
    unsafe { rb_sys::rb_float_new(f) }
}

/// The double of `float`, a Float (flonum or heap).
#[inline(always)]
pub fn value(float: VALUE) -> f64 {
    #[cfg(target_pointer_width = "64")]
    if rb_sys::FLONUM_P(float) {
        if float == FLONUM_ZERO {
            return 0.0;
        }
        // The inverse of `new`'s rotation: bit 63 of the VALUE says which of 011/100
        // the exponent's top bits were.
        let b63 = float >> 63;
        return f64::from_bits(((2 - b63) | (float & !3)).rotate_right(3));
    }
    unsafe { rb_sys::rb_float_value(float) }
}
