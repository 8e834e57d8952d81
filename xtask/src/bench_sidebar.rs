//! `cargo xtask bench-sidebar`: the sidebar refresh's cost when nothing
//! changed. Runs `examples/bench_sidebar.rs` in release mode, with the release
//! `heeler` binary for the whole-process figure.

use xshell::{Shell, cmd};

pub fn run(_args: &[String]) -> crate::Result {
    let sh = Shell::new()?;
    let root = crate::project_root();
    sh.change_dir(&root);
    cmd!(sh, "cargo build --release --quiet --bin heeler").run()?;
    let _bin = sh.push_env("HEELER_BIN", root.join("target/release/heeler"));
    cmd!(sh, "cargo run --release --quiet --example bench_sidebar").run()?;
    Ok(())
}
