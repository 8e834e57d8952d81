//! The pairing popup (`heeler pair`): a checklist, then the QR Pairing Code,
//! then the enrolled device, in herdr's popup pane.
//!
//! - `machine.rs`: the phase machine, pure: an input (key, tick, an effect's
//!   outcome) in, the next phase and the effects to perform out.
//! - `event_loop.rs`: the effect loop: gathers the host key, user and
//!   addresses, performs the machine's effects (ceremony, clipboard, paint),
//!   polls enrollment, expiry, signals and resizes, and always ends the
//!   ceremony on the way out.
//! - `checklist.rs`: the checklist's rows, checks, cursor and key rules.
//! - `screen.rs`: every screen as lines, with its exact wording.
//! - `qr.rs`: the Pairing Code as half-block QR lines, black on white.
//! - The terminal guard and the keys are `base::terminal` and `base::keys`,
//!   shared with the live usage screen.
//! - `clipboard.rs`: pbcopy on macOS, OSC 52 elsewhere.
//!
//! Architecture invariants: the machine, screens and key rules are pure
//! (values in, decisions or lines out); only the loop and `terminal.rs`
//! touch the terminal. Whatever ends the popup (a key, a signal, an error) ends the
//! ceremony first.

pub mod checklist;
pub mod clipboard;
pub mod event_loop;
pub mod machine;
pub mod qr;
pub mod screen;
