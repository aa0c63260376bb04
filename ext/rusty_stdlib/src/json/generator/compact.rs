//! The compact layout's walk of core values: what `JSON.generate(obj)` writes for the
//! insides of a Hash or Array walked while no Ruby code can run (see `Gen::object`).
//!
//! The general walk reads the layout strings at every pair and element, counts depths in
//! the State (a `#to_json` may read them), and passes a `magnus::Error` back through
//! every level. None of that can matter here: there are no layout strings, no Ruby code
//! runs that could see a depth, and no error is made. So this walk keeps the depth in a
//! local, writes only brackets, commas and colons, and stops with [`NeedsRuby`] at
//! anything else (an object of another class, a key that is not a String or Symbol, a
//! nesting error): the caller then asks for the protected walk, which writes the whole
//! Hash again the general way.

use magnus::{
    prelude::*,
    rb_sys::{AsRawValue, FromRawValue},
    Fixnum, RString, Ruby, Symbol, Value,
};
use rb_sys::VALUE;
use rusty_core::json as core;

use super::{key_cache, Config, Gen};
use crate::helpers::hash::each_pair_quiet;
use crate::helpers::hash_layout::Pairs;
use crate::helpers::raw::class_of;

/// A compact walk met something only the general walk can write.
pub(super) struct NeedsRuby;

/// Whether `cfg` has no layout strings: JSON.generate's default, and `fast_generate`'s.
pub(super) fn is_compact(cfg: &Config) -> bool {
    cfg.indent.is_none()
        && cfg.space.is_none()
        && cfg.space_before.is_none()
        && cfg.object_nl.is_none()
        && cfg.array_nl.is_none()
}

impl Gen<'_> {
    /// Whether the insides of a Hash or Array may be written by this module's walk now.
    #[inline(always)]
    pub(super) fn compact_now(&self) -> bool {
        self.compact && self.unprotected > 0 && self.spilled_from.is_none()
    }

    /// The pairs of `hash`, entered at nesting `depth`, between its braces.
    pub(super) fn compact_pairs(
        &mut self,
        ruby: &Ruby,
        hash: VALUE,
        depth: i64,
    ) -> Result<(), NeedsRuby> {
        let mut first = true;
        // The loop over the table is written out here (not left to `each_pair_quiet`) so
        // that the pair's code is inlined into it.
        if let Some(mut pairs) = unsafe { Pairs::of(hash) } {
            // SAFETY: no Ruby code runs in this walk, so the Hash does not change.
            while let Some((key, value)) = unsafe { pairs.next() } {
                self.compact_pair(ruby, key, value, depth, &mut first)?;
            }
            return Ok(());
        }
        // SAFETY: nothing here runs Ruby code or raises.
        unsafe {
            each_pair_quiet(hash, |key, value| {
                self.compact_pair(ruby, key, value, depth, &mut first)
            })
        }
    }

    #[inline(always)]
    fn compact_pair(
        &mut self,
        ruby: &Ruby,
        key: VALUE,
        value: VALUE,
        depth: i64,
        first: &mut bool,
    ) -> Result<(), NeedsRuby> {
        if !*first {
            self.out.push(b',');
        }
        *first = false;
        self.compact_key(ruby, unsafe { Value::from_raw(key) })?;
        self.compact_value(ruby, unsafe { Value::from_raw(value) }, depth)
    }

    /// The elements of `ary`, entered at nesting `depth`, between its brackets.
    pub(super) fn compact_elements(
        &mut self,
        ruby: &Ruby,
        ary: VALUE,
        depth: i64,
    ) -> Result<(), NeedsRuby> {
        // No Ruby code runs, so the Array keeps its length and elements.
        let len = unsafe { rb_sys::RARRAY_LEN(ary) } as usize;
        let elements = unsafe { rb_sys::RARRAY_CONST_PTR(ary) };
        for i in 0..len {
            if i > 0 {
                self.out.push(b',');
            }
            let element = unsafe { Value::from_raw(*elements.add(i)) };
            self.compact_value(ruby, element, depth)?;
        }
        Ok(())
    }

    /// `Gen::value` inside a Hash or Array at nesting `depth`: inlined where it is used
    /// for the values written without their class (most of a document's leaves), the
    /// others written by `compact_object`.
    #[inline(always)]
    fn compact_value(&mut self, ruby: &Ruby, obj: Value, depth: i64) -> Result<(), NeedsRuby> {
        let raw = obj.as_raw();
        if raw == rb_sys::Qnil as VALUE {
            core::push_bytes(&mut self.out, b"null");
            return Ok(());
        } else if raw == rb_sys::Qfalse as VALUE {
            core::push_bytes(&mut self.out, b"false");
            return Ok(());
        } else if raw == rb_sys::Qtrue as VALUE {
            core::push_bytes(&mut self.out, b"true");
            return Ok(());
        } else if let Some(n) = Fixnum::from_value(obj) {
            core::write_i64(n.to_i64(), &mut self.out);
            return Ok(());
        }
        self.compact_object(ruby, obj, depth)
    }

    /// `compact_value` of a value with a class to look at.
    fn compact_object(&mut self, ruby: &Ruby, obj: Value, depth: i64) -> Result<(), NeedsRuby> {
        let raw = obj.as_raw();
        // The other immediates (Symbols, flonums) are rare: magnus finds their classes.
        let klass = if rb_sys::SPECIAL_CONST_P(raw) {
            obj.class().as_raw()
        } else {
            class_of(raw)
        };
        if klass == ruby.class_hash().as_raw() {
            let depth = self.compact_enter(depth + 1)?;
            self.out.push(b'{');
            self.compact_pairs(ruby, raw, depth)?;
            self.out.push(b'}');
            Ok(())
        } else if klass == ruby.class_array().as_raw() {
            let depth = self.compact_enter(depth + 1)?;
            // Most of citm_catalog.json's Arrays are empty.
            if unsafe { rb_sys::RARRAY_LEN(raw) } == 0 {
                core::push_bytes(&mut self.out, b"[]");
                return Ok(());
            }
            self.out.push(b'[');
            self.compact_elements(ruby, raw, depth)?;
            self.out.push(b']');
            Ok(())
        } else if klass == ruby.class_string().as_raw() {
            let s = RString::from_value(obj).expect("a String");
            self.string(ruby, s).map_err(|_| NeedsRuby)
        } else if klass == ruby.class_float().as_raw() {
            self.float(ruby, obj).map_err(|_| NeedsRuby)
        } else {
            Err(NeedsRuby)
        }
    }

    /// `Gen::enter`'s checks for nesting `depth`: the general walk raises where they fail.
    #[inline(always)]
    fn compact_enter(&self, depth: i64) -> Result<i64, NeedsRuby> {
        let max = self.cfg.max_nesting;
        if (max != 0 && depth > max) || (depth > 256 && unsafe { rb_sys::ruby_stack_check() } != 0)
        {
            return Err(NeedsRuby);
        }
        Ok(depth)
    }

    /// A pair's key and colon, as `Gen::pair` writes them, from the key table when it
    /// has them.
    #[inline(always)]
    fn compact_key(&mut self, ruby: &Ruby, key: Value) -> Result<(), NeedsRuby> {
        let escaping = self.key_escaping;
        let keys = self.key_table();
        // SAFETY: see `Gen::key_table`; the table and the output are separate.
        if let Some(written) = unsafe { (*keys).get(key.as_raw(), escaping) } {
            core::push_bytes(&mut self.out, written);
            return Ok(());
        }
        let mark = self.out.len();
        let name = if key.class().as_raw() == ruby.class_string().as_raw() {
            RString::from_value(key).expect("a String")
        } else if let Some(sym) = Symbol::from_value(key) {
            let name = unsafe { rb_sys::rb_sym2str(sym.as_raw()) };
            RString::from_value(unsafe { Value::from_raw(name) }).expect("a String")
        } else {
            return Err(NeedsRuby);
        };
        let keep = self.keeps_written(key, name);
        self.string(ruby, name).map_err(|_| NeedsRuby)?;
        self.out.push(b':');
        if keep && self.out.len() - mark <= key_cache::MAX_LEN {
            // SAFETY: as above.
            unsafe { (*keys).put(key.as_raw(), escaping, &self.out[mark..]) };
        }
        Ok(())
    }
}
