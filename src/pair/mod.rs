//! Pairing: the ceremony, the forced command, the popup and the action.

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
pub mod state;
pub mod tailscale;
