//! The event hooks: Agent Notifications and Live Activity.

pub mod activity;
pub mod delivery;
pub mod env;
pub mod notify;
pub mod registration;
pub mod relay;
pub mod row_layout;
pub mod settings;
pub mod startup;
