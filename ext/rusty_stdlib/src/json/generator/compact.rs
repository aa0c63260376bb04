//! json 2.x's part of the compact walk (`json::compact`): when its generator may use it,
//! and how it writes keys, Strings and Floats there.

use magnus::{
    prelude::*,
    rb_sys::{AsRawValue, FromRawValue},
    RString, Ruby, Symbol, Value,
};
use rb_sys::{ruby_value_type, VALUE};
use rusty_core::json as core;
use rusty_core::json::Output;

use super::{key_cache, Config, Gen};
use crate::json::compact::{Leaves, NeedsRuby};
use crate::json::output::RubyOutput;

/// Whether `cfg` has no layout strings: JSON.generate's default, and `fast_generate`'s.
pub(super) fn is_compact(cfg: &Config) -> bool {
    cfg.indent.is_none()
        && cfg.space.is_none()
        && cfg.space_before.is_none()
        && cfg.object_nl.is_none()
        && cfg.array_nl.is_none()
}

impl Gen<'_> {
    /// Whether the insides of a Hash or Array may be written by the compact walk now.
    #[inline(always)]
    pub(super) fn compact_now(&self) -> bool {
        self.compact && self.unprotected > 0 && self.spilled_from.is_none()
    }
}

impl Leaves for Gen<'_> {
    #[inline(always)]
    fn out(&mut self) -> &mut RubyOutput {
        &mut self.out
    }

    #[inline(always)]
    fn max_nesting(&self) -> i64 {
        self.cfg.max_nesting
    }

    /// A pair's key and colon, as `Gen::pair` writes them, from the key table when it
    /// has them.
    #[inline(always)]
    fn key(&mut self, ruby: &Ruby, key: VALUE, _first: ruby_value_type) -> Result<(), NeedsRuby> {
        let key = unsafe { Value::from_raw(key) };
        let escaping = self.key_escaping;
        let keys = self.keys.table();
        // SAFETY: see `key_cache::Lazy::table`; the table and the output are separate.
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
        Gen::string(self, ruby, name).map_err(|_| NeedsRuby)?;
        self.out.push(b':');
        if keep && self.out.len() - mark <= key_cache::MAX_LEN {
            // SAFETY: as above.
            unsafe { (*keys).put(key.as_raw(), escaping, &self.out[mark..]) };
        }
        Ok(())
    }

    #[inline(always)]
    fn string(&mut self, ruby: &Ruby, s: VALUE) -> Result<(), NeedsRuby> {
        let s = RString::from_value(unsafe { Value::from_raw(s) }).expect("a String");
        Gen::string(self, ruby, s).map_err(|_| NeedsRuby)
    }

    #[inline(always)]
    fn float(&mut self, ruby: &Ruby, f: VALUE) -> Result<(), NeedsRuby> {
        Gen::float(self, ruby, unsafe { Value::from_raw(f) }).map_err(|_| NeedsRuby)
    }
}
