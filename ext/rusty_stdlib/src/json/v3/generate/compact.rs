//! json 3's part of the compact walk (`json::compact`): when its generator may use it,
//! and how it writes keys, Strings and Floats there (as `Gen::pair`, `Gen::value` and
//! `Gen::float` would, or not at all).

use magnus::{rb_sys::AsRawValue, Ruby};
use rb_sys::{ruby_value_type, VALUE};
use rusty_core::json as core;
use rusty_core::json::Output;

use super::{utf8_text, valid_string, Gen};
use crate::helpers::raw::class_of;
use crate::json::compact::{Leaves, NeedsRuby};
use crate::json::key_cache;
use crate::json::output::RubyOutput;

impl Gen<'_> {
    /// Whether the insides of a Hash or Array may be written by the compact walk now: in
    /// an unprotected walk, with no layout strings and no `sort_keys` (read afresh, as a
    /// `#to_json` may have changed the settings).
    #[inline(always)]
    pub(super) fn compact_now(&self) -> bool {
        let c = &self.config;
        self.unprotected > 0
            && c.indent == 0
            && c.space == 0
            && c.space_before == 0
            && c.object_nl == 0
            && c.array_nl == 0
            && c.sort_keys == 0
    }
}

impl Leaves for Gen<'_> {
    #[inline(always)]
    fn out(&mut self) -> &mut RubyOutput {
        &mut self.out
    }

    #[inline(always)]
    fn max_nesting(&self) -> i64 {
        self.config.max_nesting
    }

    /// A String key of class String or a Symbol, of the Hash's first key's type (json 3
    /// checks Hashes with both for keys that collide: the general walk does), with valid
    /// UTF-8 text. Runs at every pair: the key table is looked up before a Symbol's text
    /// is fetched (`rb_sym2str`, a call), and with the key's type already known. This is
    /// `Gen::known_key` and `Gen::remember_key` for the compact layout, written out:
    /// calling them here (with their own type and layout checks) cost 4% of twitter's
    /// generate.
    #[inline(always)]
    fn key(
        &mut self,
        ruby: &Ruby,
        key: VALUE,
        first: ruby_value_type,
        colon: bool,
    ) -> Result<(), NeedsRuby> {
        // json 3's generator walks only the compact layout this way.
        debug_assert!(colon);
        let key_type = unsafe { rb_sys::RB_TYPE(key) };
        if key_type != first {
            return Err(NeedsRuby);
        }
        match key_type {
            ruby_value_type::RUBY_T_STRING if class_of(key) == ruby.class_string().as_raw() => {}
            ruby_value_type::RUBY_T_SYMBOL => {}
            _ => return Err(NeedsRuby),
        }
        let keepable = key_cache::keepable_as(key, key_type);
        // The compact layout's delimiter is the `:` kept with the key.
        debug_assert!(self.colon_only);
        let escaping = self.key_escaping;
        if keepable {
            // SAFETY: see `key_cache::Lazy::table`; the table and the output are separate.
            if let Some(written) = unsafe { (*self.keys.table()).get(key, escaping) } {
                core::push_bytes(&mut self.out, written);
                return Ok(());
            }
        }
        let text = if key_type == ruby_value_type::RUBY_T_SYMBOL {
            unsafe { rb_sys::rb_sym2str(key) }
        } else {
            key
        };
        if !utf8_text(text) {
            return Err(NeedsRuby);
        }
        let mark = self.out.len();
        self.valid_raw_string(text).map_err(|_| NeedsRuby)?;
        self.out.push(b':');
        if keepable && self.out.len() - mark <= key_cache::MAX_LEN {
            // SAFETY: as above.
            unsafe { (*self.keys.table()).put(key, escaping, &self.out[mark..]) };
        }
        Ok(())
    }

    #[inline(always)]
    fn string(&mut self, _ruby: &Ruby, s: VALUE) -> Result<(), NeedsRuby> {
        if !valid_string(s) {
            return Err(NeedsRuby);
        }
        self.valid_raw_string(s).map_err(|_| NeedsRuby)
    }

    #[inline(always)]
    fn float(&mut self, _ruby: &Ruby, f: VALUE) -> Result<(), NeedsRuby> {
        let f = crate::helpers::float::value(f);
        if !f.is_finite() {
            return Err(NeedsRuby);
        }
        core::v3::fpconv::write_f64(f, &mut self.out);
        Ok(())
    }
}
