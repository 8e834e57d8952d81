//! `cargo xtask static`: prove on this machine kind that heeler links as a
//! fully static musl binary, without rustup's musl targets (which cannot be
//! downloaded here).
//!
//! The recipe (README.md, "Static build"): Debian's `rustc-web` 1.96 with
//! `rust-web-src` builds std from source (`RUSTC_BOOTSTRAP=1 -Zbuild-std`), and
//! zig from PyPI (`ziglang` + `cargo-zigbuild`) supplies musl libc, the crt
//! objects, libunwind and a C compiler for ring. rustup's `~/.cargo/bin`
//! proxies are kept off `PATH` so Debian's cargo and rustc are the ones used.
//! `.ci/static-check` installs the prerequisites and calls this task.
//!
//! After the build the binary is checked: `file` must say "statically linked",
//! `readelf` must find no `INTERP` program header, it must be under 3 MiB, and
//! (for the host's architecture) `env -i ./heeler --version` must print
//! `heeler <version>`. Release builds in CI use rustup's real musl targets.

use std::path::{Path, PathBuf};
use std::time::Instant;

use xshell::{Shell, cmd};

const DEFAULT_TARGET: &str = "x86_64-unknown-linux-musl";
const MAX_SIZE_BYTES: u64 = 3 * 1024 * 1024;
const DEBIAN_STD_SOURCE: &str = "/usr/lib/rustlib/src/rust/library";
/// Variables passed through to the build; everything else is cleared so the
/// rustup proxies' `RUSTUP_TOOLCHAIN`, `CARGO`, `RUSTC` etc. cannot leak in.
const PASSED_THROUGH: &[&str] = &[
    "HOME",
    "CARGO_HOME",
    "CARGO_BUILD_JOBS",
    "TMPDIR",
    "http_proxy",
    "https_proxy",
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "ALL_PROXY",
    "NO_PROXY",
    "no_proxy",
];

pub fn run(args: &[String]) -> Result<(), String> {
    let target = parse_target(args)?;
    let root = workspace_root();
    let venv = zig_venv();
    check_prerequisites(&venv)?;

    let sh = Shell::new().map_err(|e| e.to_string())?;
    sh.change_dir(&root);
    let zigbuild = venv.join("bin/cargo-zigbuild");
    let path = format!("{}:/usr/bin:/bin", venv.join("bin").display());
    let mut build = cmd!(
        sh,
        "{zigbuild} zigbuild --locked --release -p heeler --bin heeler --target {target} -Zbuild-std=std,panic_abort"
    )
    .env_clear()
    .env("PATH", &path)
    .env("RUSTC", "/usr/bin/rustc")
    .env("RUSTDOC", "/usr/bin/rustdoc")
    .env("CARGO", "/usr/bin/cargo")
    .env("RUSTC_BOOTSTRAP", "1")
    // Debian ships no self-contained musl crt objects; zig provides them.
    .env("RUSTFLAGS", "-C link-self-contained=no")
    // Its own target dir: Debian's rustc must not thrash rustup's caches.
    .env("CARGO_TARGET_DIR", root.join("target/static-musl"));
    for name in PASSED_THROUGH {
        if let Some(value) = std::env::var_os(name) {
            build = build.env(name, value);
        }
    }
    println!("xtask static: building {target} with Debian rustc + build-std + cargo-zigbuild");
    let started = Instant::now();
    build.run().map_err(|e| format!("build failed: {e}"))?;
    let seconds = started.elapsed().as_secs_f64();

    let binary = root.join(format!("target/static-musl/{target}/release/heeler"));
    let size = std::fs::metadata(&binary)
        .map_err(|e| format!("no binary at {}: {e}", binary.display()))?
        .len();
    check_static(&sh, &binary)?;
    if size >= MAX_SIZE_BYTES {
        return Err(format!(
            "{} is {size} bytes, over the {MAX_SIZE_BYTES}-byte budget",
            binary.display()
        ));
    }
    check_runs_with_empty_env(&sh, &binary, &target)?;
    println!("xtask static: binary {}", binary.display());
    println!(
        "xtask static: size {size} bytes ({:.2} MiB)",
        size as f64 / 1048576.0
    );
    println!("xtask static: build time {seconds:.1} s");
    Ok(())
}

fn parse_target(args: &[String]) -> Result<String, String> {
    match args {
        [] => Ok(DEFAULT_TARGET.to_owned()),
        [flag, target] if flag == "--target" && target.ends_with("-unknown-linux-musl") => {
            Ok(target.clone())
        }
        _ => Err("usage: cargo xtask static [--target <arch>-unknown-linux-musl]".to_owned()),
    }
}

fn workspace_root() -> PathBuf {
    let xtask_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    xtask_dir.parent().unwrap_or(xtask_dir).to_path_buf()
}

/// The virtualenv holding PyPI's `ziglang` and `cargo-zigbuild`.
fn zig_venv() -> PathBuf {
    if let Some(dir) = std::env::var_os("HEELER_ZIG_VENV") {
        return PathBuf::from(dir);
    }
    let home = std::env::var_os("HOME").unwrap_or_default();
    PathBuf::from(home).join(".cache/heeler/zig-venv")
}

fn check_prerequisites(venv: &Path) -> Result<(), String> {
    let fix = "run .ci/static-check, which installs them (apt rustc-web cargo-web rust-web-src; pip ziglang cargo-zigbuild)";
    for tool in ["/usr/bin/cargo", "/usr/bin/rustc"] {
        if !Path::new(tool).exists() {
            return Err(format!(
                "{tool} (Debian rustc-web/cargo-web) is missing; {fix}"
            ));
        }
    }
    if !Path::new(DEBIAN_STD_SOURCE).is_dir() {
        return Err(format!(
            "{DEBIAN_STD_SOURCE} (rust-web-src) is missing; {fix}"
        ));
    }
    if !venv.join("bin/cargo-zigbuild").exists() {
        return Err(format!(
            "{} has no cargo-zigbuild (set HEELER_ZIG_VENV); {fix}",
            venv.display()
        ));
    }
    Ok(())
}

fn check_static(sh: &Shell, binary: &Path) -> Result<(), String> {
    let described = cmd!(sh, "file -b {binary}")
        .read()
        .map_err(|e| format!("`file` failed: {e}"))?;
    println!("xtask static: file: {described}");
    if !described.contains("statically linked") {
        return Err(format!(
            "`file` does not report a static executable: {described}"
        ));
    }
    let headers = cmd!(sh, "readelf -lW {binary}")
        .read()
        .map_err(|e| format!("`readelf` failed: {e}"))?;
    if headers
        .lines()
        .any(|line| line.trim_start().starts_with("INTERP"))
    {
        return Err("the binary has an INTERP program header (needs a dynamic loader)".to_owned());
    }
    Ok(())
}

fn check_runs_with_empty_env(sh: &Shell, binary: &Path, target: &str) -> Result<(), String> {
    if !target.starts_with(std::env::consts::ARCH) {
        println!(
            "xtask static: SKIPPED `env -i {} --version`: {target} is not this machine's architecture",
            binary.display()
        );
        return Ok(());
    }
    let printed = cmd!(sh, "env -i {binary} --version")
        .read()
        .map_err(|e| format!("`env -i heeler --version` failed: {e}"))?;
    let expected = format!("heeler {}", heeler_version()?);
    println!("xtask static: env -i heeler --version: {printed}");
    if printed.lines().next() != Some(expected.as_str()) {
        return Err(format!(
            "--version printed {printed:?}, expected {expected:?}"
        ));
    }
    Ok(())
}

/// The `version` of the root `Cargo.toml`'s `[package]`.
fn heeler_version() -> Result<String, String> {
    let manifest = std::fs::read_to_string(workspace_root().join("Cargo.toml"))
        .map_err(|e| format!("cannot read Cargo.toml: {e}"))?;
    manifest
        .lines()
        .find_map(|line| {
            let value = line
                .strip_prefix("version")?
                .trim_start()
                .strip_prefix('=')?;
            Some(value.trim().trim_matches('"').to_owned())
        })
        .ok_or_else(|| "Cargo.toml has no version line".to_owned())
}
