//! The command line: argh definitions, and [`parse`], which turns argh's
//! early exits into one rule for the exit status.
//!
//! Every subcommand here does something; each later capability adds its own.
//! Asking for help exits 0 with the help on stdout; every usage error (an
//! unknown argument or subcommand, a missing value, no command at all) exits
//! [`USAGE_ERROR_STATUS`], as ripgrep and most Unix tools do, so a script
//! tells a mistyped command line from a command that ran and failed (1, or
//! the status the command documents).

use argh::FromArgs;

/// The exit status of every usage error.
pub const USAGE_ERROR_STATUS: u8 = 2;

/// Why parsing ended without a command line to run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EarlyExit {
    /// `--help` (or `help`): the text for stdout, exit 0.
    Help(String),
    /// A usage error: the text for stderr, exit [`USAGE_ERROR_STATUS`].
    Usage(String),
}

/// The process's own command line, parsed by [`parse`].
pub fn from_env() -> Result<Args, EarlyExit> {
    let mut argv = Vec::new();
    for arg in std::env::args_os() {
        match arg.into_string() {
            Ok(arg) => argv.push(arg),
            Err(arg) => {
                return Err(EarlyExit::Usage(format!(
                    "Invalid utf8: {}",
                    arg.to_string_lossy()
                )));
            }
        }
    }
    parse(&argv)
}

/// Parses `argv` (the program first) with argh, with argh's own texts
/// (`argh::from_env`'s), but ending in an [`EarlyExit`] instead of exiting.
pub fn parse(argv: &[String]) -> Result<Args, EarlyExit> {
    let Some((program, rest)) = argv.split_first() else {
        return Err(EarlyExit::Usage("No program name, argv is empty".into()));
    };
    let name = std::path::Path::new(program)
        .file_name()
        .and_then(|name| name.to_str())
        .unwrap_or(program);
    let rest: Vec<&str> = rest.iter().map(String::as_str).collect();
    Args::from_args(&[name], &rest).map_err(|early| match early.status {
        Ok(()) => EarlyExit::Help(early.output),
        Err(()) => EarlyExit::Usage(format!(
            "{}\nRun {name} --help for more information.",
            early.output
        )),
    })
}

/// heeler: the herdr plugin for the Heeler app (pairing, encrypted agent
/// notifications, sidebar layout, usage).
#[derive(FromArgs, Debug)]
pub struct Args {
    /// print the version and exit
    #[argh(switch)]
    pub version: bool,

    #[argh(subcommand)]
    pub command: Option<Command>,
}

#[derive(FromArgs, Debug)]
#[argh(subcommand)]
pub enum Command {
    Wire(WireArgs),
    Accept(AcceptArgs),
    Pair(PairArgs),
    NotifyHook(NotifyHookArgs),
    ActivityHook(ActivityHookArgs),
    HookWorker(HookWorkerArgs),
    SidebarHook(SidebarHookArgs),
    Usage(UsageArgs),
    PairAction(PairActionArgs),
    Doctor(DoctorArgs),
}

/// Interop tool: encode, decode, seal and open the app's wire formats.
#[derive(FromArgs, Debug)]
#[argh(subcommand, name = "wire")]
pub struct WireArgs {
    #[argh(subcommand)]
    pub command: WireCommand,
}

#[derive(FromArgs, Debug)]
#[argh(subcommand)]
pub enum WireCommand {
    Pairing(PairingArgs),
    Notify(NotifyArgs),
    Activity(ActivityArgs),
    Session(SessionArgs),
    Kid(KidArgs),
    Collapse(CollapseArgs),
}

/// Pairing Codes (HERDR-PAIR).
#[derive(FromArgs, Debug)]
#[argh(subcommand, name = "pairing")]
pub struct PairingArgs {
    #[argh(subcommand)]
    pub command: PairingCommand,
}

#[derive(FromArgs, Debug)]
#[argh(subcommand)]
pub enum PairingCommand {
    Decode(PairingDecodeArgs),
    Encode(PairingEncodeArgs),
}

/// Decode a v1 Pairing Code to its wire payload JSON.
#[derive(FromArgs, Debug)]
#[argh(subcommand, name = "decode")]
pub struct PairingDecodeArgs {
    /// the Pairing Code
    #[argh(positional)]
    pub code: String,
}

/// Encode the wire payload JSON on stdin as a canonical Pairing Code.
#[derive(FromArgs, Debug)]
#[argh(subcommand, name = "encode")]
pub struct PairingEncodeArgs {
    /// emit version 2 (requires sock and herdr)
    #[argh(switch)]
    pub v2: bool,
}

/// Agent Notification envelopes (HERDR-NOTIFY:1).
#[derive(FromArgs, Debug)]
#[argh(subcommand, name = "notify")]
pub struct NotifyArgs {
    #[argh(subcommand)]
    pub command: SealCommand,
}

/// Live Activity content envelopes (HERDR-ACTIVITY:1).
#[derive(FromArgs, Debug)]
#[argh(subcommand, name = "activity")]
pub struct ActivityArgs {
    #[argh(subcommand)]
    pub command: ActivityCommand,
}

#[derive(FromArgs, Debug)]
#[argh(subcommand)]
pub enum SealCommand {
    Seal(SealArgs),
    Open(OpenArgs),
}

#[derive(FromArgs, Debug)]
#[argh(subcommand)]
pub enum ActivityCommand {
    Seal(SealArgs),
    Open(OpenArgs),
    Build(BuildArgs),
}

/// Seal the plaintext JSON on stdin into an envelope.
#[derive(FromArgs, Debug)]
#[argh(subcommand, name = "seal")]
pub struct SealArgs {
    /// the 32-byte Notification Key, unpadded base64url
    #[argh(option)]
    pub key: String,
    /// a fixed 12-byte nonce, unpadded base64url (for test vectors only)
    #[argh(option)]
    pub nonce: Option<String>,
}

/// Open the envelope on stdin and print its plaintext JSON.
#[derive(FromArgs, Debug)]
#[argh(subcommand, name = "open")]
pub struct OpenArgs {
    /// the 32-byte Notification Key, unpadded base64url
    #[argh(option)]
    pub key: String,
}

/// Build the content JSON from herdr's `agent list` agents on stdin.
#[derive(FromArgs, Debug)]
#[argh(subcommand, name = "build")]
pub struct BuildArgs {
    /// the host name shown in the activity
    #[argh(option)]
    pub host: String,
    /// the device's pinned_pane_ids as JSON
    #[argh(option)]
    pub pins: Option<String>,
}

/// Print the herdr session of a socket path as JSON ("" default, null unknown).
#[derive(FromArgs, Debug)]
#[argh(subcommand, name = "session")]
pub struct SessionArgs {
    /// the HERDR_SOCKET_PATH value; omitted means unset
    #[argh(positional)]
    pub socket_path: Option<String>,
}

/// Print the key id of a Notification Key.
#[derive(FromArgs, Debug)]
#[argh(subcommand, name = "kid")]
pub struct KidArgs {
    /// the 32-byte Notification Key, unpadded base64url
    #[argh(option)]
    pub key: String,
}

/// Print the collapse key of a pane under a Notification Key.
#[derive(FromArgs, Debug)]
#[argh(subcommand, name = "collapse")]
pub struct CollapseArgs {
    /// the 32-byte Notification Key, unpadded base64url
    #[argh(option)]
    pub key: String,
    /// the herdr pane id
    #[argh(option)]
    pub pane: String,
}

/// Enrollment entrypoint: the forced command sshd runs for a Bootstrap Key.
/// Reads the Device Key line on stdin, answers one HERDR-ENROLL line.
#[derive(FromArgs, Debug)]
#[argh(subcommand, name = "accept")]
pub struct AcceptArgs {
    /// the plugin state dir holding pending/<id>.json
    #[argh(option)]
    pub state_dir: Option<String>,
    /// the pairing id of the ceremony
    #[argh(option)]
    pub pairing_id: Option<String>,
}

/// Pair a Heeler device: show a Pairing Code and enroll its Device Key.
#[derive(FromArgs, Debug)]
#[argh(subcommand, name = "pair")]
pub struct PairArgs {
    /// headless: print the Pairing Code on stdout instead of opening the popup
    #[argh(switch)]
    pub no_ui: bool,
    /// an address for the code (repeatable; default: the pre-checked one)
    #[argh(option)]
    pub address: Vec<String>,
    /// print a config-only code (no Bootstrap Key) and exit (implies --no-ui)
    #[argh(switch)]
    pub config_only: bool,
    /// show the code even when no OpenSSH server answers on the advertised port
    #[argh(switch)]
    pub no_ssh_check: bool,
}
/// Event hook: push an Agent Notification for a confirmed Blocked/Done
/// transition (herdr runs this on pane.agent_status_changed).
#[derive(FromArgs, Debug)]
#[argh(subcommand, name = "notify-hook")]
pub struct NotifyHookArgs {}

/// Internal: serve this session's queued hook events, then exit (started
/// by the event hooks).
#[derive(FromArgs, Debug)]
#[argh(subcommand, name = "hook-worker")]
pub struct HookWorkerArgs {}

/// Event hook: update the Host's Live Activity on every registered device
/// (herdr runs this on pane.agent_status_changed).
#[derive(FromArgs, Debug)]
#[argh(subcommand, name = "activity-hook")]
pub struct ActivityHookArgs {}

/// Export herdr's sidebar layout to <HERDR_PLUGIN_CONFIG_DIR>/sidebar.json
/// (the plugin's startup hook).
#[derive(FromArgs, Debug)]
#[argh(subcommand, name = "sidebar-hook")]
pub struct SidebarHookArgs {}
/// Claude Code and Codex token usage, cost and limits (without a
/// subcommand: the summary of today, 7 and 30 days, limits and coverage).
#[derive(FromArgs, Debug)]
#[argh(subcommand, name = "usage")]
pub struct UsageArgs {
    /// claude or codex (default: both)
    #[argh(option)]
    pub agent: Option<String>,
    /// only directories under this path
    #[argh(option)]
    pub dir: Option<String>,
    /// IANA time zone for days (default: the Host's zone)
    #[argh(option)]
    pub tz: Option<String>,
    /// print the summary's JSON document
    #[argh(switch)]
    pub json: bool,
    /// print the summary as CSV
    #[argh(switch)]
    pub csv: bool,
    #[argh(subcommand)]
    pub command: Option<UsageCommand>,
}

impl UsageArgs {
    /// The summary's options, in the shape every view's are.
    pub fn flags(&self) -> UsageViewFlags {
        UsageViewFlags {
            agent: self.agent.clone(),
            dir: self.dir.clone(),
            tz: self.tz.clone(),
            json: self.json,
            csv: self.csv,
            ..UsageViewFlags::default()
        }
    }
}

#[derive(FromArgs, Debug)]
#[argh(subcommand)]
pub enum UsageCommand {
    Query(UsageQueryArgs),
    Worker(UsageWorkerArgs),
    ClaudeLimits(UsageClaudeLimitsArgs),
    Daily(UsageDailyArgs),
    Weekly(UsageWeeklyArgs),
    Monthly(UsageMonthlyArgs),
    Session(UsageSessionArgs),
    Blocks(UsageBlocksArgs),
    Models(UsageModelsArgs),
    Dirs(UsageDirsArgs),
    Statusline(UsageStatuslineArgs),
}

/// The options every view for people shares, as given.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct UsageViewFlags {
    pub since: Option<String>,
    pub until: Option<String>,
    pub agent: Option<String>,
    pub dir: Option<String>,
    pub breakdown: bool,
    pub tz: Option<String>,
    pub json: bool,
    pub csv: bool,
}

/// One argh subcommand per view, all with the options of [`UsageViewFlags`].
macro_rules! usage_view_args {
    ($($name:ident $command:tt $doc:tt;)*) => {$(
        #[doc = $doc]
        #[derive(FromArgs, Debug)]
        #[argh(subcommand, name = $command)]
        pub struct $name {
            /// first day shown, YYYY-MM-DD (default: 29 days before today)
            #[argh(option)]
            pub since: Option<String>,
            /// last day shown, YYYY-MM-DD (default: today)
            #[argh(option)]
            pub until: Option<String>,
            /// claude or codex (default: both)
            #[argh(option)]
            pub agent: Option<String>,
            /// only directories under this path
            #[argh(option)]
            pub dir: Option<String>,
            /// one line per model under each row
            #[argh(switch)]
            pub breakdown: bool,
            /// IANA time zone for days (default: the Host's zone)
            #[argh(option)]
            pub tz: Option<String>,
            /// print the view's JSON document
            #[argh(switch)]
            pub json: bool,
            /// print the view as CSV
            #[argh(switch)]
            pub csv: bool,
        }

        impl $name {
            pub fn flags(&self) -> UsageViewFlags {
                UsageViewFlags {
                    since: self.since.clone(),
                    until: self.until.clone(),
                    agent: self.agent.clone(),
                    dir: self.dir.clone(),
                    breakdown: self.breakdown,
                    tz: self.tz.clone(),
                    json: self.json,
                    csv: self.csv,
                }
            }
        }
    )*};
}

usage_view_args! {
    UsageDailyArgs "daily" "Tokens and cost per day.";
    UsageWeeklyArgs "weekly" "Tokens and cost per week (weeks start on Monday).";
    UsageMonthlyArgs "monthly" "Tokens and cost per month.";
    UsageSessionArgs "session" "Tokens and cost per session (a Claude Code session, a Codex thread), latest first.";
    UsageBlocksArgs "blocks" "5-hour blocks: tokens, cost, burn rate and the active block's projection.";
    UsageModelsArgs "models" "Tokens and cost per model.";
    UsageDirsArgs "dirs" "Tokens and cost per directory.";
    UsageStatuslineArgs "statusline" "One short line: today's cost, the active block's burn rate, the tightest limit.";
}

/// `heeler usage query` as given. Its options ([`UsageQueryOptions`]) are
/// read by the command itself (`usage::command`), so that no argument (an
/// option a newer app sends, a missing value) keeps it from answering with
/// its JSON document: each is an error inside the document instead.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UsageQueryArgs {
    /// The command's name as argh saw it (for the help text).
    pub command: Vec<String>,
    pub args: Vec<String>,
}

impl FromArgs for UsageQueryArgs {
    fn from_args(command_name: &[&str], args: &[&str]) -> Result<Self, argh::EarlyExit> {
        let owned = |list: &[&str]| list.iter().map(|s| s.to_string()).collect();
        Ok(UsageQueryArgs {
            command: owned(command_name),
            args: owned(args),
        })
    }
}

impl argh::SubCommand for UsageQueryArgs {
    const COMMAND: &'static argh::CommandInfo = <UsageQueryOptions as argh::SubCommand>::COMMAND;
}

/// Print the usage JSON (v1) from the cache at once; refresh in the background.
#[derive(FromArgs, Debug)]
#[argh(subcommand, name = "query")]
pub struct UsageQueryOptions {
    /// IANA time zone for days (default: the Host's zone)
    #[argh(option)]
    pub tz: Option<String>,
    /// on or off (default off): include Claude Code plan limits
    #[argh(option)]
    pub claude_limits: Option<String>,
    /// auto (default), force or never
    #[argh(option)]
    pub refresh: Option<String>,
}

/// Internal: refresh the usage cache and limits once, then exit.
#[derive(FromArgs, Debug)]
#[argh(subcommand, name = "worker")]
pub struct UsageWorkerArgs {}

/// Read Claude Code's plan limits in this (herdr's) session and store them.
#[derive(FromArgs, Debug)]
#[argh(subcommand, name = "claude-limits")]
pub struct UsageClaudeLimitsArgs {}

/// The `pair` action: ask herdr to open the pairing popup (exit status =
/// the outcome).
#[derive(FromArgs, Debug)]
#[argh(subcommand, name = "pair-action")]
pub struct PairActionArgs {}

/// Check this Host's setup for pairing and notifications; each problem comes
/// with a one-line fix. Exits 0 when nothing fails.
#[derive(FromArgs, Debug)]
#[argh(subcommand, name = "doctor")]
pub struct DoctorArgs {
    /// print the report as JSON
    #[argh(switch)]
    pub json: bool,
    /// also check that the Push Relay is reachable (network access)
    #[argh(switch)]
    pub network: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argv(args: &[&str]) -> Vec<String> {
        args.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn help_and_usage_errors_end_parsing_with_argh_s_texts() {
        assert!(matches!(
            parse(&argv(&["/x/bin/heeler", "--help"])),
            Err(EarlyExit::Help(text)) if text.starts_with("Usage: heeler")
        ));
        assert_eq!(
            parse(&argv(&["/x/bin/heeler", "--bogus"])).err(),
            Some(EarlyExit::Usage(
                "Unrecognized argument: --bogus\n\nRun heeler --help for more information.".into()
            ))
        );
        assert!(matches!(parse(&argv(&[])), Err(EarlyExit::Usage(_))));
        let args = parse(&argv(&["heeler", "pair", "--no-ui"])).unwrap();
        assert!(matches!(args.command, Some(Command::Pair(p)) if p.no_ui));
        assert!(parse(&argv(&["heeler"])).unwrap().command.is_none());
    }
}
