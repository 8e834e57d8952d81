//! `cargo xtask vectors`: regenerates our own vectors with Python's
//! `cryptography`, never with heeler itself, then shows what changed.

use xshell::{Shell, cmd};

pub fn run(_args: &[String]) -> crate::Result {
    let sh = Shell::new()?;
    sh.change_dir(crate::project_root());
    cmd!(sh, "python3 test-vectors/generate.py").run()?;
    cmd!(sh, "git diff --stat -- test-vectors").run()?;
    Ok(())
}
