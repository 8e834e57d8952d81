//! How many rounds the in-test random loops run: a count sized for
//! `cargo test` by default, and the deep count under `HEELER_DEEP=1`. The
//! coverage-guided campaign is cargo-fuzz's (`fuzz/`); these loops keep
//! each property checked on every test run. The unit tests and the
//! integration tests (`tests/it/main.rs` includes this file) read the
//! variable here alone.

/// The environment variable that asks for the deep counts (`1`).
pub const DEEP_ENV: &str = "HEELER_DEEP";

/// Whether `HEELER_DEEP=1` asks for the deep counts.
pub fn deep() -> bool {
    std::env::var_os(DEEP_ENV).is_some_and(|v| v == "1")
}

/// `quick`, or `deep` when `HEELER_DEEP=1`.
pub fn rounds(quick: usize, deep: usize) -> usize {
    if self::deep() { deep } else { quick }
}
