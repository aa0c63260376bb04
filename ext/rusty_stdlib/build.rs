//! Tells the crate which Ruby it is built for, where reading Ruby's structs directly
//! depends on it (see `helpers::raw::str_bytes`).

fn main() {
    // rb-sys hands its Ruby's version to the crates that depend on it (`DEP_RB_*`).
    let env = rb_sys_env::load().expect("rb-sys's DEP_RB_* variables");
    env.print_cargo_rerun_if_changed();
    // Ruby 3.3 moved a String's length out of the embedded/heap union into `RString.len`;
    // 3.4 and 4.0 keep that layout. A later Ruby gets rb-sys's accessors until checked.
    println!("cargo:rustc-check-cfg=cfg(rstring_len_field)");
    if ((3, 3)..=(4, 0)).contains(&env.ruby_major_minor()) {
        println!("cargo:rustc-cfg=rstring_len_field");
    }
}
