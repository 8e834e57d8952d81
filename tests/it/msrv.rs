//! The declared minimum Rust version is the real one, and clippy checks the
//! code against it.
//!
//! `rust-version` lives once, in `[workspace.package]`, and both packages
//! inherit it. It must be at least 1.88, the release that stabilised
//! let-chains in edition 2024 (the code uses them), and at most the rustc
//! running these tests (a declared version newer than the toolchain would go
//! unchecked). Clippy's `incompatible_msrv` lint reads `rust-version` and
//! flags std APIs stabilised after it; CI runs clippy with `-D warnings`, so
//! that lint fails the build as long as nothing overrides the MSRV clippy
//! sees or silences the lint. The last test checks exactly that.

use std::path::{Path, PathBuf};
use std::process::Command;

/// Let-chains (`if let … && …`) are stable from Rust 1.88 in edition 2024.
const LET_CHAINS_STABLE: (u64, u64, u64) = (1, 88, 0);

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn read_toml(path: &Path) -> toml::Table {
    let text = std::fs::read_to_string(path).unwrap();
    toml::from_str(&text).unwrap_or_else(|e| panic!("{} does not parse: {e}", path.display()))
}

/// `1.88` or `1.88.0` as (major, minor, patch); a missing patch is 0.
fn parse_version(text: &str) -> Option<(u64, u64, u64)> {
    let mut parts = text.trim().split('.');
    let major = parts.next()?.parse().ok()?;
    let minor = parts.next()?.parse().ok()?;
    let patch = match parts.next() {
        Some(patch) => patch.parse().ok()?,
        None => 0,
    };
    if parts.next().is_some() {
        return None;
    }
    Some((major, minor, patch))
}

/// The version of the rustc that cargo uses, from `rustc --version`
/// (`rustc 1.95.0 (59807616e 2026-04-14)`).
fn running_rustc() -> (u64, u64, u64) {
    let rustc = std::env::var_os("RUSTC").unwrap_or_else(|| "rustc".into());
    let output = Command::new(&rustc).arg("--version").output().unwrap();
    assert!(output.status.success(), "rustc --version failed");
    let text = String::from_utf8(output.stdout).unwrap();
    let version = text
        .split_whitespace()
        .nth(1)
        .unwrap_or_else(|| panic!("unexpected rustc --version output: {text}"));
    // A nightly or beta says `1.96.0-nightly`: the release part is what counts.
    let release = version.split('-').next().unwrap_or(version);
    parse_version(release).unwrap_or_else(|| panic!("unexpected rustc version: {version}"))
}

fn declared_rust_version() -> String {
    let manifest = read_toml(&root().join("Cargo.toml"));
    manifest
        .get("workspace")
        .and_then(|w| w.get("package"))
        .and_then(|p| p.get("rust-version"))
        .and_then(|v| v.as_str())
        .expect("Cargo.toml declares [workspace.package] rust-version")
        .to_owned()
}

#[test]
fn version_parsing_reads_two_and_three_part_versions() {
    assert_eq!(parse_version("1.88"), Some((1, 88, 0)));
    assert_eq!(parse_version("1.88.1"), Some((1, 88, 1)));
    assert_eq!(parse_version("1"), None);
    assert_eq!(parse_version("1.88.0.1"), None);
    assert_eq!(parse_version("1.x"), None);
    // Numeric, not textual, order: 1.9 is older than 1.88.
    assert!(parse_version("1.9") < parse_version("1.88"));
}

#[test]
fn rust_version_covers_the_code_and_the_running_toolchain_meets_it() {
    let declared = declared_rust_version();
    let version = parse_version(&declared)
        .unwrap_or_else(|| panic!("rust-version {declared:?} is not MAJOR.MINOR[.PATCH]"));
    assert!(
        version >= LET_CHAINS_STABLE,
        "rust-version {declared} is older than 1.88, but the code uses let-chains"
    );
    let rustc = running_rustc();
    assert!(
        version <= rustc,
        "rust-version {declared} is newer than the running rustc {rustc:?}: nothing checks it"
    );
    println!("msrv: rust-version {declared}, running rustc {rustc:?}");
}

#[test]
fn every_package_inherits_the_workspace_rust_version() {
    for manifest in ["Cargo.toml", "xtask/Cargo.toml"] {
        let table = read_toml(&root().join(manifest));
        let inherited = table
            .get("package")
            .and_then(|p| p.get("rust-version"))
            .and_then(|v| v.get("workspace"))
            .and_then(|v| v.as_bool());
        assert_eq!(
            inherited,
            Some(true),
            "{manifest}: [package] must say `rust-version.workspace = true`"
        );
    }
}

/// Every text file under `dir` (recursively) with one of `extensions`.
fn files_under(dir: &Path, extensions: &[&str], out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files_under(&path, extensions, out);
        } else if path
            .extension()
            .and_then(|e| e.to_str())
            .is_some_and(|e| extensions.contains(&e))
        {
            out.push(path);
        }
    }
}

#[test]
fn nothing_overrides_the_msrv_clippy_checks_against() {
    let root = root();
    // Clippy takes its MSRV from `msrv` in clippy.toml (or .clippy.toml) before
    // `rust-version`, and from a `#![clippy::msrv]` attribute in the code.
    for config in ["clippy.toml", ".clippy.toml"] {
        let path = root.join(config);
        if path.is_file() {
            let table = read_toml(&path);
            assert!(
                !table.contains_key("msrv"),
                "{config} sets msrv, which overrides Cargo.toml's rust-version"
            );
        }
    }
    // Nor may anything silence the lint: an `allow`/`expect` attribute, a
    // `[lints.clippy]` entry, or a `-A` flag on a clippy command line.
    let lint = "clippy::incompatible_msrv";
    let silencers = [
        format!("allow({lint}"),
        format!("expect({lint}"),
        format!("-A {lint}"),
        format!("{} =", lint.trim_start_matches("clippy::")),
        "#![clippy::msrv".to_owned(),
        "#[clippy::msrv".to_owned(),
    ];
    let this_file = root.join("tests/it/msrv.rs");
    let mut files = Vec::new();
    for dir in ["src", "tests", "xtask", "examples", ".cargo"] {
        files_under(&root.join(dir), &["rs", "toml"], &mut files);
    }
    files.push(root.join(".ci/run"));
    files.push(root.join(".ci/static-check"));
    files.push(root.join("Cargo.toml"));
    for path in files.iter().filter(|path| **path != this_file) {
        let text = std::fs::read_to_string(path).unwrap();
        let shown = path.strip_prefix(&root).unwrap_or(path).display();
        for silencer in &silencers {
            assert!(
                !text.contains(silencer.as_str()),
                "{shown} contains `{silencer}`: clippy would not check the MSRV"
            );
        }
    }
    // CI's clippy run turns every warning, this warn-by-default lint included,
    // into an error.
    let ci = std::fs::read_to_string(root.join(".ci/run")).unwrap();
    assert!(
        ci.lines().any(|line| {
            let line = line.trim();
            line.starts_with("cargo clippy")
                && line.contains("--all-targets")
                && line.ends_with("-- -D warnings")
        }),
        ".ci/run must run `cargo clippy --workspace --all-targets --locked -- -D warnings`"
    );
}
