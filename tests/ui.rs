//! The `#[job]` attribute's diagnostics (`tests/ui/fail`, each with its `.stderr`) and the code it
//! generates (`tests/ui/pass`, compiled and run). Refresh the `.stderr` files with
//! `TRYBUILD=overwrite cargo test --test ui`, then read each one.

#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/ui/fail/*.rs");
    t.pass("tests/ui/pass/*.rs");
}
