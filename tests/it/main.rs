//! heeler's integration tests, one module per area, built as one test
//! binary (as cargo, ripgrep and just do): the binary and its shared
//! support modules are compiled and linked once, not once per file, and the
//! support modules are plain modules of this crate, so the dead-code lint
//! sees every use of them. Run one area with
//! `cargo test --test it <module>::`; the `#[ignore]`d herdr tests with
//! `cargo test --test it herdr_ -- --ignored`.
//!
//! Every test shares this process: a test that needs process-wide state
//! (a local user account, a directory name) takes it from the support
//! modules (`common::ACCOUNTS`, `scratch::TempDir`), never sets the
//! environment or the current directory of the process.
#![allow(clippy::unwrap_used, clippy::expect_used)]

// Support shared by the test modules.
mod common;
/// The in-test random loops' round counts (`HEELER_DEEP=1`), from their one
/// owner.
#[path = "../../src/base/depth.rs"]
mod depth;
/// The release layout `cargo xtask dist` writes, from its one owner.
#[path = "../../xtask/src/dist_layout.rs"]
mod dist_layout;
mod fuzz_support;
mod scratch;
mod support;
mod tmux;
mod usage_fixture;

// The tests, one module per area.
mod activity_hook;
mod authorized_keys_locks;
mod authorized_keys_stress;
mod check_tag_version;
mod cli_habits;
mod closed_stdout;
mod doctor;
mod drip;
mod enrollment_sshd;
mod herdr_e2e;
mod herdr_endpoint;
mod herdr_real;
mod hook_input_robustness;
mod hook_worker;
mod install_sh;
mod leftover_temps;
mod link;
mod live_activity_rows_vector;
mod manifest;
mod msrv;
mod notify_hook;
mod pair_action;
mod pair_no_ui;
mod popup_tmux;
mod readme;
mod registration_prune;
mod relay_tls;
mod release_smoke;
mod robustness;
mod sidebar_fuzz;
mod sidebar_refresh;
mod sidebar_vectors;
mod state_trust;
mod tidy;
mod toml_1_0_oracle;
mod usage;
mod usage_claude_subagents;
mod usage_claude_writes;
mod usage_cline;
mod usage_codex_shapes;
mod usage_db_agents;
mod usage_gemini_qwen;
mod usage_herdr_action;
mod usage_hostile;
mod usage_incremental;
mod usage_incremental_kimicop;
mod usage_kimi_copilot;
mod usage_limits;
mod usage_live;
mod usage_live_screen;
mod usage_prerender;
mod usage_state_files;
mod usage_threads;
mod usage_views;
mod usage_xdg_state;
mod vectors;
mod wire_cli;
