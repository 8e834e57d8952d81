//! `heeler usage …`: argument handling for the Usage commands.
//!
//! `query` never fails (its problems are inside the JSON it prints);
//! `worker` and `claude-limits` report failures on stderr like every other
//! command.

use std::io::Write;

use crate::base::json::Value;
use crate::cli::{UsageArgs, UsageCommand};
use crate::exit::Failure;
use crate::usage::event::Agent;
use crate::usage::paths::UsageDir;
use crate::usage::query::{self, Context, Options, RefreshMode};
use crate::usage::report;
use crate::usage::worker;

pub fn run(args: UsageArgs) -> Result<(), Failure> {
    match args.command {
        UsageCommand::Query(q) => {
            let ctx = Context::from_env();
            let mut errors = Vec::new();
            let refresh = match q.refresh.as_deref() {
                None => RefreshMode::Auto,
                Some(text) => RefreshMode::parse(text).unwrap_or_else(|| {
                    errors.push(report::error(
                        "bad_refresh",
                        "--refresh must be auto, force or never; using auto",
                    ));
                    RefreshMode::Auto
                }),
            };
            let claude_limits = match q.claude_limits.as_deref() {
                None | Some("off") => false,
                Some("on") => true,
                Some(_) => {
                    errors.push(report::error(
                        "bad_claude_limits",
                        "--claude-limits must be on or off; using off",
                    ));
                    false
                }
            };
            let options = Options {
                tz: q.tz,
                claude_limits,
                refresh,
            };
            let mut answer = query::answer(&options, &ctx);
            if let Some(Value::Array(list)) =
                answer.as_object_mut().and_then(|o| o.get_mut("errors"))
            {
                list.extend(errors);
            }
            // A closed stdout (the SSH client went away) is not worth a panic.
            let mut out = std::io::stdout().lock();
            let _ = writeln!(out, "{}", answer.to_json());
            let _ = out.flush();
            Ok(())
        }
        UsageCommand::Worker(_) => {
            let dir = UsageDir::from_env()
                .map_err(|e| Failure::new(format!("heeler usage worker: {e}"), 1))?;
            worker::run_once(&dir)
                .map(|_| ())
                .map_err(|e| Failure::new(format!("heeler usage worker: {e}"), 1))
        }
        UsageCommand::ClaudeLimits(_) => {
            let dir = UsageDir::from_env()
                .map_err(|e| Failure::new(format!("heeler usage claude-limits: {e}"), 1))?;
            crate::base::atomic_file::create_dir_all(&dir.0, 0o700)
                .map_err(|e| Failure::new(format!("heeler usage claude-limits: {e}"), 1))?;
            let now = crate::base::clock::unix_seconds();
            let env = crate::usage::limits::ProbeEnv::from_runtime(None);
            let limits =
                crate::usage::limits::probe_claude(&env, now, crate::usage::limits::PROBE_TIMEOUT);
            crate::usage::limits::store(&dir, Agent::Claude, &limits, now);
            let state = limits
                .get("state")
                .and_then(Value::as_str)
                .unwrap_or("error");
            let _ = writeln!(std::io::stdout(), "Claude Code limits: {state}");
            Ok(())
        }
    }
}
