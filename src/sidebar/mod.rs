//! The sidebar layout snapshot: herdr's `config.toml` sidebar layout
//! exported as `sidebar.json` for the app.
//!
//! - `config.rs`: the pure grammar, TOML bytes to the validated layout and
//!   the snapshot value, with whole-layout fallback and diagnostics.
//! - `toml_1_0.rs`: tells TOML 1.0 from the 1.1 additions the `toml` crate
//!   accepts, so a config herdr rejects is not exported.
//! - `snapshot.rs`: the file-system edge: the source path, the cache
//!   (reuse, re-parse of diagnosed snapshots, rewrite only on change), the
//!   atomic 0600 write.
//!
//! Architecture invariants: only `base` below it; the startup command
//! (`hooks::startup`) and the event hooks call in. An unchanged source costs
//! one `stat` and one read; no raw config value or parser message ever
//! reaches the snapshot.

pub mod config;
pub mod snapshot;
pub mod toml_1_0;
