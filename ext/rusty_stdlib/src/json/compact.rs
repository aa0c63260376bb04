//! The compact layout's walk of core values, for both generators (json 2.x's in
//! `generator`, json 3's in `v3::generate`): what `JSON.generate(obj)` writes for the
//! insides of a Hash or Array walked while no Ruby code can run.
//!
//! The general walks read the layout strings at every pair and element, count depths
//! where a `#to_json` may read them, and pass a `magnus::Error` back through every level.
//! None of that can matter here: there are no layout strings, no Ruby code runs that
//! could see a depth, and no error is made. So this walk keeps the depth in a local,
//! writes only brackets, commas and colons, and stops with [`NeedsRuby`] at anything
//! else (an object of another class, a key the dialect will not write here, a nesting
//! error): the caller then asks for the protected walk, which writes the whole Hash
//! again the general way.
//!
//! What differs between the dialects (how keys, Strings and Floats are written) is the
//! [`Leaves`] each generator implements.
//!
//! json 2.x's generator also walks other layouts this way (`pretty_generate`'s, any
//! State's), where no Ruby code can change them during the walk: what it writes between
//! values (newlines, indents, the `: ` after a key, empty containers) is its [`Layout`].
//! The compact layout's is [`Compact`], which writes what this walk always wrote, with
//! nothing left to decide at run time.

use magnus::{rb_sys::AsRawValue, Ruby};
use rb_sys::{ruby_value_type, VALUE};
use rusty_core::json as core;
use rusty_core::json::Output;

use crate::helpers::hash::each_pair_quiet;
use crate::helpers::hash_layout::Pairs;
use crate::helpers::raw::class_of;
use crate::json::output::RubyOutput;

/// A compact walk met something only the general walk can write.
pub(crate) struct NeedsRuby;

/// A generator's part of the compact walk.
pub(crate) trait Leaves {
    fn out(&mut self) -> &mut RubyOutput;
    /// The generation's `max_nesting` (0: none).
    fn max_nesting(&self) -> i64;
    /// A pair's key, and its colon when `colon` (the compact delimiter, kept with the key).
    /// `first` is the type of the Hash's first key (json 3 writes Hashes with keys of
    /// several types its own way).
    fn key(
        &mut self,
        ruby: &Ruby,
        key: VALUE,
        first: ruby_value_type,
        colon: bool,
    ) -> Result<(), NeedsRuby>;
    /// A String of class String.
    fn string(&mut self, ruby: &Ruby, s: VALUE) -> Result<(), NeedsRuby>;
    /// A Float, flonum or not.
    fn float(&mut self, ruby: &Ruby, f: VALUE) -> Result<(), NeedsRuby>;
}

/// What a generation writes between values, at nesting `depth` (the depth of the Hash or
/// Array being written, counted as the generator's State counts it).
pub(crate) trait Layout {
    /// Whether a key is written with its `:` (else [`Layout::after_key`] follows it).
    fn colon_in_key(&self) -> bool;
    fn after_key(&self, out: &mut RubyOutput);
    /// Before a pair: the comma (when not the first), newline and indent.
    fn before_pair(&self, out: &mut RubyOutput, first: bool, depth: i64);
    /// Before a non-empty Hash's `}`.
    fn close_object(&self, out: &mut RubyOutput, depth: i64);
    /// After a non-empty Array's `[`.
    fn open_array(&self, out: &mut RubyOutput);
    fn before_element(&self, out: &mut RubyOutput, first: bool, depth: i64);
    /// Before a non-empty Array's `]`.
    fn close_array(&self, out: &mut RubyOutput, depth: i64);
    /// Whether an empty Hash is written otherwise than `{` and `}` around no pairs.
    fn empty_object_differs(&self) -> bool;
    /// An empty Hash's (where it differs) or Array's whole text.
    fn empty_object(&self, out: &mut RubyOutput, depth: i64);
    fn empty_array(&self, out: &mut RubyOutput, depth: i64);
}

/// `JSON.generate`'s layout: commas and colons only.
pub(crate) struct Compact;

impl Layout for Compact {
    #[inline(always)]
    fn colon_in_key(&self) -> bool {
        true
    }

    #[inline(always)]
    fn after_key(&self, _out: &mut RubyOutput) {}

    #[inline(always)]
    fn before_pair(&self, out: &mut RubyOutput, first: bool, _depth: i64) {
        if !first {
            out.push(b',');
        }
    }

    #[inline(always)]
    fn close_object(&self, _out: &mut RubyOutput, _depth: i64) {}

    #[inline(always)]
    fn open_array(&self, _out: &mut RubyOutput) {}

    #[inline(always)]
    fn before_element(&self, out: &mut RubyOutput, first: bool, depth: i64) {
        // A comma, as between pairs.
        self.before_pair(out, first, depth)
    }

    #[inline(always)]
    fn close_array(&self, _out: &mut RubyOutput, _depth: i64) {}

    #[inline(always)]
    fn empty_object_differs(&self) -> bool {
        false
    }

    #[inline(always)]
    fn empty_object(&self, out: &mut RubyOutput, _depth: i64) {
        core::push_bytes(out, b"{}");
    }

    #[inline(always)]
    fn empty_array(&self, out: &mut RubyOutput, _depth: i64) {
        core::push_bytes(out, b"[]");
    }
}

/// The pairs of `hash`, entered at nesting `depth`, between its braces, in `layout`.
pub(crate) fn pairs<G: Leaves, L: Layout>(
    gen: &mut G,
    layout: &L,
    ruby: &Ruby,
    hash: VALUE,
    depth: i64,
) -> Result<(), NeedsRuby> {
    let mut first = ruby_value_type::RUBY_T_NONE;
    // The loop over the table is written out here (not left to `each_pair_quiet`) so
    // that the pair's code is inlined into it.
    if let Some(mut table) = unsafe { Pairs::of(hash) } {
        // SAFETY: no Ruby code runs in this walk, so the Hash does not change.
        while let Some((key, value)) = unsafe { table.next() } {
            pair(gen, layout, ruby, key, value, depth, &mut first)?;
        }
        return Ok(());
    }
    // SAFETY: nothing here runs Ruby code or raises.
    unsafe {
        each_pair_quiet(hash, |key, value| {
            pair(gen, layout, ruby, key, value, depth, &mut first)
        })
    }
}

#[inline(always)]
fn pair<G: Leaves, L: Layout>(
    gen: &mut G,
    layout: &L,
    ruby: &Ruby,
    key: VALUE,
    value: VALUE,
    depth: i64,
    first: &mut ruby_value_type,
) -> Result<(), NeedsRuby> {
    let is_first = *first == ruby_value_type::RUBY_T_NONE;
    if is_first {
        *first = unsafe { rb_sys::RB_TYPE(key) };
    }
    layout.before_pair(gen.out(), is_first, depth);
    let colon = layout.colon_in_key();
    gen.key(ruby, key, *first, colon)?;
    if !colon {
        layout.after_key(gen.out());
    }
    value_at(gen, layout, ruby, value, depth)
}

/// The elements of `ary`, entered at nesting `depth`, between its brackets (after
/// [`Layout::open_array`]), in `layout`.
pub(crate) fn elements<G: Leaves, L: Layout>(
    gen: &mut G,
    layout: &L,
    ruby: &Ruby,
    ary: VALUE,
    depth: i64,
) -> Result<(), NeedsRuby> {
    // No Ruby code runs, so the Array keeps its length and elements.
    let len = unsafe { rb_sys::RARRAY_LEN(ary) } as usize;
    let items = unsafe { rb_sys::RARRAY_CONST_PTR(ary) };
    for i in 0..len {
        layout.before_element(gen.out(), i == 0, depth);
        value_at(gen, layout, ruby, unsafe { *items.add(i) }, depth)?;
    }
    Ok(())
}

/// A value inside a Hash or Array at nesting `depth`: inlined where it is used for the
/// values written without their class (most of a document's leaves), the others written
/// by `object`.
#[inline(always)]
fn value_at<G: Leaves, L: Layout>(
    gen: &mut G,
    layout: &L,
    ruby: &Ruby,
    raw: VALUE,
    depth: i64,
) -> Result<(), NeedsRuby> {
    if raw == rb_sys::Qnil as VALUE {
        core::push_bytes(gen.out(), b"null");
        Ok(())
    } else if raw == rb_sys::Qfalse as VALUE {
        core::push_bytes(gen.out(), b"false");
        Ok(())
    } else if raw == rb_sys::Qtrue as VALUE {
        core::push_bytes(gen.out(), b"true");
        Ok(())
    } else if raw & 1 == 1 {
        core::write_i64((raw as i64) >> 1, gen.out());
        Ok(())
    } else if !rb_sys::SPECIAL_CONST_P(raw) && class_of(raw) == ruby.class_string().as_raw() {
        // The commonest leaves, written here rather than through `object`, which is not
        // inlined (it recurses) and pays a call for every value it writes.
        gen.string(ruby, raw)
    } else if rb_sys::FLONUM_P(raw) {
        gen.float(ruby, raw)
    } else {
        object(gen, layout, ruby, raw, depth)
    }
}

/// `value_at` of a value it does not write itself (not a flonum or a String).
fn object<G: Leaves, L: Layout>(
    gen: &mut G,
    layout: &L,
    ruby: &Ruby,
    raw: VALUE,
    depth: i64,
) -> Result<(), NeedsRuby> {
    if rb_sys::SPECIAL_CONST_P(raw) {
        // Symbols and the rest: each dialect writes them its own way.
        return Err(NeedsRuby);
    }
    let klass = class_of(raw);
    if klass == ruby.class_hash().as_raw() {
        let depth = enter(gen, depth + 1)?;
        if layout.empty_object_differs() && unsafe { rb_sys::rb_hash_size_num(raw) } == 0 {
            layout.empty_object(gen.out(), depth);
            return Ok(());
        }
        gen.out().push(b'{');
        pairs(gen, layout, ruby, raw, depth)?;
        layout.close_object(gen.out(), depth);
        gen.out().push(b'}');
        Ok(())
    } else if klass == ruby.class_array().as_raw() {
        let depth = enter(gen, depth + 1)?;
        // Most of citm_catalog.json's Arrays are empty.
        if unsafe { rb_sys::RARRAY_LEN(raw) } == 0 {
            layout.empty_array(gen.out(), depth);
            return Ok(());
        }
        gen.out().push(b'[');
        layout.open_array(gen.out());
        elements(gen, layout, ruby, raw, depth)?;
        layout.close_array(gen.out(), depth);
        gen.out().push(b']');
        Ok(())
    } else if klass == ruby.class_float().as_raw() {
        gen.float(ruby, raw)
    } else {
        Err(NeedsRuby)
    }
}

/// The general walks' nesting checks for nesting `depth`: they raise where these fail.
#[inline(always)]
fn enter<G: Leaves>(gen: &G, depth: i64) -> Result<i64, NeedsRuby> {
    let max = gen.max_nesting();
    if (max != 0 && depth > max) || (depth > 256 && unsafe { rb_sys::ruby_stack_check() } != 0) {
        return Err(NeedsRuby);
    }
    Ok(depth)
}
