//! `usage.toml`, the one Usage setting a person may change: how many days
//! of history the cache keeps for the views (`retention_days`).
//!
//! The app's query always answers 30 days; the views (`heeler usage
//! daily --since …`) can look further back when the cache keeps more. The
//! background worker reads this file (it decides what the cache holds) and
//! so do the views (to refuse a `--since` older than what is kept, rather
//! than print a silently empty table). The file lives in the plugin's
//! config dir (`base::dirs`), beside `pair.json` and `notify.json`.
//!
//! Invariants: a missing file is the default; a file that is not TOML, an
//! unknown key or a value out of range is an error naming the file, the
//! key and the range (the views print it; the worker keeps the default, so
//! the app's query never fails on it).

use std::path::PathBuf;

use toml::de::{DeTable, DeValue};

use crate::base::dirs::{self, NoHome};

/// Days kept when `usage.toml` does not say.
pub const DEFAULT_RETENTION_DAYS: i64 = 90;
/// The app's query needs 30 days, so the cache never keeps fewer.
pub(crate) const MIN_RETENTION_DAYS: i64 = 30;
/// A year: what the longest-reaching tools people compare us with show.
pub(crate) const MAX_RETENTION_DAYS: i64 = 365;
/// A config file longer than this is not ours.
const MAX_BYTES: u64 = 64 * 1024;

/// The validated settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Config {
    /// Days of history kept for the views, today included.
    pub retention_days: i64,
}

impl Default for Config {
    fn default() -> Config {
        Config {
            retention_days: DEFAULT_RETENTION_DAYS,
        }
    }
}

/// Why `usage.toml` cannot be used: one sentence.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError(pub String);

impl std::fmt::Display for ConfigError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ConfigError {}

/// `usage.toml` in the plugin's config dir.
pub fn path(env: &dirs::Env) -> Result<PathBuf, NoHome> {
    Ok(env.plugin_config_dir()?.join("usage.toml"))
}

/// Parses the text of `usage.toml`.
pub fn parse(text: &str) -> Result<Config, ConfigError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let document = DeTable::parse(text)
        .map_err(|e| ConfigError(format!("usage.toml is not TOML: {}", e.message())))?;
    let mut config = Config::default();
    for (key, value) in document.get_ref() {
        match key.get_ref().as_ref() {
            "retention_days" => config.retention_days = retention(value.get_ref())?,
            other => {
                return Err(ConfigError(format!(
                    "usage.toml: unknown key {other:?} (the one key is retention_days)"
                )));
            }
        }
    }
    Ok(config)
}

fn retention(value: &DeValue<'_>) -> Result<i64, ConfigError> {
    let range = || {
        format!(
            "usage.toml: retention_days must be a whole number of days from {MIN_RETENTION_DAYS} to {MAX_RETENTION_DAYS}"
        )
    };
    let DeValue::Integer(n) = value else {
        return Err(ConfigError(range()));
    };
    match i64::from_str_radix(n.as_str(), n.radix()) {
        Ok(days) if (MIN_RETENTION_DAYS..=MAX_RETENTION_DAYS).contains(&days) => Ok(days),
        Ok(days) => Err(ConfigError(format!("{}, not {days}", range()))),
        Err(_) => Err(ConfigError(range())),
    }
}

/// The settings in `env`'s config dir: the default when there is no file
/// (or no home to look in).
pub fn load(env: &dirs::Env) -> Result<Config, ConfigError> {
    let Ok(path) = path(env) else {
        return Ok(Config::default());
    };
    match crate::base::state_file::read(&path, MAX_BYTES) {
        Ok((bytes, _)) => match String::from_utf8(bytes) {
            Ok(text) => parse(&text),
            Err(_) => Err(ConfigError("usage.toml is not UTF-8 text".into())),
        },
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Config::default()),
        Err(e) => Err(ConfigError(format!("usage.toml cannot be read: {e}"))),
    }
}

/// [`load`] in this process's environment.
pub fn from_env() -> Result<Config, ConfigError> {
    load(&dirs::Env::process())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn days(text: &str) -> Result<i64, ConfigError> {
        parse(text).map(|c| c.retention_days)
    }

    #[test]
    fn retention_defaults_to_90_days_and_takes_30_to_365() {
        assert_eq!(days(""), Ok(90));
        assert_eq!(days("# nothing set\n"), Ok(90));
        assert_eq!(days("retention_days = 30\n"), Ok(30));
        assert_eq!(days("retention_days = 365"), Ok(365));
        assert_eq!(days("\u{feff}retention_days = 0x5a"), Ok(90));
    }

    #[test]
    fn out_of_range_or_unknown_settings_are_clear_errors() {
        let range = "usage.toml: retention_days must be a whole number of days from 30 to 365";
        assert_eq!(
            days("retention_days = 366"),
            Err(ConfigError(format!("{range}, not 366")))
        );
        assert_eq!(
            days("retention_days = 29"),
            Err(ConfigError(format!("{range}, not 29")))
        );
        assert_eq!(
            days("retention_days = -1"),
            Err(ConfigError(format!("{range}, not -1")))
        );
        for bad in [
            "retention_days = \"90\"",
            "retention_days = 90.0",
            "retention_days = 99999999999999999999",
        ] {
            assert_eq!(days(bad), Err(ConfigError(range.into())), "{bad}");
        }
        assert_eq!(
            days("retention = 90"),
            Err(ConfigError(
                "usage.toml: unknown key \"retention\" (the one key is retention_days)".into()
            ))
        );
        assert!(
            days("retention_days = ")
                .unwrap_err()
                .0
                .starts_with("usage.toml is not TOML: ")
        );
    }

    #[test]
    fn a_missing_file_is_the_default_and_a_present_one_is_read() {
        let dir = crate::base::scratch::ScratchDir::new("usage-config");
        let config_dir = dir.0.clone();
        let var = move |name: &str| {
            (name == "HERDR_PLUGIN_CONFIG_DIR").then(|| config_dir.clone().into_os_string())
        };
        let env = dirs::Env {
            var: &var,
            passwd_home: &|| None,
        };
        assert_eq!(load(&env), Ok(Config::default()));
        std::fs::write(dir.0.join("usage.toml"), "retention_days = 180\n").unwrap();
        assert_eq!(
            load(&env),
            Ok(Config {
                retention_days: 180
            })
        );
    }
}
