//! The release assets as `cargo xtask dist` writes them and a GitHub
//! release holds them: the one owner of their names and of `SHA256SUMS`.
//!
//! install.sh downloads `heeler-<target>` and `SHA256SUMS` from the release
//! directory; people who download by hand take `heeler-<target>.tar.gz`. The
//! install.sh matrix tests (`tests/it/install_sh.rs`) include this file with
//! `#[path]`, so the release they serve is laid out exactly as dist writes it.
//! No dependency beyond std and ring, which both crates have.
#![allow(dead_code)]

use std::path::Path;

/// Every release target, in the order the assets are listed.
pub const TARGETS: [&str; 4] = [
    "x86_64-unknown-linux-musl",
    "aarch64-unknown-linux-musl",
    "x86_64-apple-darwin",
    "aarch64-apple-darwin",
];

/// The checksum file of a release directory.
pub const SUMS: &str = "SHA256SUMS";

/// What a `heeler-<target>.tar.gz` holds, in archive order: the binary, then
/// the README and the two license texts (heeler's and the price table's).
pub const ARCHIVE_MEMBERS: [&str; 4] = ["heeler", "README.md", "LICENSE", "pricing.LICENSE"];

/// The bare binary install.sh downloads.
pub fn binary_asset(target: &str) -> String {
    format!("heeler-{target}")
}

/// The archive for people who download by hand.
pub fn archive_asset(target: &str) -> String {
    format!("heeler-{target}.tar.gz")
}

/// True for a file name that is one of the release's assets (not `SHA256SUMS`).
pub fn is_asset(name: &str) -> bool {
    TARGETS
        .iter()
        .any(|target| name == binary_asset(target) || name == archive_asset(target))
}

/// Lowercase hex SHA-256 of `bytes`.
pub fn sha256_hex(bytes: &[u8]) -> String {
    ring::digest::digest(&ring::digest::SHA256, bytes)
        .as_ref()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The text of `SHA256SUMS` for these `(name, sha256 hex)` pairs: one
/// `<hex>  <name>` line each (`sha256sum`'s text format, which install.sh
/// reads and `sha256sum -c` checks), sorted by name.
pub fn sums_text(entries: &[(String, String)]) -> String {
    let mut sorted: Vec<&(String, String)> = entries.iter().collect();
    sorted.sort_by(|a, b| a.0.cmp(&b.0));
    sorted
        .iter()
        .map(|(name, hex)| format!("{hex}  {name}\n"))
        .collect()
}

/// Writes `dir/SHA256SUMS` for every asset in `dir` and returns its text.
/// Anything else in the directory is an error, so a release never ships a
/// stray file.
pub fn write_sums(dir: &Path) -> Result<String, String> {
    let mut entries = Vec::new();
    let listing =
        std::fs::read_dir(dir).map_err(|e| format!("cannot list {}: {e}", dir.display()))?;
    for entry in listing {
        let entry = entry.map_err(|e| format!("cannot list {}: {e}", dir.display()))?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if name == SUMS {
            continue;
        }
        if !is_asset(&name) {
            return Err(format!(
                "{} holds {name}, which is not a release asset",
                dir.display()
            ));
        }
        let bytes = std::fs::read(entry.path()).map_err(|e| format!("cannot read {name}: {e}"))?;
        entries.push((name, sha256_hex(&bytes)));
    }
    let text = sums_text(&entries);
    std::fs::write(dir.join(SUMS), &text).map_err(|e| format!("cannot write {SUMS}: {e}"))?;
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sums_are_sha256sum_lines_sorted_by_name() {
        let text = sums_text(&[
            ("heeler-b".to_owned(), "22".repeat(32)),
            ("heeler-a".to_owned(), "11".repeat(32)),
        ]);
        assert_eq!(
            text,
            format!(
                "{}  heeler-a\n{}  heeler-b\n",
                "11".repeat(32),
                "22".repeat(32)
            )
        );
    }

    #[test]
    fn the_assets_are_the_binary_and_archive_of_each_target() {
        assert!(is_asset("heeler-aarch64-apple-darwin"));
        assert!(is_asset("heeler-x86_64-unknown-linux-musl.tar.gz"));
        assert!(!is_asset("heeler-riscv64-unknown-linux-musl"));
        assert!(!is_asset(SUMS));
        // sha256("abc"), FIPS 180-2 appendix B.1.
        assert_eq!(
            sha256_hex(b"abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }
}
