//! json 2.x's part of the compact walk (`json::compact`): when its generator may use it,
//! and how it writes keys, Strings and Floats there.

use magnus::{
    prelude::*,
    rb_sys::{AsRawValue, FromRawValue},
    RString, Ruby, Symbol, Value,
};
use rb_sys::{ruby_value_type, VALUE};
use rusty_core::json as core;
use rusty_core::json::layout_bytes::LayoutBytes;
use rusty_core::json::Output;

use super::{key_cache, Config, Dialect, Gen};
use crate::json::compact::{Layout, Leaves, NeedsRuby};
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

    /// Whether they may be written by the walk in another layout ([`Pretty`]) now: as
    /// for the compact one, no Ruby code can change the layout while it runs.
    #[inline(always)]
    pub(super) fn layout_now(&self) -> bool {
        !self.compact && self.unprotected > 0 && self.spilled_from.is_none()
    }

    /// This generation's layout, for the walk.
    pub(super) fn pretty(&self) -> Pretty {
        let cfg = &self.cfg;
        Pretty {
            indent: cfg.indent.clone(),
            object_nl: cfg.object_nl.clone(),
            array_nl: cfg.array_nl.clone(),
            object_delim2: self.object_delim2.clone(),
            array_delim: self.array_delim.clone(),
            object_layout: self.object_layout,
            colon_only: self.colon_only,
            empty_as_brackets: self.dialect == Dialect::V2_9,
        }
    }
}

/// A layout other than the compact one, written as `Gen::pair`, `Gen::object_walk` and
/// `Gen::array` write it (json 2.6 and 2.9 differ only in empty containers).
pub(super) struct Pretty {
    indent: Option<LayoutBytes>,
    object_nl: Option<LayoutBytes>,
    array_nl: Option<LayoutBytes>,
    /// `space_before`, `:`, `space`.
    object_delim2: LayoutBytes,
    /// `,` and `array_nl`.
    array_delim: LayoutBytes,
    /// Whether a pair starts with `object_nl` and the indent (either is set).
    object_layout: bool,
    colon_only: bool,
    /// json 2.9 writes an empty Hash as `{}` and an empty Array as `[]` in any layout.
    empty_as_brackets: bool,
}

impl Pretty {
    /// `indent` `depth` times (json writes no indent where it is unset).
    #[inline(always)]
    fn indent(&self, out: &mut RubyOutput, depth: i64) {
        if let Some(indent) = &self.indent {
            for _ in 0..depth {
                core::push_bytes(out, indent);
            }
        }
    }
}

impl Layout for Pretty {
    #[inline(always)]
    fn colon_in_key(&self) -> bool {
        self.colon_only
    }

    #[inline(always)]
    fn after_key(&self, out: &mut RubyOutput) {
        core::push_bytes(out, &self.object_delim2);
    }

    #[inline(always)]
    fn before_pair(&self, out: &mut RubyOutput, first: bool, depth: i64) {
        if !first {
            out.push(b',');
        }
        if self.object_layout {
            if let Some(nl) = &self.object_nl {
                core::push_bytes(out, nl);
            }
            self.indent(out, depth);
        }
    }

    #[inline(always)]
    fn close_object(&self, out: &mut RubyOutput, depth: i64) {
        if let Some(nl) = &self.object_nl {
            core::push_bytes(out, nl);
            self.indent(out, depth - 1);
        }
    }

    #[inline(always)]
    fn open_array(&self, out: &mut RubyOutput) {
        if let Some(nl) = &self.array_nl {
            core::push_bytes(out, nl);
        }
    }

    #[inline(always)]
    fn before_element(&self, out: &mut RubyOutput, first: bool, depth: i64) {
        if !first {
            core::push_bytes(out, &self.array_delim);
        }
        self.indent(out, depth);
    }

    #[inline(always)]
    fn close_array(&self, out: &mut RubyOutput, depth: i64) {
        if let Some(nl) = &self.array_nl {
            core::push_bytes(out, nl);
            self.indent(out, depth - 1);
        }
    }

    #[inline(always)]
    fn empty_object_differs(&self) -> bool {
        true
    }

    fn empty_object(&self, out: &mut RubyOutput, depth: i64) {
        if self.empty_as_brackets {
            core::push_bytes(out, b"{}");
        } else {
            out.push(b'{');
            self.close_object(out, depth);
            out.push(b'}');
        }
    }

    fn empty_array(&self, out: &mut RubyOutput, depth: i64) {
        if self.empty_as_brackets || self.array_nl.is_none() {
            core::push_bytes(out, b"[]");
        } else {
            out.push(b'[');
            self.open_array(out);
            self.close_array(out, depth);
            out.push(b']');
        }
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

    /// A pair's key (and colon), as `Gen::pair` writes them, from the key table when it
    /// has them.
    #[inline(always)]
    fn key(
        &mut self,
        ruby: &Ruby,
        key: VALUE,
        _first: ruby_value_type,
        colon: bool,
    ) -> Result<(), NeedsRuby> {
        let key = unsafe { Value::from_raw(key) };
        let escaping = key_cache::kept_escaping(self.key_escaping, colon);
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
        if colon {
            self.out.push(b':');
        }
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
