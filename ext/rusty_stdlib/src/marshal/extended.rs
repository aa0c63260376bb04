//! Extended objects (`e` records) and `_dump_data`/`_load_data` objects (`d` records):
//! the checks that decide whether MRI's behaviour can be reproduced without running Ruby
//! code, shared by the dumper and the loader.
//!
//! MRI's `w_extended` writes one `e` record per module between an object's singleton
//! class and its real class, and raises "singleton can't be dumped" when the singleton
//! class has methods or instance variables. Everything outside the plain case (methods
//! or ivars on the singleton, prepends, anonymous modules) is left to the stdlib, which
//! raises or writes whatever it does there. On load MRI extends with `rb_extend_object`,
//! a C call that runs no hook (`extend_object`/`extended` are not called: checked
//! against both Rubies by the specs).

use std::os::raw::c_int;
use std::sync::OnceLock;

use rb_sys::{ruby_value_type as T, ID, VALUE};

use crate::helpers::raw::{flags, str_bytes};

const FL_SINGLETON: VALUE = rb_sys::ruby_fl_type::RUBY_FL_SINGLETON as VALUE;

pub struct DataIds {
    pub dump_data: ID,
    pub load_data: ID,
    attached: ID,
}

/// `_dump_data`, `_load_data` and `__attached__` (Ruby 3.1 keeps a singleton class's
/// object in that ivar; MRI 3.1's singleton check ignores it, 3.3 has no such ivar).
pub fn data_ids() -> &'static DataIds {
    static IDS: OnceLock<DataIds> = OnceLock::new();
    IDS.get_or_init(|| unsafe {
        DataIds {
            dump_data: rb_sys::rb_intern(c"_dump_data".as_ptr()),
            load_data: rb_sys::rb_intern(c"_load_data".as_ptr()),
            attached: rb_sys::rb_intern(c"__attached__".as_ptr()),
        }
    })
}

#[inline]
pub fn is_singleton(klass: VALUE) -> bool {
    flags(klass) & FL_SINGLETON != 0
}

unsafe extern "C" fn count_class_ivar(
    id: rb_sys::ID,
    _value: VALUE,
    arg: rb_sys::st_data_t,
) -> c_int {
    if id != data_ids().attached {
        *(arg as *mut usize) += 1;
    }
    rb_sys::st_retval::ST_CONTINUE as c_int
}

/// Whether MRI's `SINGLETON_DUMP_UNABLE_P` is known to be false for `singleton`: no
/// instance variables (class variables count too) and an empty method table. Methods are
/// counted with `instance_methods(false)` and `private_instance_methods(false)`, which
/// leave `undef_method` entries out; those are counted by `undefined_instance_methods`
/// (Ruby 3.2+). Ruby 3.1 has no way to list them, so there the answer is false and the
/// stdlib dumps the object (or raises "singleton can't be dumped", as it decides).
pub fn singleton_is_bare(singleton: VALUE) -> bool {
    let mut ivars = 0usize;
    unsafe {
        rb_sys::rb_ivar_foreach(
            singleton,
            Some(count_class_ivar),
            &mut ivars as *mut usize as rb_sys::st_data_t,
        );
    }
    if ivars != 0 {
        return false;
    }
    let no = [rb_sys::Qfalse as VALUE];
    let counted = magnus::rb_sys::protect(|| unsafe {
        let public = rb_sys::rb_class_instance_methods(1, no.as_ptr(), singleton);
        let private = rb_sys::rb_class_private_instance_methods(1, no.as_ptr(), singleton);
        rb_sys::LONG2FIX(rb_sys::RARRAY_LEN(public) + rb_sys::RARRAY_LEN(private))
    });
    matches!(counted, Ok(n) if unsafe { rb_sys::FIX2LONG(n) } == 0)
        && no_undefined_methods(singleton)
}

/// Whether `singleton`'s method table has no `undef_method` entries, when Ruby can tell.
fn no_undefined_methods(singleton: VALUE) -> bool {
    static LISTER: OnceLock<Option<ID>> = OnceLock::new();
    let lister = LISTER.get_or_init(|| unsafe {
        let id = rb_sys::rb_intern(c"undefined_instance_methods".as_ptr());
        (rb_sys::rb_method_boundp(rb_sys::rb_cModule, id, 0) != 0).then_some(id)
    });
    let Some(id) = *lister else {
        return false;
    };
    let listed = magnus::rb_sys::protect(|| unsafe {
        rb_sys::rb_funcallv(singleton, id, 0, std::ptr::null())
    });
    matches!(listed, Ok(list) if unsafe { rb_sys::RB_TYPE_P(list, T::RUBY_T_ARRAY) && rb_sys::RARRAY_LEN(list) == 0 })
}

/// Whether `module` has nothing prepended to it (its ancestors start with itself), so
/// that it stands for exactly one iclass in an ancestor chain.
pub fn without_prepends(module: VALUE) -> bool {
    let ancestors = unsafe { rb_sys::rb_mod_ancestors(module) };
    unsafe { rb_sys::RARRAY_LEN(ancestors) > 0 && rb_sys::RARRAY_AREF(ancestors, 0) == module }
}

/// For an object whose class is the singleton class `singleton`: its real class and the
/// modules MRI writes as `e` records, in order (the iclasses between the singleton class
/// and the real class); `None` when something is prepended to the singleton class (left
/// to the stdlib). Whether the singleton class is bare is `singleton_is_bare`'s question;
/// modules with something prepended to them are for the caller to refuse (see
/// `without_prepends`).
pub fn extension_modules(singleton: VALUE) -> Option<(VALUE, Vec<VALUE>)> {
    let real = unsafe { rb_sys::rb_class_real(singleton) };
    let mut modules = Vec::new();
    // The raw superclass chain: an iclass per included module, then the real class.
    let mut c = unsafe { rb_sys::rb_class_get_superclass(singleton) };
    while c != real {
        if c == 0 || rb_sys::NIL_P(c) || unsafe { !rb_sys::RB_TYPE_P(c, T::RUBY_T_ICLASS) } {
            return None;
        }
        let module = unsafe { (*(c as *const rb_sys::RBasic)).klass };
        // An origin iclass of the singleton class (something prepended to it) stands for
        // the class itself.
        if unsafe { !rb_sys::RB_TYPE_P(module, T::RUBY_T_MODULE) } {
            return None;
        }
        modules.push(module);
        c = unsafe { rb_sys::rb_class_get_superclass(c) };
    }
    Some((real, modules))
}

/// The name MRI writes for an extended module, if it is a plain ASCII constant path
/// (MRI raises for an anonymous module; non-ASCII names are left to the stdlib).
pub fn module_name(module: VALUE) -> Option<VALUE> {
    let path = unsafe { rb_sys::rb_class_path(module) };
    let bytes = str_bytes(path);
    (!bytes.is_empty() && bytes[0] != b'#' && bytes.is_ascii()).then_some(path)
}

/// Whether a `d` record of `klass` can be loaded natively: a class with a C allocator
/// that is not one of Marshal's compat ones, whose instances answer `respond_to?` with
/// the core method.
pub fn load_data_class(klass: VALUE) -> bool {
    unsafe { rb_sys::rb_get_alloc_func(klass) }.is_some()
        && !super::hooks::has_compat_allocator(klass)
        && super::ids::respond_to_is_core(klass)
}

/// What a load found out about `e` and `d` records, kept for the rest of the load. The
/// values are held elsewhere too (the symbols in the symbol table, the modules in the
/// loader's `kept` Array, the classes in its class cache).
#[derive(Default)]
pub struct LoadCache {
    modules: Vec<(VALUE, VALUE)>,
    data_classes: Vec<VALUE>,
}

impl LoadCache {
    /// The module an `e` record's symbol was found to name.
    pub fn module(&self, sym: VALUE) -> Option<VALUE> {
        self.modules
            .iter()
            .find(|(s, _)| *s == sym)
            .map(|&(_, m)| m)
    }
    pub fn add_module(&mut self, sym: VALUE, module: VALUE) {
        self.modules.push((sym, module));
    }
    /// Whether `klass` was found to load `d` records natively.
    pub fn is_data_class(&self, klass: VALUE) -> bool {
        self.data_classes.contains(&klass)
    }
    pub fn add_data_class(&mut self, klass: VALUE) {
        self.data_classes.push(klass);
    }
}

/// Whether `module` (or a module it includes) defines `hash` or `eql?`, which an object
/// extended with it would be hashed with as a Hash key.
pub fn defines_hashing(module: VALUE) -> bool {
    static IDS: OnceLock<(ID, ID)> = OnceLock::new();
    let (hash, eql) = *IDS.get_or_init(|| unsafe {
        (
            rb_sys::rb_intern(c"hash".as_ptr()),
            rb_sys::rb_intern(c"eql?".as_ptr()),
        )
    });
    // rb_method_boundp with ex = 0 finds private methods too.
    unsafe {
        rb_sys::rb_method_boundp(module, hash, 0) != 0
            || rb_sys::rb_method_boundp(module, eql, 0) != 0
    }
}
