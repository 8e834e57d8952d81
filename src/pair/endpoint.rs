//! The herdr endpoint of a Pairing Code v2: which herdr the phone must talk
//! to when this herdr lives outside `~/.config/herdr`, and the launcher that
//! runs it.
//!
//! A v1 code would pair the phone with the user's own herdr instead, so when
//! any rule fails the popup offers no code at all and says why. `plan`
//! decides from the environment (pure); `prepare` writes the launcher under
//! a staging name, runs it the way the app does from a minimal environment,
//! and only moves it into place when it answers correctly.

use std::fs;
use std::io::Read;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use crate::base::atomic_file;
use crate::herdr::session;
use crate::wire::pairing_code::{self, Endpoint, MAX_SOCK_BYTES, is_safe_absolute_path};

/// How long the launcher's test run may take.
pub(crate) const TEST_TIMEOUT: Duration = Duration::from_secs(5);
/// The generated launcher's name inside the plugin config dir.
pub(crate) const LAUNCHER_NAME: &str = "launcher";
const LAUNCHER_MODE: u32 = 0o700;
const NO_CODE: &str = "No Pairing Code offered.";

/// The environment the decision depends on.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HerdrEnv {
    pub home: PathBuf,
    pub plugin_id: String,
    /// `HERDR_PLUGIN_CONFIG_DIR` (unset outside herdr).
    pub config_dir: Option<PathBuf>,
    /// `HERDR_PLUGIN_STATE_DIR`.
    pub state_dir: Option<PathBuf>,
    /// `HERDR_SOCKET_PATH`.
    pub socket_path: Option<String>,
    /// `HERDR_BIN_PATH`.
    pub(crate) bin_path: Option<String>,
}

impl HerdrEnv {
    /// Reads the environment of this process.
    pub(crate) fn from_process(home: PathBuf, plugin_id: &str) -> HerdrEnv {
        let var = |name| std::env::var_os(name).filter(|v| !v.is_empty());
        HerdrEnv {
            home,
            plugin_id: plugin_id.to_owned(),
            config_dir: var("HERDR_PLUGIN_CONFIG_DIR").map(PathBuf::from),
            state_dir: var("HERDR_PLUGIN_STATE_DIR").map(PathBuf::from),
            socket_path: var("HERDR_SOCKET_PATH").map(|v| v.to_string_lossy().into_owned()),
            bin_path: var("HERDR_BIN_PATH").map(|v| v.to_string_lossy().into_owned()),
        }
    }

    fn default_config_dir(&self) -> PathBuf {
        self.home
            .join(".config/herdr/plugins/config")
            .join(&self.plugin_id)
    }

    fn default_state_dir(&self) -> PathBuf {
        self.home
            .join(".local/state/herdr/plugins")
            .join(&self.plugin_id)
    }
}

/// Where the launcher comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Launcher {
    /// pair.json `launcher`: tested, never written.
    Configured(String),
    /// Written to `path`, execing `herdr_bin`.
    Generated { path: PathBuf, herdr_bin: String },
}

impl Launcher {
    pub fn path(&self) -> String {
        match self {
            Launcher::Configured(path) => path.clone(),
            Launcher::Generated { path, .. } => path.to_string_lossy().into_owned(),
        }
    }
}

/// What kind of code this herdr gets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Plan {
    /// The user's own herdr: a v1 code.
    V1,
    /// A v1 code, with a warning for the checklist.
    V1Warning(String),
    /// A v2 code once the launcher passes its test.
    V2 {
        sock: String,
        config_dir: PathBuf,
        launcher: Launcher,
    },
    /// No code at all; the reason is shown in the checklist.
    Refused(String),
}

fn same_path(a: &Path, b: &Path) -> bool {
    let trim = |p: &Path| p.to_string_lossy().trim_end_matches('/').to_owned();
    trim(a) == trim(b)
}

/// Why a socket path breaks a v2 rule, if it does.
pub(crate) fn socket_problem(sock: &str) -> Option<&'static str> {
    if !is_safe_absolute_path(sock) {
        Some("it is not an absolute path without ', \\ or control characters")
    } else if !(sock.ends_with("/herdr/herdr.sock") || session::named_session_of(sock).is_some()) {
        Some("it does not end in /herdr/herdr.sock or /herdr/sessions/<name>/herdr.sock")
    } else if sock.len() > MAX_SOCK_BYTES {
        Some("it is longer than 96 bytes")
    } else {
        None
    }
}

/// Decides v1, v2 or no code from the environment and pair.json's
/// `launcher`.
pub fn plan(env: &HerdrEnv, configured_launcher: Option<&str>) -> Plan {
    let Some(config_dir) = &env.config_dir else {
        return Plan::V1;
    };
    if same_path(config_dir, &env.default_config_dir()) {
        let home_config = env.home.join(".config/herdr");
        let own_socket = env.socket_path.as_deref().is_none_or(|sock| {
            let default = home_config.join("herdr.sock");
            let sessions = home_config.join("sessions");
            same_path(Path::new(sock), &default)
                || (session::named_session_of(sock).is_some()
                    && Path::new(sock)
                        .parent()
                        .and_then(Path::parent)
                        .is_some_and(|p| same_path(p, &sessions)))
        });
        return if own_socket {
            Plan::V1
        } else {
            Plan::V1Warning(format!(
                "This herdr listens on {} but shares ~/.config/herdr: the code pairs the phone with your own herdr, and notifications.json is shared.",
                env.socket_path.as_deref().unwrap_or_default()
            ))
        };
    }
    let shared_state = env
        .state_dir
        .as_deref()
        .is_none_or(|dir| same_path(dir, &env.default_state_dir()));
    if shared_state {
        return Plan::Refused(format!(
            "This herdr keeps its config in {} but shares ~/.local/state/herdr; start it with its own XDG_STATE_HOME. {NO_CODE}",
            config_dir.display()
        ));
    }
    let Some(sock) = env.socket_path.as_deref() else {
        return Plan::Refused(format!(
            "HERDR_SOCKET_PATH is not set, so the code cannot name this herdr. {NO_CODE}"
        ));
    };
    if let Some(problem) = socket_problem(sock) {
        return Plan::Refused(format!(
            "The herdr socket {sock} cannot go in a Pairing Code v2: {problem}. {NO_CODE}"
        ));
    }
    let launcher = match configured_launcher {
        Some(path) => Launcher::Configured(path.to_owned()),
        None => {
            let Some(herdr_bin) = env.bin_path.clone() else {
                return Plan::Refused(format!(
                    "HERDR_BIN_PATH is not set, so no launcher can be written. {NO_CODE}"
                ));
            };
            let path = config_dir.join(LAUNCHER_NAME);
            if !is_safe_absolute_path(&path.to_string_lossy()) {
                return Plan::Refused(format!(
                    "The launcher path {} is not an absolute path without ', \\ or control characters. {NO_CODE}",
                    path.display()
                ));
            }
            Launcher::Generated { path, herdr_bin }
        }
    };
    Plan::V2 {
        sock: sock.to_owned(),
        config_dir: config_dir.clone(),
        launcher,
    }
}

/// The variables a generated launcher exports: `PATH`, the four XDG homes
/// when set, and every `HERDR_*` except the per-process ones and an
/// inherited client socket. Names that are not shell identifiers are
/// skipped.
pub(crate) fn exported_vars(
    vars: impl IntoIterator<Item = (String, String)>,
) -> Vec<(String, String)> {
    const XDG: [&str; 4] = [
        "XDG_CONFIG_HOME",
        "XDG_STATE_HOME",
        "XDG_DATA_HOME",
        "XDG_CACHE_HOME",
    ];
    const DROPPED: [&str; 7] = [
        "HERDR_SOCKET_PATH",
        "HERDR_CLIENT_SOCKET_PATH",
        "HERDR_BIN_PATH",
        "HERDR_ENV",
        "HERDR_SESSION",
        "HERDR_WORKSPACE_ID",
        "HERDR_TAB_ID",
    ];
    let is_identifier = |name: &str| {
        name.bytes()
            .next()
            .is_some_and(|b| b.is_ascii_alphabetic() || b == b'_')
            && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
    };
    let mut kept: Vec<(String, String)> = vars
        .into_iter()
        .filter(|(name, _)| is_identifier(name))
        .filter(|(name, _)| {
            name == "PATH"
                || XDG.contains(&name.as_str())
                || (name.starts_with("HERDR_")
                    && !DROPPED.contains(&name.as_str())
                    && !name.starts_with("HERDR_PLUGIN_")
                    && !name.starts_with("HERDR_PANE"))
        })
        .collect();
    kept.sort();
    kept
}

/// `text` single-quoted for a POSIX shell.
pub(crate) fn shell_quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', "'\\''"))
}

/// The generated launcher script: exports, then exec herdr with the
/// arguments it was given. It prints nothing of its own.
pub(crate) fn launcher_script(herdr_bin: &str, vars: &[(String, String)]) -> String {
    let mut script = String::from(
        "#!/bin/sh\n# Written by heeler's pairing popup: runs this herdr for the Heeler app.\n# Opening the popup again rewrites it.\n",
    );
    for (name, value) in vars {
        script.push_str(&format!("export {name}={}\n", shell_quote(value)));
    }
    script.push_str(&format!("exec {} \"$@\"\n", shell_quote(herdr_bin)));
    script
}

/// Whether users other than the owner may write `dir`.
fn writable_by_others(dir: &Path) -> std::io::Result<bool> {
    Ok(fs::metadata(dir)?.permissions().mode() & 0o022 != 0)
}

/// Makes the plan's launcher real and tested; the endpoint for the code, or
/// why there is none.
pub fn prepare(
    sock: &str,
    config_dir: &Path,
    launcher: &Launcher,
    plugin_id: &str,
    home: &Path,
) -> Result<Endpoint, String> {
    let endpoint = |herdr: String| Endpoint {
        sock: sock.to_owned(),
        herdr,
    };
    match launcher {
        Launcher::Configured(path) => {
            test_launcher(Path::new(path), sock, plugin_id, config_dir, home).map_err(|why| {
                format!("The launcher {path} failed its test run: {why}. {NO_CODE}")
            })?;
            let endpoint = endpoint(path.clone());
            pairing_code::validate_endpoint(&endpoint).map_err(|_| {
                format!("The launcher {path} breaks a Pairing Code v2 rule. {NO_CODE}")
            })?;
            Ok(endpoint)
        }
        Launcher::Generated { path, herdr_bin } => {
            match writable_by_others(config_dir) {
                Ok(false) => {}
                Ok(true) => {
                    return Err(format!(
                        "{} is writable by other users; refusing to write a launcher there. {NO_CODE}",
                        config_dir.display()
                    ));
                }
                Err(error) => {
                    return Err(format!(
                        "Could not inspect {}: {error}. {NO_CODE}",
                        config_dir.display()
                    ));
                }
            }
            let vars = exported_vars(std::env::vars());
            let script = launcher_script(herdr_bin, &vars);
            let staging =
                config_dir.join(format!("{LAUNCHER_NAME}.staging-{}", std::process::id()));
            let shown = path.display();
            atomic_file::write(&staging, script.as_bytes(), LAUNCHER_MODE).map_err(|error| {
                format!("Could not write the launcher {shown}: {error}. {NO_CODE}")
            })?;
            if let Err(why) = test_launcher(&staging, sock, plugin_id, config_dir, home) {
                let _ = fs::remove_file(&staging);
                return Err(format!(
                    "The launcher {shown} failed its test run: {why}. {NO_CODE}"
                ));
            }
            if let Err(error) = fs::rename(&staging, path) {
                let _ = fs::remove_file(&staging);
                return Err(format!(
                    "Could not move the launcher into {shown}: {error}. {NO_CODE}"
                ));
            }
            Ok(endpoint(path.to_string_lossy().into_owned()))
        }
    }
}

/// Runs `plugin config-dir <id>` through the launcher as the app does, from a
/// minimal environment: it must print `config_dir` and nothing on stderr
/// within [`TEST_TIMEOUT`].
pub fn test_launcher(
    launcher: &Path,
    sock: &str,
    plugin_id: &str,
    config_dir: &Path,
    home: &Path,
) -> Result<(), String> {
    let mut command = Command::new("/bin/sh");
    command
        .env_clear()
        .env("LC_ALL", "C")
        .env("PATH", "/usr/bin:/bin:/usr/sbin:/sbin")
        .env("HOME", home)
        .arg("-c")
        .arg("export HERDR_SOCKET_PATH=\"$2\"; exec \"$1\" plugin config-dir \"$3\"")
        .arg("herdr")
        .arg(launcher)
        .arg(sock)
        .arg(plugin_id)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for name in ["USER", "LOGNAME"] {
        if let Some(value) = std::env::var_os(name) {
            command.env(name, value);
        }
    }
    let (status, stdout, stderr) = run_bounded(command)?;
    launcher_verdict(status, &stdout, &stderr, config_dir)
}

/// Runs `command` for up to [`TEST_TIMEOUT`] (killed after it), with the
/// first 64 KiB of its stdout and stderr.
fn run_bounded(mut command: Command) -> Result<(ExitStatus, Vec<u8>, Vec<u8>), String> {
    let mut child = command
        .spawn()
        .map_err(|error| format!("could not run /bin/sh ({error})"))?;
    let collect = |pipe: Option<Box<dyn Read + Send>>| {
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            if let Some(pipe) = pipe {
                let _ = pipe.take(64 * 1024).read_to_end(&mut bytes);
            }
            bytes
        })
    };
    let stdout = collect(
        child
            .stdout
            .take()
            .map(|p| Box::new(p) as Box<dyn Read + Send>),
    );
    let stderr = collect(
        child
            .stderr
            .take()
            .map(|p| Box::new(p) as Box<dyn Read + Send>),
    );
    let deadline = Instant::now() + TEST_TIMEOUT;
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(10)),
            Ok(None) => {
                let _ = child.kill();
                let _ = child.wait();
                return Err("no answer within 5 s".to_owned());
            }
            Err(error) => return Err(format!("could not wait for it ({error})")),
        }
    };
    let stdout = stdout.join().unwrap_or_default();
    let stderr = stderr.join().unwrap_or_default();
    Ok((status, stdout, stderr))
}

/// Whether the launcher's run answered as the app needs: success, nothing
/// on stderr, and `config_dir` printed (pure).
fn launcher_verdict(
    status: ExitStatus,
    stdout: &[u8],
    stderr: &[u8],
    config_dir: &Path,
) -> Result<(), String> {
    if !status.success() {
        return Err(match status.code() {
            Some(code) => format!("exit status {code}"),
            None => "killed by a signal".to_owned(),
        });
    }
    if !stderr.is_empty() {
        let text = String::from_utf8_lossy(stderr);
        let first = text.lines().next().unwrap_or_default();
        return Err(format!("it wrote to stderr ({first})"));
    }
    let printed = String::from_utf8_lossy(stdout);
    let printed = printed.strip_suffix('\n').unwrap_or(&printed);
    if !same_path(Path::new(printed), config_dir) {
        return Err(format!(
            "it printed {printed:?} instead of {}",
            config_dir.display()
        ));
    }
    Ok(())
}

/// The checklist line for a working endpoint.
pub(crate) fn endpoint_line(endpoint: &Endpoint) -> String {
    format!("Endpoint {} via {}", endpoint.sock, endpoint.herdr)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::process::ExitStatusExt;

    #[test]
    fn the_launcher_passes_only_when_it_exits_0_quietly_with_the_config_dir() {
        // A wait status: exit code in the high byte, a signal in the low bits.
        let (ok, exit_3, killed) = (
            ExitStatus::from_raw(0),
            ExitStatus::from_raw(3 << 8),
            ExitStatus::from_raw(9),
        );
        let dir = Path::new("/home/u/.config/herdr/plugins/heeler");
        let printed = b"/home/u/.config/herdr/plugins/heeler\n";
        assert_eq!(launcher_verdict(ok, printed, b"", dir), Ok(()));
        assert_eq!(
            launcher_verdict(exit_3, printed, b"", dir),
            Err("exit status 3".to_owned())
        );
        assert_eq!(
            launcher_verdict(killed, b"", b"", dir),
            Err("killed by a signal".to_owned())
        );
        assert_eq!(
            launcher_verdict(ok, printed, b"warning: old herdr\nmore\n", dir),
            Err("it wrote to stderr (warning: old herdr)".to_owned())
        );
        assert_eq!(
            launcher_verdict(ok, b"/elsewhere\n", b"", dir),
            Err(format!(
                "it printed \"/elsewhere\" instead of {}",
                dir.display()
            ))
        );
    }

    fn env() -> HerdrEnv {
        HerdrEnv {
            home: "/home/ada".into(),
            plugin_id: "heeler".into(),
            config_dir: Some("/home/ada/.config/herdr/plugins/config/heeler".into()),
            state_dir: Some("/home/ada/.local/state/herdr/plugins/heeler".into()),
            socket_path: Some("/home/ada/.config/herdr/herdr.sock".into()),
            bin_path: Some("/usr/bin/herdr".into()),
        }
    }

    fn outside() -> HerdrEnv {
        HerdrEnv {
            config_dir: Some("/srv/app/config/herdr/plugins/config/heeler".into()),
            state_dir: Some("/srv/app/state/herdr/plugins/heeler".into()),
            socket_path: Some("/srv/app/config/herdr/herdr.sock".into()),
            ..env()
        }
    }

    #[test]
    fn own_herdr_gets_v1() {
        assert_eq!(plan(&env(), None), Plan::V1);
        let named = HerdrEnv {
            socket_path: Some("/home/ada/.config/herdr/sessions/work/herdr.sock".into()),
            ..env()
        };
        assert_eq!(plan(&named, None), Plan::V1);
        let outside_herdr = HerdrEnv {
            config_dir: None,
            ..env()
        };
        assert_eq!(plan(&outside_herdr, None), Plan::V1);
    }

    #[test]
    fn shared_config_on_another_socket_warns() {
        let other = HerdrEnv {
            socket_path: Some("/tmp/x/herdr/herdr.sock".into()),
            ..env()
        };
        match plan(&other, None) {
            Plan::V1Warning(text) => assert!(text.contains("/tmp/x/herdr/herdr.sock")),
            wrong => panic!("{wrong:?}"),
        }
    }

    #[test]
    fn outside_config_gets_v2_with_a_generated_launcher() {
        assert_eq!(
            plan(&outside(), None),
            Plan::V2 {
                sock: "/srv/app/config/herdr/herdr.sock".into(),
                config_dir: "/srv/app/config/herdr/plugins/config/heeler".into(),
                launcher: Launcher::Generated {
                    path: "/srv/app/config/herdr/plugins/config/heeler/launcher".into(),
                    herdr_bin: "/usr/bin/herdr".into(),
                },
            }
        );
        match plan(&outside(), Some("/opt/launch")) {
            Plan::V2 { launcher, .. } => {
                assert_eq!(launcher, Launcher::Configured("/opt/launch".into()))
            }
            wrong => panic!("{wrong:?}"),
        }
    }

    #[test]
    fn refusals_say_why() {
        let refused = |env: HerdrEnv| match plan(&env, None) {
            Plan::Refused(text) => {
                assert!(text.ends_with("No Pairing Code offered."), "{text}");
                text
            }
            wrong => panic!("{wrong:?}"),
        };
        let shared_state = refused(HerdrEnv {
            state_dir: Some("/home/ada/.local/state/herdr/plugins/heeler/".into()),
            ..outside()
        });
        assert!(shared_state.contains("XDG_STATE_HOME"));
        refused(HerdrEnv {
            state_dir: None,
            ..outside()
        });
        assert!(
            refused(HerdrEnv {
                socket_path: None,
                ..outside()
            })
            .contains("HERDR_SOCKET_PATH")
        );
        assert!(
            refused(HerdrEnv {
                socket_path: Some("/srv/app/other.sock".into()),
                ..outside()
            })
            .contains("/herdr/herdr.sock")
        );
        assert!(
            refused(HerdrEnv {
                socket_path: Some(format!("/{}/herdr/herdr.sock", "s".repeat(90))),
                ..outside()
            })
            .contains("96 bytes")
        );
        assert!(
            refused(HerdrEnv {
                bin_path: None,
                ..outside()
            })
            .contains("HERDR_BIN_PATH")
        );
        assert!(
            refused(HerdrEnv {
                config_dir: Some("/srv/it's/config".into()),
                ..outside()
            })
            .contains("launcher path")
        );
    }

    #[test]
    fn exported_variables() {
        let vars = [
            ("PATH", "/usr/bin"),
            ("HOME", "/home/ada"),
            ("XDG_CONFIG_HOME", "/srv/c"),
            ("XDG_RUNTIME_DIR", "/run/u"),
            ("HERDR_CONFIG_PATH", "/srv/c/h.toml"),
            ("HERDR_SOCKET_PATH", "x"),
            ("HERDR_CLIENT_SOCKET_PATH", "x"),
            ("HERDR_BIN_PATH", "x"),
            ("HERDR_ENV", "1"),
            ("HERDR_SESSION", "w"),
            ("HERDR_PLUGIN_ID", "heeler"),
            ("HERDR_WORKSPACE_ID", "w1"),
            ("HERDR_TAB_ID", "t"),
            ("HERDR_PANE_ID", "p"),
            ("HERDR_PANEL", "p"),
            ("HERDR_X-Y", "bad name"),
        ]
        .map(|(k, v)| (k.to_owned(), v.to_owned()));
        let names: Vec<String> = exported_vars(vars).into_iter().map(|(k, _)| k).collect();
        assert_eq!(names, vec!["HERDR_CONFIG_PATH", "PATH", "XDG_CONFIG_HOME"]);
    }

    #[test]
    fn script_quotes_everything() {
        let script = launcher_script("/opt/her'dr", &[("PATH".into(), "/a b:/c'd".into())]);
        assert!(script.starts_with("#!/bin/sh\n"));
        assert!(script.contains("export PATH='/a b:/c'\\''d'\n"));
        assert!(script.ends_with("exec '/opt/her'\\''dr' \"$@\"\n"));
    }

    #[test]
    fn socket_rules() {
        assert_eq!(socket_problem("/a/herdr/herdr.sock"), None);
        assert_eq!(socket_problem("/a/herdr/sessions/w/herdr.sock"), None);
        assert!(socket_problem("a/herdr/herdr.sock").is_some());
        assert!(socket_problem("/a/b.sock").is_some());
    }
}
