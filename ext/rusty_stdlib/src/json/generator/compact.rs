//! json 2.x's part of the table walk (`json::compact`): when its generator may use it,
//! how it writes keys, Strings and Floats there, and the layout it writes
//! ([`StateLayout`], which the general walk writes too).

use magnus::{
    prelude::*,
    rb_sys::{AsRawValue, FromRawValue},
    Error, RString, Ruby, Symbol, Value,
};
use rb_sys::{ruby_value_type, VALUE};
use rusty_core::json as core;
use rusty_core::json::layout_bytes::LayoutBytes;
use rusty_core::json::Output;

use super::{key_cache, Config, Dialect, Gen, State};
use crate::json::compact::{self, Layout, Leaves, NeedsRuby};
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

    /// The insides of a Hash entered at `depth`, by the table walk in `layout`; where it
    /// stops, the error that asks for the protected walk (see `Gen::ruby_needed`).
    pub(super) fn table_pairs<L: Layout>(
        &mut self,
        layout: &L,
        ruby: &Ruby,
        hash: VALUE,
        depth: i64,
    ) -> Result<(), Error> {
        if compact::pairs(self, layout, ruby, hash, depth).is_err() {
            return self.ruby_needed(ruby);
        }
        Ok(())
    }

    /// An Array entered at `depth` after its `[`, by the table walk in `layout`: its
    /// insides and its `]`, with `state`'s depth put back. Where the walk stops, the
    /// error that asks for the protected walk.
    pub(super) fn table_array<L: Layout>(
        &mut self,
        layout: &L,
        ruby: &Ruby,
        ary: VALUE,
        depth: i64,
        state: &State,
    ) -> Result<(), Error> {
        layout.open_array(&mut self.out);
        if compact::elements(self, layout, ruby, ary, depth).is_err() {
            return self.ruby_needed(ruby);
        }
        state.depth.set(depth - 1);
        layout.close_array(&mut self.out, depth);
        self.out.push(b']');
        Ok(())
    }

    /// Whether they may be written by the table walk in another layout
    /// ([`StateLayout`]) now: as for the compact one, no Ruby code can change the layout
    /// while it runs.
    #[inline(always)]
    pub(super) fn layout_now(&self) -> bool {
        !self.compact && self.unprotected > 0 && self.spilled_from.is_none()
    }
}

/// The layout strings of a generation and the delimiters made from them, as the general
/// walk (`Gen::pair`, `Gen::object_walk`, `Gen::array`) and the table walk (json::compact,
/// for any layout but the compact one, which has [`crate::json::compact::Compact`]) both
/// write them. json 2.6 and 2.9 differ only in empty containers, which only the table walk
/// writes here.
#[derive(Clone)]
pub(super) struct StateLayout {
    indent: Option<LayoutBytes>,
    object_nl: Option<LayoutBytes>,
    array_nl: Option<LayoutBytes>,
    /// `space_before`, `:`, `space`.
    object_delim2: LayoutBytes,
    /// `,` and `array_nl`.
    array_delim: LayoutBytes,
    /// Whether a pair starts with `object_nl` and the indent (either is set).
    object_layout: bool,
    /// Whether `object_delim2` is the compact layout's `:`, which is kept with the key.
    colon_only: bool,
    /// json 2.9 writes an empty Hash as `{}` and an empty Array as `[]` in any layout.
    empty_as_brackets: bool,
}

impl StateLayout {
    /// `cfg`'s layout (`compact`: [`is_compact`] of it). The delimiters need no
    /// allocation (see `LayoutBytes`); the compact layout's are constants, made without
    /// `concat`'s copying loop (about 200 instructions of a small `JSON.generate`).
    #[inline(always)]
    pub(super) fn new(cfg: &Config, compact: bool, dialect: Dialect) -> StateLayout {
        let empty_as_brackets = dialect == Dialect::V2_9;
        if compact {
            // No layout string is set: nothing to read or copy.
            return StateLayout {
                indent: None,
                object_nl: None,
                array_nl: None,
                object_delim2: LayoutBytes::byte(b':'),
                array_delim: LayoutBytes::byte(b','),
                object_layout: false,
                colon_only: true,
                empty_as_brackets,
            };
        }
        let object_delim2 = LayoutBytes::concat(&[
            cfg.space_before.as_deref().unwrap_or(b""),
            b":",
            cfg.space.as_deref().unwrap_or(b""),
        ]);
        StateLayout {
            indent: cfg.indent.clone(),
            object_nl: cfg.object_nl.clone(),
            array_nl: cfg.array_nl.clone(),
            colon_only: &object_delim2[..] == b":",
            object_delim2,
            array_delim: LayoutBytes::concat(&[b",", cfg.array_nl.as_deref().unwrap_or(b"")]),
            object_layout: cfg.object_nl.is_some() || cfg.indent.is_some(),
            empty_as_brackets,
        }
    }

    /// `indent` `depth` times (json writes no indent where it is unset).
    #[inline(always)]
    fn indent(&self, out: &mut RubyOutput, depth: i64) {
        if let Some(indent) = &self.indent {
            for _ in 0..depth {
                core::push_bytes(out, indent);
            }
        }
    }

    /// Before a container's closing bracket: its newline, if set, and the indent of the
    /// level around it.
    #[inline(always)]
    fn close(&self, out: &mut RubyOutput, nl: &Option<LayoutBytes>, depth: i64) {
        if let Some(nl) = nl {
            core::push_bytes(out, nl);
            self.indent(out, depth - 1);
        }
    }
}

impl Layout for StateLayout {
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
        self.close(out, &self.object_nl, depth);
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
        self.close(out, &self.array_nl, depth);
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
