//! `cargo xtask pricing`: regenerate `pricing.json` offline from saved
//! source bytes (LiteLLM's `model_prices_and_context_window_backup.json`
//! from the `litellm` PyPI wheel, or models.dev's `api.json`) and the
//! vendor prices the source lacks (`pricing-overrides.json`, beside the
//! table).
//!
//! This file reads the flags and the files and writes the table; the
//! conversion and the merge are [`generate`], which does no I/O.

mod generate;

use std::path::PathBuf;

use heeler::base::json;
use heeler::usage::pricing::SourceMeta;

/// The vendor prices the source lacks, one row per fact with its source
/// note (next to `pricing.json` in the repository root).
pub const OVERRIDES: &str = "pricing-overrides.json";

pub fn run(args: &[String]) -> Result<(), String> {
    let input = crate::flag(args, "--input").ok_or("--input FILE is required")?;
    let date = crate::flag(args, "--date").ok_or("--date YYYY-MM-DD is required")?;
    if heeler::usage::time::parse_date(date).is_none() {
        return Err(format!("--date {date}: not YYYY-MM-DD"));
    }
    let source = crate::flag(args, "--source").unwrap_or("litellm");
    let version = crate::flag(args, "--version").unwrap_or("unknown");
    let bytes = std::fs::read(input).map_err(|e| format!("{input}: {e}"))?;
    let text = std::str::from_utf8(&bytes).map_err(|_| format!("{input}: not UTF-8"))?;
    let value = json::parse(text).map_err(|_| format!("{input}: not JSON"))?;
    let (source_url, license) = match source {
        "litellm" => (
            format!("https://pypi.org/project/litellm/{version}/"),
            "MIT",
        ),
        "models-dev" => ("https://models.dev/api.json".to_string(), "MIT"),
        other => return Err(format!("--source {other}: expected litellm or models-dev")),
    };
    let meta = SourceMeta {
        source: source.to_string(),
        version: version.to_string(),
        date: date.to_string(),
        source_url,
        source_sha256: generate::sha256_hex(&bytes),
        license: license.to_string(),
    };
    let table = match source {
        "litellm" => generate::from_litellm(&value, &meta),
        _ => generate::from_models_dev(&value, &meta),
    }
    .map_err(|e| format!("{input}: {e}"))?;
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let overrides_path = root.join(OVERRIDES);
    let overrides_bytes =
        std::fs::read(&overrides_path).map_err(|e| format!("{}: {e}", overrides_path.display()))?;
    let overrides = std::str::from_utf8(&overrides_bytes)
        .ok()
        .and_then(|t| json::parse(t).ok())
        .ok_or_else(|| format!("{}: not JSON", overrides_path.display()))?;
    let table =
        generate::apply_overrides(&table, &overrides, &generate::sha256_hex(&overrides_bytes))?;
    let out = root.join("pricing.json");
    let mut text = pretty(&table);
    text.push('\n');
    std::fs::write(&out, text).map_err(|e| format!("{}: {e}", out.display()))?;
    let count = table
        .get("models")
        .and_then(json::Value::as_object)
        .map_or(0, |m| m.len());
    println!(
        "wrote {} ({count} models, source {source} {version}, sha256 {})",
        out.display(),
        meta.source_sha256
    );
    println!("keep pricing.LICENSE aligned with the source ({license})");
    Ok(())
}

/// One model per line: reviewable diffs without a pretty-printer.
fn pretty(table: &json::Value) -> String {
    let Some(o) = table.as_object() else {
        return table.to_json();
    };
    let mut out = String::from("{\n");
    let members: Vec<(&str, &json::Value)> = o.iter().collect();
    for (i, (k, v)) in members.iter().enumerate() {
        let comma = if i + 1 < members.len() { "," } else { "" };
        if *k == "models"
            && let Some(models) = v.as_object()
        {
            out.push_str("  \"models\": {\n");
            let list: Vec<(&str, &json::Value)> = models.iter().collect();
            for (j, (id, m)) in list.iter().enumerate() {
                let c = if j + 1 < list.len() { "," } else { "" };
                out.push_str(&format!("    {}: {}{c}\n", json::quote(id), m.to_json()));
            }
            out.push_str(&format!("  }}{comma}\n"));
        } else {
            out.push_str(&format!("  {}: {}{comma}\n", json::quote(k), v.to_json()));
        }
    }
    out.push('}');
    out
}
