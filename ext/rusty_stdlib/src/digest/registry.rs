//! The classes built so far, one per algorithm, for exact-class checks on fast paths.

use std::sync::atomic::{AtomicUsize, Ordering};

use magnus::rb_sys::{AsRawValue, FromRawValue};
use magnus::{RClass, Ruby, Value};
use rusty_core::digest::Algorithm;

// Raw VALUEs of the built classes (0 = not built). They are registered with the GC as
// permanent objects and never move, so a plain integer is a safe handle.
static CLASSES: [AtomicUsize; Algorithm::ALL.len()] = [const { AtomicUsize::new(0) }; 6];

fn slot(algorithm: Algorithm) -> &'static AtomicUsize {
    &CLASSES[Algorithm::ALL.iter().position(|a| *a == algorithm).unwrap_or(0)]
}

pub fn register(ruby: &Ruby, algorithm: Algorithm, class: RClass) {
    ruby.gc_register_mark_object(class);
    slot(algorithm).store(class.as_raw() as usize, Ordering::Release);
}

pub fn class_for(_ruby: &Ruby, algorithm: Algorithm) -> Option<RClass> {
    let raw = slot(algorithm).load(Ordering::Acquire);
    if raw == 0 {
        return None;
    }
    RClass::from_value(unsafe { Value::from_raw(raw as _) })
}

/// The algorithm whose built class is exactly `class` (not a subclass).
pub fn algorithm_of_class(class: Value) -> Option<Algorithm> {
    let raw = class.as_raw() as usize;
    Algorithm::ALL
        .into_iter()
        .find(|a| slot(*a).load(Ordering::Acquire) == raw)
}

/// Whether `class` is exactly the class built for `algorithm`.
pub fn is_builtin(class: Value, algorithm: Algorithm) -> bool {
    slot(algorithm).load(Ordering::Acquire) == class.as_raw() as usize
}
