//! `heeler pair-action`: the `pair` action, which opens the pairing popup
//! (the `pair` pane, where `heeler pair` runs) through
//! `herdr::popup`.

use crate::exit::Failure;
use crate::herdr::client::Deadlines;
use crate::herdr::popup::{self, Popup};

/// The pairing popup and how its refusals are told.
pub const POPUP: Popup = Popup {
    entrypoint: "pair",
    request_id: "heeler:pair-action",
    name: "Pairing",
    action: "Pair",
    already_open: "(maybe pairing's own): scan its code or press q there to close it",
};

pub fn run() -> Result<(), Failure> {
    let deadlines = Deadlines::capped(crate::base::clock::test_deadline_cap());
    popup::open(&POPUP, deadlines).map_err(|e| Failure::new(e.to_string(), e.status()))
}
