//! The command line: argh definitions, and [`parse`], which turns argh's
//! early exits into one rule for the exit status.
//!
//! Two command trees share the one binary. The commands a person runs
//! ([`UserArgs`]: `pair`, `usage` and its views, `doctor`, `link`) are what
//! `heeler --help` lists. The plumbing ([`PlumbingArgs`]: what herdr, sshd
//! and the Heeler app run, and the `wire` interop tool) keeps its names,
//! arguments and outputs, and is listed by `heeler help plumbing`. [`parse`]
//! picks the tree by the first words of the command line, read off argh's
//! own command tables, so a name is written once.
//!
//! Asking for help (`-h`, `--help`, `help`) exits 0 with the help on stdout;
//! every usage error (an unknown argument or subcommand, a missing value, no
//! command at all) is one line on stderr and exits [`USAGE_ERROR_STATUS`],
//! as ripgrep and most Unix tools do, so a script tells a mistyped command
//! line from a command that ran and failed (1, or the status the command
//! documents). A mistyped command or option name gets the nearest known one
//! as a suggestion ([`suggest`]).

use argh::{FromArgs, SubCommands};

/// The exit status of every usage error.
pub const USAGE_ERROR_STATUS: u8 = 2;

/// Why parsing ended without a command line to run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EarlyExit {
    /// `--help` (or `help`): the text for stdout, exit 0.
    Help(String),
    /// A usage error: one line for stderr, exit [`USAGE_ERROR_STATUS`].
    Usage(String),
}

/// A parsed command line: what to run.
#[derive(Debug)]
pub struct Args {
    pub command: Command,
}

/// Every command the binary runs, from either tree.
#[derive(Debug)]
pub enum Command {
    /// `-V` or `--version`.
    Version,
    /// No command at all.
    Nothing,
    Wire(WireArgs),
    Accept(AcceptArgs),
    Pair(PairArgs),
    NotifyHook(NotifyHookArgs),
    ActivityHook(ActivityHookArgs),
    HookWorker(HookWorkerArgs),
    SidebarHook(SidebarHookArgs),
    Usage(UsageArgs),
    UsagePlumbing(UsagePlumbingCommand),
    PairAction(PairActionArgs),
    Doctor(DoctorArgs),
    Link(LinkArgs),
}

/// The process's own command line, parsed by [`parse`].
pub fn from_env() -> Result<Args, EarlyExit> {
    let mut argv = Vec::new();
    for arg in std::env::args_os() {
        match arg.into_string() {
            Ok(arg) => argv.push(arg),
            Err(arg) => {
                return Err(EarlyExit::Usage(format!(
                    "heeler: invalid UTF-8 in argument {:?}",
                    arg.to_string_lossy()
                )));
            }
        }
    }
    parse(&argv)
}

/// Which command tree a command line belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Tree {
    User,
    Plumbing,
}

/// The names of a subcommand enum's commands (argh's table).
fn names<T: SubCommands>() -> impl Iterator<Item = &'static str> {
    T::COMMANDS.iter().map(|c| c.name)
}

/// Picks the tree (pure): a plumbing command's name first (or `usage`
/// then a plumbing name of usage's), or `help` then one; `help plumbing`
/// asks for the plumbing's own help.
fn tree_of(rest: &[&str]) -> (Tree, Vec<String>) {
    let owned = |list: &[&str]| list.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    let top_plumbing = |word: &str| names::<PlumbingCommand>().any(|n| n == word && n != "usage");
    let usage_plumbing = |word: &str| names::<UsagePlumbingCommand>().any(|n| n == word);
    match rest {
        ["help", "plumbing", tail @ ..] => {
            let mut args: Vec<String> = owned(tail);
            args.retain(|a| !matches!(a.as_str(), "-h" | "--help" | "help"));
            args.push("--help".into());
            (Tree::Plumbing, args)
        }
        [first, ..] if top_plumbing(first) => (Tree::Plumbing, owned(rest)),
        ["help", first, ..] if top_plumbing(first) => (Tree::Plumbing, owned(rest)),
        ["usage", second, ..] if usage_plumbing(second) => (Tree::Plumbing, owned(rest)),
        ["help", "usage", third, ..] if usage_plumbing(third) => (Tree::Plumbing, owned(rest)),
        _ => (Tree::User, ccusage_spellings(rest)),
    }
}

/// `rest` with ccusage's spelling of a usage view's option read as
/// heeler's: `--timezone` is `--tz` (before a `--`, under `heeler usage`).
fn ccusage_spellings(rest: &[&str]) -> Vec<String> {
    let usage = rest.first() == Some(&"usage");
    let mut ended = false;
    rest.iter()
        .map(|&a| {
            ended |= a == "--";
            match a {
                "--timezone" if usage && !ended => "--tz".to_string(),
                _ => a.to_string(),
            }
        })
        .collect()
}

/// Parses `argv` (the program first) with argh, ending in an
/// [`EarlyExit`] instead of exiting: help as argh writes it, a usage error
/// as one line naming the command, argh's message, a suggestion when a
/// name was mistyped, and where the help is.
pub fn parse(argv: &[String]) -> Result<Args, EarlyExit> {
    let Some((program, rest)) = argv.split_first() else {
        return Err(EarlyExit::Usage(
            "heeler: no program name, argv is empty".into(),
        ));
    };
    let name = std::path::Path::new(program)
        .file_name()
        .and_then(|name| name.to_str())
        .unwrap_or(program);
    let rest: Vec<&str> = rest.iter().map(String::as_str).collect();
    let (tree, args) = tree_of(&rest);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let parsed = match tree {
        Tree::User => UserArgs::from_args(&[name], &args).map(|a| a.into_args()),
        Tree::Plumbing => PlumbingArgs::from_args(&[name], &args).map(|a| a.into_args()),
    };
    parsed.map_err(|early| match early.status {
        Ok(()) => EarlyExit::Help(early.output),
        Err(()) => EarlyExit::Usage(usage_line(name, tree, &args, &early.output)),
    })
}

/// The one line of a usage error: `heeler usage: <argh's message>`, then
/// `(did you mean daily?)` when a mistyped name is near a known one, then
/// where the help is.
fn usage_line(program: &str, tree: Tree, args: &[&str], message: &str) -> String {
    let path = command_path(program, tree, args);
    let message = message
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join(" ");
    let message = message.trim_end_matches('.');
    let help = help_of(program, tree, &path);
    let hint = message
        .strip_prefix("Unrecognized argument: ")
        .and_then(|word| suggest(word, &known_words(&help)))
        .map(|near| format!(" (did you mean {near}?)"))
        .unwrap_or_default();
    let shown = std::iter::once(program)
        .chain(path.iter().map(String::as_str))
        .collect::<Vec<_>>()
        .join(" ");
    // The plumbing's own list is `heeler help plumbing`, not `heeler --help`.
    let help_command = match (tree, path.is_empty()) {
        (Tree::Plumbing, true) => format!("{program} help plumbing"),
        _ => format!("{shown} --help"),
    };
    format!("{shown}: {message}{hint}; see {help_command}")
}

/// The subcommands named on the command line, outermost first: each word
/// that names a subcommand of the path so far (read off the help texts).
fn command_path(program: &str, tree: Tree, args: &[&str]) -> Vec<String> {
    let mut path: Vec<String> = Vec::new();
    for arg in args {
        let help = help_of(program, tree, &path);
        if commands_in(&help).any(|c| c == *arg) {
            path.push(arg.to_string());
        }
    }
    path
}

/// argh's help text of a command path ("" when it has none).
fn help_of(program: &str, tree: Tree, path: &[String]) -> String {
    let mut args: Vec<&str> = path.iter().map(String::as_str).collect();
    args.push("--help");
    let early = match tree {
        Tree::User => UserArgs::from_args(&[program], &args).err(),
        Tree::Plumbing => PlumbingArgs::from_args(&[program], &args).err(),
    };
    early.map(|e| e.output).unwrap_or_default()
}

/// The commands a help text lists (its `Commands:` section).
fn commands_in(help: &str) -> impl Iterator<Item = &str> {
    help.split("\n\n")
        .filter_map(|section| section.strip_prefix("Commands:"))
        .flat_map(str::lines)
        .filter_map(|line| line.strip_prefix("  "))
        .filter(|line| !line.starts_with(' '))
        .filter_map(|line| line.split_whitespace().next())
}

/// The names a mistyped word may have meant: the commands and the long
/// options a help text lists.
fn known_words(help: &str) -> Vec<&str> {
    let options = help
        .split("\n\n")
        .filter_map(|section| section.strip_prefix("Options:"))
        .flat_map(str::lines)
        .flat_map(|line| line.split([' ', ',']))
        .filter(|word| word.starts_with("--"));
    commands_in(help).chain(options).collect()
}

/// The known word nearest to `word`, when it is near enough to be a typo:
/// at most one edit for short words, two from six characters on (a
/// Levenshtein distance, as git and cargo suggest).
pub(crate) fn suggest<'a>(word: &str, known: &[&'a str]) -> Option<&'a str> {
    let limit = if word.chars().count() >= 6 { 2 } else { 1 };
    known
        .iter()
        .map(|k| (edit_distance(word, k), *k))
        .filter(|(d, _)| *d > 0 && *d <= limit)
        .min_by_key(|(d, _)| *d)
        .map(|(_, k)| k)
}

/// Levenshtein distance over characters (insert, delete, substitute).
pub(crate) fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let above = row[j + 1];
            row[j + 1] = if ca == *cb {
                diagonal
            } else {
                1 + diagonal.min(above).min(row[j])
            };
            diagonal = above;
        }
    }
    row[b.len()]
}

/// heeler: the herdr plugin for the Heeler app. It pairs the app, pushes
/// encrypted agent notifications and reports Claude Code and Codex usage.
#[derive(FromArgs, Debug)]
#[argh(
    help_triggers("-h", "--help", "help"),
    example = "{command_name} pair             show a Pairing Code for the Heeler app\n\
               {command_name} usage            today, 7 and 30 days of Claude Code and Codex\n\
               {command_name} usage daily -s 2026-11-01\n\
               {command_name} doctor           check this Host's setup\n\
               {command_name} link             put heeler on PATH (~/.local/bin)",
    note = "The commands herdr, sshd and the Heeler app run (accept, notify-hook, usage query, ...) are listed by `{command_name} help plumbing`."
)]
pub(crate) struct UserArgs {
    /// print the version and exit
    #[argh(switch, short = 'V')]
    pub version: bool,

    #[argh(subcommand)]
    pub command: Option<UserCommand>,
}

impl UserArgs {
    fn into_args(self) -> Args {
        let command = match self.command {
            _ if self.version => Command::Version,
            None => Command::Nothing,
            Some(UserCommand::Pair(a)) => Command::Pair(a),
            Some(UserCommand::Usage(a)) => Command::Usage(a),
            Some(UserCommand::Doctor(a)) => Command::Doctor(a),
            Some(UserCommand::Link(a)) => Command::Link(a),
        };
        Args { command }
    }
}

#[derive(FromArgs, Debug)]
#[argh(subcommand)]
pub(crate) enum UserCommand {
    Pair(PairArgs),
    Usage(UsageArgs),
    Doctor(DoctorArgs),
    Link(LinkArgs),
}

/// heeler's plumbing: the commands herdr, sshd and the Heeler app run, and
/// the wire interop tool. Their names, arguments and outputs are a contract.
#[derive(FromArgs, Debug)]
pub(crate) struct PlumbingArgs {
    #[argh(subcommand)]
    pub command: PlumbingCommand,
}

impl PlumbingArgs {
    fn into_args(self) -> Args {
        let command = match self.command {
            PlumbingCommand::Wire(a) => Command::Wire(a),
            PlumbingCommand::Accept(a) => Command::Accept(a),
            PlumbingCommand::NotifyHook(a) => Command::NotifyHook(a),
            PlumbingCommand::ActivityHook(a) => Command::ActivityHook(a),
            PlumbingCommand::HookWorker(a) => Command::HookWorker(a),
            PlumbingCommand::SidebarHook(a) => Command::SidebarHook(a),
            PlumbingCommand::PairAction(a) => Command::PairAction(a),
            PlumbingCommand::Usage(a) => Command::UsagePlumbing(a.command),
        };
        Args { command }
    }
}

#[derive(FromArgs, Debug)]
#[argh(subcommand)]
pub(crate) enum PlumbingCommand {
    Accept(AcceptArgs),
    NotifyHook(NotifyHookArgs),
    ActivityHook(ActivityHookArgs),
    HookWorker(HookWorkerArgs),
    SidebarHook(SidebarHookArgs),
    PairAction(PairActionArgs),
    Usage(UsagePlumbingArgs),
    Wire(WireArgs),
}

/// The plumbing of usage: the app's query, the background worker and the
/// herdr action that reads Claude Code's limits.
#[derive(FromArgs, Debug)]
#[argh(subcommand, name = "usage")]
pub(crate) struct UsagePlumbingArgs {
    #[argh(subcommand)]
    pub command: UsagePlumbingCommand,
}

#[derive(FromArgs, Debug)]
#[argh(subcommand)]
pub enum UsagePlumbingCommand {
    Query(UsageQueryArgs),
    Worker(UsageWorkerArgs),
    ClaudeLimits(UsageClaudeLimitsArgs),
    LiveAction(UsageLiveActionArgs),
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
#[argh(
    subcommand,
    name = "pair",
    help_triggers("-h", "--help", "help"),
    example = "{command_name}                          the popup (in herdr: the heeler.pair action)\n\
               {command_name} --no-ui                  print the code in this terminal\n\
               {command_name} --no-ui --address host.example"
)]
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
    pub(crate) no_ssh_check: bool,
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
pub struct HookWorkerArgs {
    /// serve in this process (the worker a supervising hook-worker starts
    /// again when it is killed with events queued)
    #[argh(switch)]
    pub serve: bool,
}

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
#[argh(
    subcommand,
    name = "usage",
    help_triggers("-h", "--help", "help"),
    example = "{command_name}                    the summary\n\
               {command_name} --limits           read Claude Code's and Codex's limits now\n\
               {command_name} --watch            the live screen (q closes it)\n\
               {command_name} daily -s 20261101  days since 1 November\n\
               {command_name} -j | jq .          the summary's JSON document"
)]
pub struct UsageArgs {
    /// one agent: claude, codex, … (a wrong name lists them; default: all)
    #[argh(option, short = 'a')]
    pub agent: Option<String>,
    /// only directories under this path
    #[argh(option)]
    pub dir: Option<String>,
    /// IANA time zone for days (default: the Host's zone); --timezone is
    /// the same
    #[argh(option, short = 'z')]
    pub tz: Option<String>,
    /// read Claude Code's and Codex's limits now (a few seconds), then show
    /// the summary
    #[argh(switch, short = 'l')]
    pub limits: bool,
    /// print the summary's JSON document
    #[argh(switch, short = 'j')]
    pub json: bool,
    /// print the summary as CSV
    #[argh(switch)]
    pub csv: bool,
    /// keep the summary on screen, live (the same as heeler usage live)
    #[argh(switch, short = 'w')]
    pub watch: bool,
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
            limits: self.limits,
            json: self.json,
            csv: self.csv,
            ..UsageViewFlags::default()
        }
    }
}

#[derive(FromArgs, Debug)]
#[argh(subcommand)]
pub enum UsageCommand {
    Daily(UsageDailyArgs),
    Weekly(UsageWeeklyArgs),
    Monthly(UsageMonthlyArgs),
    Session(UsageSessionArgs),
    Blocks(UsageBlocksArgs),
    Models(UsageModelsArgs),
    Dirs(UsageDirsArgs),
    Statusline(UsageStatuslineArgs),
    Live(UsageLiveArgs),
}

/// The options the views share, as given; a view without one of them
/// leaves it at its default.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct UsageViewFlags {
    pub since: Option<String>,
    pub until: Option<String>,
    pub agent: Option<String>,
    pub dir: Option<String>,
    pub breakdown: bool,
    /// Every session, not only the latest (`heeler usage session --all`).
    pub all: bool,
    pub tz: Option<String>,
    /// Read the limits now, before showing (`heeler usage --limits`).
    pub limits: bool,
    pub json: bool,
    pub csv: bool,
}

/// One argh subcommand per table view, all with the options of
/// [`UsageViewFlags`] (`--breakdown` only where a view has per-model rows),
/// short flags as ccusage's (`-s`, `-u`, `-b`, `-z`, `-j`), and examples.
macro_rules! usage_view_args {
    ($($name:ident $command:tt $doc:tt $example:tt $(breakdown $breakdown:ident)? $(all $all:ident)?;)*) => {$(
        #[doc = $doc]
        #[derive(FromArgs, Debug)]
        #[argh(subcommand, name = $command, help_triggers("-h", "--help", "help"), example = $example)]
        pub struct $name {
            /// first day shown, YYYY-MM-DD or YYYYMMDD (default: 29 days
            /// before today)
            #[argh(option, short = 's')]
            pub since: Option<String>,
            /// last day shown, YYYY-MM-DD or YYYYMMDD (default: today)
            #[argh(option, short = 'u')]
            pub until: Option<String>,
            /// one agent: claude, codex, … (a wrong name lists them; default: all)
            #[argh(option, short = 'a')]
            pub agent: Option<String>,
            /// only directories under this path
            #[argh(option)]
            pub dir: Option<String>,
            $(
            /// one line per model under each row
            #[argh(switch, short = 'b')]
            pub $breakdown: bool,
            )?
            $(
            /// list every session (the table lists the latest 50)
            #[argh(switch)]
            pub $all: bool,
            )?
            /// IANA time zone for days (default: the Host's zone);
            /// --timezone is the same
            #[argh(option, short = 'z')]
            pub tz: Option<String>,
            /// print the view's JSON document
            #[argh(switch, short = 'j')]
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
                    $(breakdown: self.$breakdown,)?
                    $(all: self.$all,)?
                    tz: self.tz.clone(),
                    json: self.json,
                    csv: self.csv,
                    ..UsageViewFlags::default()
                }
            }
        }
    )*};
}

usage_view_args! {
    UsageDailyArgs "daily" "Tokens and cost per day."
        "{command_name}                       the last 30 days\n{command_name} -s 20261101 -u 20261130 -b  November, each day's models\n{command_name} --agent codex --csv > codex.csv"
        breakdown breakdown;
    UsageWeeklyArgs "weekly" "Tokens and cost per week (weeks start on Monday)."
        "{command_name} -s 2026-09-01        weeks since September\n{command_name} -j | jq '.totals'"
        breakdown breakdown;
    UsageMonthlyArgs "monthly" "Tokens and cost per month."
        "{command_name} -s 2026-01-01 -b     each month's models this year (within the history kept)"
        breakdown breakdown;
    UsageSessionArgs "session" "Tokens and cost per session (a Claude Code session, a Codex thread), latest first."
        "{command_name} --dir ~/src           sessions under ~/src\n{command_name} -a claude -b\n{command_name} --all               every session of the 30 days, not the latest 50"
        breakdown breakdown all all;
    UsageBlocksArgs "blocks" "5-hour blocks: tokens, cost, burn rate and the active block's projection."
        "{command_name}                       the last 30 days' blocks\n{command_name} -s 20261201 -a claude";
    UsageModelsArgs "models" "Tokens and cost per model."
        "{command_name} -s 20261101           models since 1 November\n{command_name} --csv"
        breakdown breakdown;
    UsageDirsArgs "dirs" "Tokens and cost per directory."
        "{command_name} --dir ~/src -b         directories under ~/src, each one's models"
        breakdown breakdown;
}

/// One short line: today's cost, the active block's burn rate, the tightest
/// limit (for a status bar: Claude Code's statusLine, tmux, herdr).
#[derive(FromArgs, Debug)]
#[argh(
    subcommand,
    name = "statusline",
    help_triggers("-h", "--help", "help"),
    example = "{command_name}                   $1.23 today · $0.40/h · claude 5h 12%\n\
               {command_name} -a codex          Codex only"
)]
pub struct UsageStatuslineArgs {
    /// one agent: claude, codex, … (a wrong name lists them; default: all)
    #[argh(option, short = 'a')]
    pub agent: Option<String>,
    /// only directories under this path
    #[argh(option)]
    pub dir: Option<String>,
    /// IANA time zone for "today" (default: the Host's zone); --timezone
    /// is the same
    #[argh(option, short = 'z')]
    pub tz: Option<String>,
}

impl UsageStatuslineArgs {
    pub fn flags(&self) -> UsageViewFlags {
        UsageViewFlags {
            agent: self.agent.clone(),
            dir: self.dir.clone(),
            tz: self.tz.clone(),
            ..UsageViewFlags::default()
        }
    }
}

/// The live screen: today, 7 and 30 days per agent, the active 5-hour
/// block, the limits with their reset countdowns and a 30-day sparkline,
/// refreshed every few seconds (q or Esc closes it, Tab switches the table
/// between days, models and directories, r refreshes now).
#[derive(FromArgs, Debug)]
#[argh(
    subcommand,
    name = "live",
    help_triggers("-h", "--help", "help"),
    example = "{command_name}                   both agents\n\
               {command_name} --dir ~/src        directories under ~/src only"
)]
pub struct UsageLiveArgs {
    /// one agent: claude, codex, … (a wrong name lists them; default: all)
    #[argh(option, short = 'a')]
    pub agent: Option<String>,
    /// only directories under this path
    #[argh(option)]
    pub dir: Option<String>,
    /// IANA time zone for days (default: the Host's zone); --timezone is
    /// the same
    #[argh(option, short = 'z')]
    pub tz: Option<String>,
}

impl UsageLiveArgs {
    pub fn flags(&self) -> UsageViewFlags {
        UsageViewFlags {
            agent: self.agent.clone(),
            dir: self.dir.clone(),
            tz: self.tz.clone(),
            ..UsageViewFlags::default()
        }
    }
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
// argh reads these fields only to print the help: `usage query` parses its
// own arguments (`usage::query`), so nothing reads them.
#[allow(dead_code)]
pub(crate) struct UsageQueryOptions {
    /// IANA time zone for days (default: the Host's zone)
    #[argh(option)]
    pub tz: Option<String>,
    /// on or off (default off): include Claude Code plan limits
    #[argh(option)]
    pub(crate) claude_limits: Option<String>,
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

/// The `usage` action: ask herdr to open the live usage popup (exit
/// status = the outcome).
#[derive(FromArgs, Debug)]
#[argh(subcommand, name = "live-action")]
pub struct UsageLiveActionArgs {}

/// The `pair` action: ask herdr to open the pairing popup (exit status =
/// the outcome).
#[derive(FromArgs, Debug)]
#[argh(subcommand, name = "pair-action")]
pub struct PairActionArgs {}

/// Check this Host's setup for pairing and notifications; each problem comes
/// with a one-line fix. Exits 0 when nothing fails.
#[derive(FromArgs, Debug)]
#[argh(
    subcommand,
    name = "doctor",
    help_triggers("-h", "--help", "help"),
    example = "{command_name}              every check, with a fix for each problem\n\
               {command_name} --json | jq '.checks[] | select(.status != \"pass\")'"
)]
pub struct DoctorArgs {
    /// print the report as JSON
    #[argh(switch, short = 'j')]
    pub json: bool,
    /// also check that the Push Relay is reachable (network access)
    #[argh(switch)]
    pub network: bool,
}

/// Put heeler on PATH: link ~/.local/bin/heeler to this binary (the
/// installed plugin's, which updates replace in place) and say whether
/// ~/.local/bin is on PATH.
#[derive(FromArgs, Debug)]
#[argh(
    subcommand,
    name = "link",
    help_triggers("-h", "--help", "help"),
    example = "~/.config/herdr/plugins/github/heeler-*/bin/heeler link"
)]
pub struct LinkArgs {}

#[cfg(test)]
mod tests {
    use super::*;

    fn argv(args: &[&str]) -> Vec<String> {
        args.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn help_and_usage_errors_end_parsing_with_one_line() {
        assert!(matches!(
            parse(&argv(&["/x/bin/heeler", "--help"])),
            Err(EarlyExit::Help(text)) if text.starts_with("Usage: heeler")
        ));
        assert_eq!(
            parse(&argv(&["/x/bin/heeler", "--bogus"])).err(),
            Some(EarlyExit::Usage(
                "heeler: Unrecognized argument: --bogus; see heeler --help".into()
            ))
        );
        assert!(matches!(parse(&argv(&[])), Err(EarlyExit::Usage(_))));
        let args = parse(&argv(&["heeler", "pair", "--no-ui"])).unwrap();
        assert!(matches!(args.command, Command::Pair(p) if p.no_ui));
        assert!(matches!(
            parse(&argv(&["heeler"])).unwrap().command,
            Command::Nothing
        ));
    }

    #[test]
    fn plumbing_is_parsed_by_its_own_tree() {
        for (line, plumbing) in [
            (&["accept"][..], true),
            (&["usage", "query", "--future", "x"], true),
            (&["usage", "worker"], true),
            (&["usage", "claude-limits"], true),
            (&["wire", "kid", "--key", "k"], true),
            (&["help", "accept"], true),
            (&["help", "plumbing"], true),
            (&["usage"], false),
            (&["usage", "daily"], false),
            (&["usage", "--dir", "query"], false),
            (&["help", "usage"], false),
            (&["pair"], false),
        ] {
            assert_eq!(tree_of(line).0 == Tree::Plumbing, plumbing, "{line:?}");
        }
        // ccusage's `--timezone` is `--tz` in every usage view; a value
        // after `--`, or another command's argument, is left as it is.
        for line in [
            &["heeler", "usage", "--timezone", "Asia/Tokyo"][..],
            &["heeler", "usage", "daily", "--timezone", "Asia/Tokyo"],
            &["heeler", "usage", "statusline", "--timezone", "Asia/Tokyo"],
        ] {
            let tz = match parse(&argv(line)).unwrap().command {
                Command::Usage(a) => match a.command {
                    None => a.flags().tz,
                    Some(UsageCommand::Daily(d)) => d.flags().tz,
                    Some(UsageCommand::Statusline(s)) => s.flags().tz,
                    Some(other) => panic!("{other:?}"),
                },
                other => panic!("{other:?}"),
            };
            assert_eq!(tz.as_deref(), Some("Asia/Tokyo"), "{line:?}");
        }
        assert_eq!(
            ccusage_spellings(&["usage", "--", "--timezone"]),
            ["usage", "--", "--timezone"]
        );
        assert_eq!(
            ccusage_spellings(&["pair", "--timezone"]),
            ["pair", "--timezone"]
        );
        let args = parse(&argv(&["heeler", "usage", "query", "--tz", "UTC"])).unwrap();
        assert!(matches!(
            args.command,
            Command::UsagePlumbing(UsagePlumbingCommand::Query(q)) if q.args == ["--tz", "UTC"]
        ));
    }

    #[test]
    fn edit_distance_matches_hand_counted_cases() {
        for (a, b, d) in [
            ("", "", 0),
            ("", "abc", 3),
            ("dayly", "daily", 1),
            ("kitten", "sitting", 3),
            ("flaw", "lawn", 2),
            ("--jsn", "--json", 1),
            ("weakly", "weekly", 1),
            ("ab", "ba", 2),
        ] {
            assert_eq!(edit_distance(a, b), d, "{a} {b}");
            assert_eq!(edit_distance(b, a), d, "{b} {a}");
        }
    }

    #[test]
    fn a_suggestion_is_the_nearest_known_word_within_reach() {
        let known = ["daily", "weekly", "monthly", "dirs", "--json", "--since"];
        assert_eq!(suggest("dayly", &known), Some("daily"));
        assert_eq!(suggest("montly", &known), Some("monthly"));
        assert_eq!(suggest("--sinse", &known), Some("--since"));
        // Too far, or exact (nothing to suggest).
        assert_eq!(suggest("xyz", &known), None);
        assert_eq!(suggest("daily", &known), None);
        assert_eq!(suggest("dxyz", &known), None);
    }
}
