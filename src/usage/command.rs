//! `heeler usage …`: argument handling for the Usage commands.
//!
//! `query` never fails (its problems are inside the JSON it prints, its
//! arguments included: it reads them itself, so an option a newer app adds
//! cannot turn its answer into argh's usage text and exit 1);
//! `worker` and `claude-limits` report failures on stderr like every other
//! command.

use std::io::Write;

use crate::base::json::Value;
use crate::cli::{UsageArgs, UsageCommand, UsagePlumbingCommand, UsageQueryOptions};
use crate::exit::Failure;
use crate::usage::event::Agent;
use crate::usage::paths::UsageDir;
use crate::usage::query::{self, Context, Options, RefreshMode};
use crate::usage::report;
use crate::usage::worker;

/// What `heeler usage query`'s arguments ask for, and the errors its
/// answer reports about them.
#[derive(Debug, Clone)]
pub(crate) struct QueryRequest {
    pub options: Options,
    /// `--help` or `help`: print the options instead of answering.
    pub help: bool,
    pub errors: Vec<Value>,
}

/// Reads `heeler usage query`'s arguments (pure). Nothing makes it fail: a
/// bad or missing value falls back to the default with an error, and an
/// unknown option (one a newer app sends) is ignored with an
/// `unknown_option` error, together with the value that follows it, if
/// any (a following argument not starting with `-`); the later of two
/// repeated options wins.
pub(crate) fn parse_query(args: &[String]) -> QueryRequest {
    let (mut tz, mut claude_limits, mut refresh) = (None, None, None);
    let (mut help, mut tz_missing, mut options_ended) = (false, false, false);
    let mut ignored = Vec::new();
    let mut rest = args.iter().map(String::as_str).peekable();
    while let Some(arg) = rest.next() {
        let slot = match arg {
            _ if options_ended => None,
            "--" => {
                options_ended = true;
                continue;
            }
            "--help" | "help" => {
                help = true;
                continue;
            }
            "--tz" => Some(&mut tz),
            "--claude-limits" => Some(&mut claude_limits),
            "--refresh" => Some(&mut refresh),
            _ => None,
        };
        match slot {
            Some(slot) => match rest.next() {
                Some(value) => *slot = Some(Some(value.to_owned())),
                None => {
                    *slot = Some(None);
                    tz_missing |= arg == "--tz";
                }
            },
            None if !options_ended && arg.starts_with('-') && arg != "-" => {
                let value = rest.next_if(|v| !v.starts_with('-'));
                let what = if value.is_some() {
                    format!("{arg} (and its value) is not an option of this heeler; ignored")
                } else {
                    format!("{arg} is not an option of this heeler; ignored")
                };
                ignored.push(report::error("unknown_option", &what));
            }
            None => ignored.push(report::error(
                "unexpected_argument",
                &format!("{arg:?} is not an argument of heeler usage query; ignored"),
            )),
        }
    }
    let mut errors = Vec::new();
    if tz_missing {
        errors.push(report::error(
            "bad_tz",
            "--tz needs a value; using the Host's zone",
        ));
    }
    let refresh = refresh_of(refresh, &mut errors);
    let claude_limits = claude_limits_of(claude_limits, &mut errors);
    errors.extend(ignored);
    QueryRequest {
        options: Options {
            tz: tz.flatten(),
            claude_limits,
            refresh,
        },
        help,
        errors,
    }
}

/// The `--refresh` mode [`parse_query`] read (`None`: not given;
/// `Some(None)`: given without a value); a bad value is `auto` with an
/// error.
fn refresh_of(value: Option<Option<String>>, errors: &mut Vec<Value>) -> RefreshMode {
    match value {
        None => RefreshMode::Auto,
        Some(text) => text
            .as_deref()
            .and_then(RefreshMode::parse)
            .unwrap_or_else(|| {
                errors.push(report::error(
                    "bad_refresh",
                    "--refresh must be auto, force or never; using auto",
                ));
                RefreshMode::Auto
            }),
    }
}

/// The `--claude-limits` toggle [`parse_query`] read (as for
/// [`refresh_of`]); a bad value is off with an error.
fn claude_limits_of(value: Option<Option<String>>, errors: &mut Vec<Value>) -> bool {
    match value {
        None => false,
        Some(text) => match text.as_deref() {
            Some("off") => false,
            Some("on") => true,
            _ => {
                errors.push(report::error(
                    "bad_claude_limits",
                    "--claude-limits must be on or off; using off",
                ));
                false
            }
        },
    }
}

pub fn run(args: UsageArgs) -> Result<(), Failure> {
    use crate::usage::views::{self, data::Period, render::View};
    let summary = args.flags();
    if args.watch {
        if args.command.is_some() || args.json || args.csv || args.limits {
            return Err(Failure::new(
                "heeler usage: --watch is the live screen; it takes only --agent, --dir and --tz (heeler usage live --help)",
                crate::cli::USAGE_ERROR_STATUS,
            ));
        }
        return crate::usage::live::run(&summary);
    }
    let Some(command) = args.command else {
        return views::run(View::Summary, &summary);
    };
    // The summary's options before a view's name would do nothing.
    if summary != crate::cli::UsageViewFlags::default() {
        return Err(Failure::new(
            "heeler usage: a view's options go after its name (heeler usage daily --json); see heeler usage --help",
            crate::cli::USAGE_ERROR_STATUS,
        ));
    }
    match command {
        UsageCommand::Daily(a) => views::run(View::Period(Period::Day), &a.flags()),
        UsageCommand::Weekly(a) => views::run(View::Period(Period::Week), &a.flags()),
        UsageCommand::Monthly(a) => views::run(View::Period(Period::Month), &a.flags()),
        UsageCommand::Session(a) => views::run(View::Session, &a.flags()),
        UsageCommand::Blocks(a) => views::run(View::Blocks, &a.flags()),
        UsageCommand::Models(a) => views::run(View::Models, &a.flags()),
        UsageCommand::Dirs(a) => views::run(View::Dirs, &a.flags()),
        UsageCommand::Statusline(a) => views::run(View::Statusline, &a.flags()),
        UsageCommand::Live(a) => crate::usage::live::run(&a.flags()),
    }
}

/// The plumbing of usage: the app's query, the worker, the herdr action.
pub fn run_plumbing(command: UsagePlumbingCommand) -> Result<(), Failure> {
    match command {
        UsagePlumbingCommand::Query(q) => {
            let request = parse_query(&q.args);
            if request.help {
                return print_help(&q.command);
            }
            let ctx = Context::from_env();
            let QueryRequest {
                options, errors, ..
            } = request;
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
        UsagePlumbingCommand::Worker(_) => {
            let dir = UsageDir::from_env()
                .map_err(|e| Failure::new(format!("heeler usage worker: {e}"), 1))?;
            worker::run_once(&dir)
                .map(|_| ())
                .map_err(|e| Failure::new(format!("heeler usage worker: {e}"), 1))
        }
        UsagePlumbingCommand::ClaudeLimits(_) => {
            let dir = UsageDir::from_env()
                .map_err(|e| Failure::new(format!("heeler usage claude-limits: {e}"), 1))?;
            crate::base::atomic_file::create_dir_all(&dir.0, 0o700)
                .map_err(|e| Failure::new(format!("heeler usage claude-limits: {e}"), 1))?;
            let now = crate::base::clock::unix_seconds();
            let env = crate::usage::limits::ProbeEnv::from_runtime(None);
            let limits = crate::usage::limits::probe_claude(
                &env,
                now,
                crate::usage::limits::probe_timeout(),
            );
            crate::usage::limits::store(&dir, Agent::Claude, &limits, now);
            let state = limits
                .get("state")
                .and_then(Value::as_str)
                .unwrap_or("error");
            let _ = writeln!(std::io::stdout(), "Claude Code limits: {state}");
            Ok(())
        }
        UsagePlumbingCommand::LiveAction(_) => crate::usage::live::action::run(),
    }
}

/// argh's help text of the query's options (what `--help` prints for every
/// other command).
fn print_help(command: &[String]) -> Result<(), Failure> {
    use argh::FromArgs;
    let name: Vec<&str> = command.iter().map(String::as_str).collect();
    let text = match UsageQueryOptions::from_args(&name, &["--help"]) {
        Err(exit) => exit.output,
        Ok(_) => String::new(),
    };
    let _ = writeln!(std::io::stdout(), "{}", text.trim_end());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(args: &[&str]) -> QueryRequest {
        parse_query(&args.iter().map(|s| s.to_string()).collect::<Vec<_>>())
    }

    fn codes(r: &QueryRequest) -> Vec<&str> {
        r.errors
            .iter()
            .filter_map(|e| e.get("code").and_then(Value::as_str))
            .collect()
    }

    #[test]
    fn known_options_are_read() {
        let r = parsed(&[
            "--refresh",
            "never",
            "--tz",
            "Asia/Tokyo",
            "--claude-limits",
            "on",
        ]);
        assert_eq!(r.options.tz.as_deref(), Some("Asia/Tokyo"));
        assert_eq!(r.options.refresh, RefreshMode::Never);
        assert!(r.options.claude_limits);
        assert!(r.errors.is_empty() && !r.help);
        let r = parsed(&[]);
        assert_eq!(
            (r.options.tz, r.options.refresh, r.options.claude_limits),
            (None, RefreshMode::Auto, false)
        );
    }

    #[test]
    fn an_unknown_option_is_an_error_and_the_rest_still_counts() {
        let r = parsed(&[
            "--new-flag",
            "--tz",
            "UTC",
            "--future",
            "7",
            "--refresh",
            "force",
        ]);
        assert_eq!(codes(&r), ["unknown_option", "unknown_option"]);
        assert_eq!(r.options.tz.as_deref(), Some("UTC"));
        assert_eq!(r.options.refresh, RefreshMode::Force);
        let r = parsed(&["-x", "stray", "--", "--tz"]);
        assert_eq!(codes(&r), ["unknown_option", "unexpected_argument"]);
        assert_eq!(r.options.tz, None);
    }

    #[test]
    fn bad_and_missing_values_fall_back_with_an_error() {
        let r = parsed(&["--claude-limits", "maybe", "--refresh", "soon"]);
        assert_eq!(codes(&r), ["bad_refresh", "bad_claude_limits"]);
        assert_eq!(r.options.refresh, RefreshMode::Auto);
        assert!(!r.options.claude_limits);
        for (args, code) in [
            (&["--tz"][..], "bad_tz"),
            (&["--refresh"], "bad_refresh"),
            (&["--claude-limits"], "bad_claude_limits"),
        ] {
            let r = parsed(args);
            assert_eq!(codes(&r), [code], "{args:?}");
            assert_eq!(r.options.tz, None);
        }
    }

    #[test]
    fn help_is_asked_for_outside_values() {
        assert!(parsed(&["--help"]).help);
        assert!(parsed(&["--refresh", "never", "help"]).help);
        assert!(!parsed(&["--tz", "help"]).help);
    }
}
