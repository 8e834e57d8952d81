//! herdr itself, as heeler sees it from a plugin process.
//!
//! - `client.rs`: herdr's socket API (one request line per connection, hard
//!   timeouts), with `HERDR_BIN_PATH`'s CLI as the fallback; typed errors.
//! - `answer.rs`: herdr's answers as types (agents, tabs, panes,
//!   workspaces), parsed once; no caller reads herdr's field names.
//! - `popup.rs`: an action that opens one of the plugin's popup panes
//!   (`plugin.pane.open`, the CLI as the fallback) and tells a refusal in
//!   a herdr notification.
//! - `session.rs`: which herdr session a process serves (derived from
//!   `HERDR_SOCKET_PATH`), the session name rule and the delivery rule.
//!
//! Architecture invariants: only `base` below it. Nothing here writes a
//! file; every call into herdr is bounded in time.

pub mod answer;
pub mod client;
pub mod popup;
pub mod session;
