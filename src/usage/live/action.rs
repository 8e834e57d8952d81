//! `heeler usage live-action`: the `usage` action (`heeler.usage` in
//! herdr), which opens the live usage screen in herdr's popup (the `usage`
//! pane, where `heeler usage live` runs) through `herdr::popup`.

use crate::exit::Failure;
use crate::herdr::client::Deadlines;
use crate::herdr::popup::{self, Popup};

/// The live usage popup and how its refusals are told.
pub const POPUP: Popup = Popup {
    entrypoint: "usage",
    request_id: "heeler:usage-action",
    name: "Usage",
    action: "Usage",
    already_open: "(maybe the usage screen's own): press q there to close it",
};

pub(crate) fn run() -> Result<(), Failure> {
    let deadlines = Deadlines::capped(crate::base::clock::test_deadline_cap());
    popup::open(&POPUP, deadlines).map_err(|e| Failure::new(e.to_string(), e.status()))
}
