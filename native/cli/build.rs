//! Links the `chokepoint` program as a position-dependent executable on Linux.
//!
//! Why: `chokepoint hook` is a whole process per tool call of another agent, so its start is part of
//! every answer. As a position-independent executable, the loader applied about 19,000 relocations at
//! each start, touching (and copying) the pages of `.data.rel.ro`: half the page faults of a hook
//! process. Linked at a fixed address, the linker resolves them once. The code is still compiled
//! position-independent (Rust's default), which a fixed-address link accepts; the napi binding, a
//! shared library, is another crate and keeps its own.
fn main() {
    let os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    if os == "linux" {
        println!("cargo:rustc-link-arg-bins=-no-pie");
    }
}
