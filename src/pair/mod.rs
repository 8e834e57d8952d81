//! Pairing: the server side of the ceremony that enrolls a phone's Device
//! Key in `~/.ssh/authorized_keys`, and its front ends.
//!
//! - `ceremony.rs`: begin / poll / end / revoke / sweep, the API both
//!   front ends use, and `judge`, the one decision on an enrollment (the
//!   key file is the truth); every end and enrollment serialise on the
//!   authorized_keys lock.
//! - `authorized_keys.rs`: the only door to `authorized_keys`: pure line
//!   edits (remove by pairing id, sweep, remove one exact line, remove by
//!   blob), the bootstrap marker grammar, locked `O_APPEND` additions of
//!   whole lines, and one locked checked replace for removals.
//! - `state.rs`: the `pending/` and `enrolled/` state files and their sweep.
//! - `bootstrap_key.rs`: the per-ceremony Ed25519 key, its public line and
//!   pairing ids.
//! - `device_key.rs`: validation and canonical form of a submitted Device Key.
//! - `host_key.rs`: the pinned host key fingerprint, the host-key file
//!   names, the passwd user name.
//! - `accept.rs`: `heeler accept`, the forced command sshd runs (the
//!   HERDR-ENROLL protocol).
//! - `headless.rs`: `heeler pair --no-ui`, the ceremony without a popup.
//! - `config.rs`: `pair.json` (`ssh_port`, `addresses`, `launcher`) and a
//!   warning for every value it cannot honour.
//! - `addresses.rs`: candidate addresses: filter, rank, de-duplicate.
//! - `endpoint.rs`: v1 or v2 for this herdr (a pure plan) and the v2
//!   launcher, written staged and tested before it is moved in place.
//! - `tailscale.rs`: whether Tailscale serves SSH on a checked address.
//! - `preflight.rs`: before a code is shown, doctor's SSH server check on
//!   the advertised port, and what pairing does with its verdict.
//! - `action.rs`: the `pair` action: `plugin.pane.open` on herdr's socket,
//!   the herdr CLI as fallback.
//! - `popup/`: the pairing popup (`heeler pair`).
//!
//! Architecture invariants: `authorized_keys` is edited only through
//! `authorized_keys.rs`, under its lock, adding by one `O_APPEND` write and
//! removing by a temp file swapped in only over the file it read, keeping
//! every line it did not add, also those others write meanwhile. An
//! enrollment is reported exactly when the key file holds its key, however
//! the ceremony ends. The Bootstrap Key is never a Device Key. A Bootstrap
//! Key is authorized for exactly one
//! forced command and lives until its expiry at most; every way out of a
//! ceremony removes it. Seeds never reach stdout/stderr except inside the
//! Pairing Code.

pub mod accept;
pub mod action;
pub mod addresses;
pub mod authorized_keys;
pub mod bootstrap_key;
pub mod ceremony;
pub mod config;
pub mod device_key;
pub mod endpoint;
pub mod headless;
pub mod host_key;
pub mod popup;
pub mod preflight;
pub mod state;
pub mod tailscale;
