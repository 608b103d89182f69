//! The examples that tests run as processes.

use std::path::PathBuf;

/// The built example `name` (cargo builds the examples before it runs the tests).
pub(crate) fn example(name: &str) -> PathBuf {
    let deps = std::env::current_exe().expect("the test binary");
    let path = deps
        .parent()
        .and_then(|deps| deps.parent())
        .expect("target/<profile>/deps")
        .join("examples")
        .join(name);
    assert!(
        path.exists(),
        "{} is not built: run `cargo build --examples --all-features` (cargo test builds it)",
        path.display()
    );
    path
}
