//! "Is the method a call would reach still the stock one?" without a Method object.
//!
//! read_new's fast path skips the calls of add_field & co only while those are the
//! stdlib's. Asking Ruby (`obj.method(name).owner`) makes a Method object per question
//! (three per response). Instead,
//! where libruby exports `rb_callable_method_entry` (Ruby 3.1; 3.3 hides it), the
//! method entry a call reaches is looked up in the class's method cache, and its
//! definition and visibility are compared with the ones remembered when the shim
//! installed the pieces (`remember`). A new definition anywhere in the ancestry (a
//! subclass's, a prepended module's, a singleton method, a redefinition in the stdlib's
//! own module, an alias to another method, a visibility change) reaches another entry,
//! whose definition or visibility differs. So does a method that any refinement
//! refines: its entry is the refinement wrapper (deliberately not resolved, as
//! `..._without_refinements` would: after a redefinition under a refinement, Ruby 3.1's
//! calls and that lookup disagree), so refined methods always take the stdlib's path. The
//! remembered definitions are pinned: an UnboundMethod of each is kept alive, so their
//! memory can never be reused by a later definition.
//!
//! The entry's layout is not in Ruby's public headers; it has been the same from Ruby
//! 2.7 to 3.4, and `init` checks it against known core methods (`self_test`) before
//! trusting it. Where the symbol is missing or the check fails, `stock` says `None` and
//! callers ask Ruby as before.
//!
//! each_capitalized asks at every pair whether `capitalize` is still ours, and makes the
//! name without the call if so (callgrind on Ruby 3.1: the lookup costs about 80
//! instructions, the call it saves about 150). A walk cannot look up once and then
//! watch the entry's METHOD_ENTRY_INVALIDATED flag instead: Ruby 3.1 sets it only where
//! the class has subclasses; for a leaf class such as Net::HTTP::Get a new method drops
//! the class's cache entries instead, leaving the old entry unflagged.

use std::{cell::UnsafeCell, ffi::c_void, sync::OnceLock};

use magnus::{prelude::*, rb_sys::AsRawValue, value::Lazy, Error, RArray, Ruby, Symbol, Value};
use rb_sys::{ID, VALUE};

/// `rb_method_entry_t` / `rb_callable_method_entry_t` (method.h), as far as read here.
#[repr(C)]
struct MethodEntry {
    flags: VALUE,
    defined_class: VALUE,
    def: *const c_void,
    called_id: ID,
    owner: VALUE,
}

type Lookup = unsafe extern "C" fn(VALUE, ID) -> *const MethodEntry;

/// The lookup, once found and checked.
static LOOKUP: OnceLock<Option<Lookup>> = OnceLock::new();

/// (method name, definition, visibility) of each remembered stock method.
struct Stock(UnsafeCell<Vec<(ID, usize, u32)>>);

// SAFETY: only Ruby threads holding the GVL touch it (the extension is not
// Ractor-safe, so only the main Ractor calls it), and no reference outlives a call.
unsafe impl Sync for Stock {}

static STOCK: Stock = Stock(UnsafeCell::new(Vec::new()));

/// UnboundMethods of the remembered methods, which keep their definitions alive.
static PINS: Lazy<RArray> = Lazy::new(|ruby| ruby.ary_new());

// method.h / imemo.h: an entry is a T_IMEMO of type imemo_ment, its visibility in the
// two IMEMO_FL_USER bits.
const T_MASK: VALUE = 0x1f;
const T_IMEMO: VALUE = 0x1a;
const FL_USHIFT: u32 = 12;
const IMEMO_MENT: VALUE = 6;
const VISI_PUBLIC: u32 = 1;
const VISI_PRIVATE: u32 = 2;

fn visibility(entry: &MethodEntry) -> u32 {
    ((entry.flags >> (FL_USHIFT + 4)) & 3) as u32
}

/// Makes the lookup's first check (which interns names) now, in the main Ractor at load,
/// rather than in a call that another Ractor could wait on.
pub fn init() {
    lookup();
}

fn lookup() -> Option<Lookup> {
    *LOOKUP.get_or_init(|| unsafe {
        let symbol = libc::dlsym(libc::RTLD_DEFAULT, c"rb_callable_method_entry".as_ptr());
        if symbol.is_null() {
            return None;
        }
        let lookup: Lookup = std::mem::transmute::<*mut c_void, Lookup>(symbol);
        self_test(lookup).then_some(lookup)
    })
}

/// The entry `klass`'s instances reach for `name`, when it is a method entry.
unsafe fn entry(lookup: Lookup, klass: VALUE, name: ID) -> Option<&'static MethodEntry> {
    let entry = lookup(klass, name);
    if entry.is_null() {
        return None;
    }
    let entry = &*entry;
    let is_entry =
        entry.flags & T_MASK == T_IMEMO && (entry.flags >> FL_USHIFT) & 0x0f == IMEMO_MENT;
    (is_entry && !entry.def.is_null()).then_some(entry)
}

/// Whether entries read as this module expects, on core methods whose owners and
/// visibilities are known: Object#inspect and #puts come from Kernel (public, and
/// private as a module function), String#upcase from String, and they are three
/// different definitions.
unsafe fn self_test(lookup: Lookup) -> bool {
    let intern = |name: &std::ffi::CStr| rb_sys::rb_intern(name.as_ptr());
    let (object, string, kernel) = (rb_sys::rb_cObject, rb_sys::rb_cString, rb_sys::rb_mKernel);
    let (Some(inspect), Some(puts), Some(upcase)) = (
        entry(lookup, object, intern(c"inspect")),
        entry(lookup, object, intern(c"puts")),
        entry(lookup, string, intern(c"upcase")),
    ) else {
        return false;
    };
    inspect.owner == kernel
        && puts.owner == kernel
        && upcase.owner == string
        && visibility(inspect) == VISI_PUBLIC
        && visibility(puts) == VISI_PRIVATE
        && inspect.def != puts.def
        && inspect.def != upcase.def
        && entry(lookup, object, intern(c"no_such_method_here")).is_none()
}

/// Whether the methods `names` that instances of `klass` (a class, possibly a singleton
/// class) reach are the remembered ones; `None` when that cannot be told this way
/// (no lookup on this Ruby, or a name not remembered).
pub fn stock(klass: VALUE, names: &[ID]) -> Option<bool> {
    let lookup = lookup()?;
    // SAFETY: see `Stock`; `remember` is not running (nothing here calls Ruby code).
    let stock = unsafe { &*STOCK.0.get() };
    for &name in names {
        let &(_, def, visi) = stock.iter().find(|(id, _, _)| *id == name)?;
        // A lookup only reads the method tables and fills the class's method cache.
        let Some(entry) = (unsafe { entry(lookup, klass, name) }) else {
            return Some(false);
        };
        if entry.def as usize != def || visibility(entry) != visi {
            return Some(false);
        }
    }
    Some(true)
}

/// `Native.remember_stock(probe, names)`: remembers the methods instances of the class
/// `probe` reach for `names` as the stock ones (the shim checks their owners and source
/// first). False when this Ruby cannot tell methods apart this way.
pub fn remember(ruby: &Ruby, probe: Value, names: RArray) -> Result<bool, Error> {
    let Some(lookup) = lookup() else {
        return Ok(false);
    };
    for name in names.into_iter() {
        let symbol = Symbol::try_convert(name)?;
        let id = unsafe { rb_sys::rb_sym2id(symbol.as_raw()) };
        let pin: Value = probe.funcall("instance_method", (symbol,))?;
        let Some(entry) = (unsafe { entry(lookup, probe.as_raw(), id) }) else {
            return Ok(false);
        };
        ruby.get_inner(&PINS).push(pin)?;
        // SAFETY: see `Stock`; no other reference to it is alive.
        let stock = unsafe { &mut *STOCK.0.get() };
        stock.retain(|(known, _, _)| *known != id);
        stock.push((id, entry.def as usize, visibility(entry)));
    }
    Ok(true)
}
