//! The pure half of `cargo xtask pricing`: saved source JSON (LiteLLM's
//! `model_prices_and_context_window` or models.dev's `api.json`) and the
//! repository's `pricing-overrides.json` in, the `pricing.json` table out.
//!
//! The table keeps only Claude and OpenAI models and the fields Usage prices
//! with; what those fields mean is `heeler::usage::pricing`'s rule, which
//! loads the result. Models are sorted by id so the same source bytes always
//! give the same file. [`apply_overrides`] is the one place the vendor
//! prices a source lacks are laid over it: the merge happens here, when the
//! table is generated, so the binary bundles one table and reads no other.

use heeler::base::json::{Object, Value};
use heeler::usage::pricing::{PricingError, SourceMeta};

/// SHA-256 of bytes as lowercase hex.
pub fn sha256_hex(bytes: &[u8]) -> String {
    let digest = ring::digest::digest(&ring::digest::SHA256, bytes);
    digest.as_ref().iter().map(|b| format!("{b:02x}")).collect()
}

fn wanted_model(id: &str) -> bool {
    let lower = id.to_ascii_lowercase();
    !lower.contains('/')
        && (lower.starts_with("claude-")
            || lower.starts_with("gpt-")
            || lower.starts_with("codex")
            || (lower.starts_with('o') && lower[1..].starts_with(|c: char| c.is_ascii_digit())))
}

const TIER_SUFFIXES: &[&str] = &["priority", "flex", "batches", "ultrafast"];

fn litellm_rate_set(entry: &Object, suffix: &str) -> Option<Value> {
    let field = |name: &str, threshold: &str| {
        entry
            .get(&format!("{name}{threshold}{suffix}"))
            .and_then(Value::as_f64)
    };
    let set = |threshold: &str| {
        let mut o = Object::new();
        for (out, name) in [
            ("input", "input_cost_per_token"),
            ("output", "output_cost_per_token"),
            ("cache_read", "cache_read_input_token_cost"),
            ("cache_write_5m", "cache_creation_input_token_cost"),
            (
                "cache_write_1h",
                "cache_creation_input_token_cost_above_1hr",
            ),
        ] {
            if let Some(rate) = field(name, threshold) {
                o.insert(out, Value::from(rate));
            }
        }
        o
    };
    let mut base = set("");
    if !(base.get("input").is_some() && base.get("output").is_some()) {
        return None;
    }
    let mut thresholds: Vec<u64> = entry
        .iter()
        .filter_map(|(k, _)| {
            let rest = k.strip_prefix("input_cost_per_token_above_")?;
            let rest = rest.strip_suffix(suffix)?;
            let n = rest.strip_suffix("k_tokens")?;
            n.parse::<u64>().ok().map(|n| n * 1000)
        })
        .collect();
    thresholds.sort_unstable();
    thresholds.dedup();
    if !thresholds.is_empty() {
        let mut above = Object::new();
        for n in thresholds {
            let s = set(&format!("_above_{}k_tokens", n / 1000));
            if !s.is_empty() {
                above.insert(n.to_string(), Value::Object(s));
            }
        }
        base.insert("above", Value::Object(above));
    }
    Some(Value::Object(base))
}

fn header(meta: &SourceMeta) -> Object {
    Object::new()
        .with("v", 1u64)
        .with("source", meta.source.as_str())
        .with("version", meta.version.as_str())
        .with("date", meta.date.as_str())
        .with("source_url", meta.source_url.as_str())
        .with("source_sha256", meta.source_sha256.as_str())
        .with("license", meta.license.as_str())
}

/// Builds `pricing.json` from LiteLLM's `model_prices_and_context_window`
/// JSON (keys sorted, so the output is reproducible).
pub fn from_litellm(source: &Value, meta: &SourceMeta) -> Result<Value, PricingError> {
    let entries = source.as_object().ok_or(PricingError::Shape("top level"))?;
    let mut ids: Vec<&str> = entries
        .iter()
        .map(|(k, _)| k)
        .filter(|k| wanted_model(k))
        .collect();
    ids.sort_unstable();
    let mut models = Object::new();
    for id in ids {
        let Some(entry) = entries.get(id).and_then(Value::as_object) else {
            continue;
        };
        let provider = entry.get("litellm_provider").and_then(Value::as_str);
        if !matches!(
            provider,
            Some("anthropic" | "openai" | "text-completion-openai")
        ) {
            continue;
        }
        let Some(Value::Object(mut model)) = litellm_rate_set(entry, "") else {
            continue;
        };
        let mut tiers = Object::new();
        for tier in TIER_SUFFIXES {
            if let Some(set) = litellm_rate_set(entry, &format!("_{tier}")) {
                tiers.insert(*tier, set);
            }
        }
        if !tiers.is_empty() {
            model.insert("tiers", Value::Object(tiers));
        }
        // LiteLLM prices an Anthropic web search at the medium search
        // context size (its `search_context_cost_per_query`); OpenAI's
        // sizes are another tool's prices and Codex searches are not read.
        if provider == Some("anthropic")
            && let Some(per_search) = entry
                .get("search_context_cost_per_query")
                .and_then(|c| c.get("search_context_size_medium"))
                .and_then(Value::as_f64)
        {
            model.insert("web_search", Value::from(per_search));
        }
        if let Some(extra) = entry
            .get("provider_specific_entry")
            .and_then(Value::as_object)
        {
            for key in ["fast", "us"] {
                if let Some(m) = extra.get(key).and_then(Value::as_f64) {
                    model.insert(key, Value::from(m));
                }
            }
        }
        models.insert(id, Value::Object(model));
    }
    if models.is_empty() {
        return Err(PricingError::Shape("no Claude or OpenAI models"));
    }
    Ok(Value::Object(
        header(meta).with("models", Value::Object(models)),
    ))
}

/// Builds `pricing.json` from models.dev's `api.json` (USD per million
/// tokens; no 1-hour write rates and no service tiers, which stay unpriced
/// or fall back to the documented multipliers).
pub fn from_models_dev(source: &Value, meta: &SourceMeta) -> Result<Value, PricingError> {
    let mut found: Vec<(String, Value)> = Vec::new();
    for provider in ["anthropic", "openai"] {
        let Some(models) = source
            .get(provider)
            .and_then(|p| p.get("models"))
            .and_then(Value::as_object)
        else {
            continue;
        };
        for (id, m) in models.iter() {
            if !wanted_model(id) || found.iter().any(|(k, _)| k == id) {
                continue;
            }
            let Some(cost) = m.get("cost").and_then(Value::as_object) else {
                continue;
            };
            let per = |k: &str, o: &Object| o.get(k).and_then(Value::as_f64).map(|n| n / 1e6);
            let set = |o: &Object| {
                let mut s = Object::new();
                for (out, k) in [
                    ("input", "input"),
                    ("output", "output"),
                    ("cache_read", "cache_read"),
                    ("cache_write_5m", "cache_write"),
                ] {
                    if let Some(rate) = per(k, o) {
                        s.insert(out, Value::from(rate));
                    }
                }
                s
            };
            let mut model = set(cost);
            if model.get("input").is_none() || model.get("output").is_none() {
                continue;
            }
            if let Some(over) = cost.get("context_over_200k").and_then(Value::as_object) {
                model.insert(
                    "above",
                    Value::Object(Object::new().with("200000", Value::Object(set(over)))),
                );
            }
            found.push((id.to_string(), Value::Object(model)));
        }
    }
    if found.is_empty() {
        return Err(PricingError::Shape("no Claude or OpenAI models"));
    }
    found.sort_by(|a, b| a.0.cmp(&b.0));
    let mut models = Object::new();
    for (id, m) in found {
        models.insert(id, m);
    }
    Ok(Value::Object(
        header(meta).with("models", Value::Object(models)),
    ))
}

/// Where a model's price lives in `pricing.json` and what each member may
/// hold: the keys an override may set (a typo is refused, never shipped as
/// a field no one reads).
const RATE_KEYS: &[&str] = &[
    "input",
    "output",
    "cache_read",
    "cache_write_5m",
    "cache_write_1h",
];
const MODEL_KEYS: &[&str] = &["above", "tiers", "fast", "us", "web_search"];

/// Checks one rate set of an override (`model`: the model level, which
/// also takes tiers and multipliers).
fn check_price(o: &Object, model: bool) -> Result<(), String> {
    for (k, v) in o.iter() {
        match k {
            "above" => {
                let above = v.as_object().ok_or("above: not an object")?;
                for (n, set) in above.iter() {
                    n.parse::<u64>()
                        .map_err(|_| format!("above: {n} is not a token count"))?;
                    check_price(set.as_object().ok_or("above: not an object")?, false)?;
                }
            }
            "tiers" if model => {
                let tiers = v.as_object().ok_or("tiers: not an object")?;
                for (name, set) in tiers.iter() {
                    if !TIER_SUFFIXES.contains(&name) {
                        return Err(format!("tiers: unknown tier {name}"));
                    }
                    check_price(set.as_object().ok_or("tiers: not an object")?, false)?;
                }
            }
            k if RATE_KEYS.contains(&k) || (model && MODEL_KEYS.contains(&k)) => {
                if !v.as_f64().is_some_and(|n| n >= 0.0) {
                    return Err(format!("{k}: not a price"));
                }
            }
            other => return Err(format!("unknown field {other}")),
        }
    }
    Ok(())
}

/// `over` laid on `base`: objects merge member by member, anything else
/// replaces.
fn merge(base: &mut Value, over: &Value) {
    match (base, over) {
        (Value::Object(b), Value::Object(o)) => {
            for (k, v) in o.iter() {
                match b.get_mut(k) {
                    Some(slot) => merge(slot, v),
                    None => b.insert(k, v.clone()),
                }
            }
        }
        (b, o) => *b = o.clone(),
    }
}

/// Lays `pricing-overrides.json` (`overrides`, whose SHA-256 is
/// `overrides_sha256`) over a generated table: each row's `price` is merged
/// into every model it names (a model the source lacks is added), and the
/// model records the row's `source` note. The table then records the
/// overrides' hash beside the source's, and its models stay sorted by id.
pub fn apply_overrides(
    table: &Value,
    overrides: &Value,
    overrides_sha256: &str,
) -> Result<Value, String> {
    if overrides.get("v").and_then(Value::as_i64) != Some(1) {
        return Err("overrides: expected \"v\": 1".into());
    }
    let rows = overrides
        .get("rows")
        .and_then(Value::as_array)
        .ok_or("overrides: no rows")?;
    let mut models: Vec<(String, Value)> = table
        .get("models")
        .and_then(Value::as_object)
        .ok_or("table: no models")?
        .iter()
        .map(|(id, m)| (id.to_string(), m.clone()))
        .collect();
    for (i, row) in rows.iter().enumerate() {
        let at = |e: &str| format!("overrides row {}: {e}", i + 1);
        let source = row
            .get("source")
            .and_then(Value::as_str)
            .filter(|s| !s.trim().is_empty())
            .ok_or_else(|| at("no source note"))?;
        let price = row
            .get("price")
            .and_then(Value::as_object)
            .ok_or_else(|| at("no price object"))?;
        check_price(price, true).map_err(|e| at(&e))?;
        let ids = row
            .get("models")
            .and_then(Value::as_array)
            .filter(|ids| !ids.is_empty())
            .ok_or_else(|| at("no models"))?;
        for id in ids {
            let id = id
                .as_str()
                .ok_or_else(|| at("a model id is not a string"))?;
            let at_model = match models.iter().position(|(k, _)| k == id) {
                Some(p) => p,
                None => {
                    models.push((id.to_string(), Value::Object(Object::new())));
                    models.len() - 1
                }
            };
            let model = &mut models[at_model].1;
            merge(model, &Value::Object(price.clone()));
            let Value::Object(m) = model else {
                return Err(at(&format!("{id}: not an object in the table")));
            };
            let note = match m.get("source").and_then(Value::as_str) {
                Some(earlier) if earlier.contains(source) => earlier.to_string(),
                Some(earlier) => format!("{earlier}; {source}"),
                None => source.to_string(),
            };
            m.insert("source", Value::from(note));
            if m.get("input").is_none() || m.get("output").is_none() {
                return Err(at(&format!("{id}: no input or output price")));
            }
        }
    }
    models.sort_by(|a, b| a.0.cmp(&b.0));
    let mut out = Object::new();
    for (k, v) in table.as_object().ok_or("table: not an object")?.iter() {
        if k != "models" && k != "overrides_sha256" {
            out.insert(k, v.clone());
        }
    }
    out.insert("overrides_sha256", Value::from(overrides_sha256));
    let mut sorted = Object::new();
    for (id, m) in models {
        sorted.insert(id, m);
    }
    out.insert("models", Value::Object(sorted));
    Ok(Value::Object(out))
}

#[cfg(test)]
mod tests {
    use super::*;
    use heeler::base::json;
    use heeler::usage::event::{Agent, Tokens};
    use heeler::usage::pricing::PriceTable;

    fn meta() -> SourceMeta {
        SourceMeta {
            source: "litellm".into(),
            version: "test".into(),
            date: "2026-11-20".into(),
            ..SourceMeta::default()
        }
    }

    /// LiteLLM entries of every kind the generator meets: a spec sample, two
    /// Anthropic models, an OpenAI model with long-context and priority rates,
    /// another provider's copy of a Claude model, and an image-only model.
    const LITELLM: &str = r#"{
        "sample_spec": {"input_cost_per_token": 1, "output_cost_per_token": 1, "litellm_provider": "openai"},
        "claude-opus-4-6": {"litellm_provider": "anthropic", "input_cost_per_token": 5e-06,
            "output_cost_per_token": 2.5e-05, "cache_read_input_token_cost": 5e-07,
            "cache_creation_input_token_cost": 6.25e-06,
            "cache_creation_input_token_cost_above_1hr": 1e-05,
            "input_cost_per_token_batches": 2.5e-06, "output_cost_per_token_batches": 1.25e-05,
            "search_context_cost_per_query": {"search_context_size_low": 0.01,
                "search_context_size_medium": 0.01, "search_context_size_high": 0.01},
            "provider_specific_entry": {"us": 1.1}},
        "claude-opus-4-8": {"litellm_provider": "anthropic", "input_cost_per_token": 5e-06,
            "output_cost_per_token": 2.5e-05, "provider_specific_entry": {"fast": 2.0, "us": 1.1}},
        "gpt-5.5": {"litellm_provider": "openai", "input_cost_per_token": 5e-06,
            "output_cost_per_token": 3e-05, "cache_read_input_token_cost": 5e-07,
            "input_cost_per_token_above_272k_tokens": 1e-05,
            "output_cost_per_token_above_272k_tokens": 4.5e-05,
            "cache_read_input_token_cost_above_272k_tokens": 1e-06,
            "input_cost_per_token_priority": 1.25e-05, "output_cost_per_token_priority": 7.5e-05,
            "search_context_cost_per_query": {"search_context_size_low": 0.03,
                "search_context_size_medium": 0.035, "search_context_size_high": 0.05}},
        "bedrock/claude-x": {"litellm_provider": "bedrock", "input_cost_per_token": 1, "output_cost_per_token": 1},
        "gpt-image-1": {"litellm_provider": "openai", "input_cost_per_image": 1}
    }"#;

    /// What `LITELLM` means in the `pricing.json` format, written out by hand:
    /// LiteLLM's per-token field names become the table's, `_above_272k_tokens`
    /// rates go under `above`, tier-suffixed rates under `tiers`, an
    /// Anthropic model's medium search-context price is its `web_search`
    /// price, and the provider-specific multipliers stay; the rest (OpenAI's
    /// search-context prices too) is dropped.
    const LITELLM_AS_TABLE: &str = r#"{"v": 1, "source": "litellm", "version": "test",
        "date": "2026-11-20", "source_url": "", "source_sha256": "", "license": "",
        "models": {
            "claude-opus-4-6": {"input": 5e-06, "output": 2.5e-05, "cache_read": 5e-07,
                "cache_write_5m": 6.25e-06, "cache_write_1h": 1e-05,
                "tiers": {"batches": {"input": 2.5e-06, "output": 1.25e-05}}, "us": 1.1,
                "web_search": 0.01},
            "claude-opus-4-8": {"input": 5e-06, "output": 2.5e-05, "fast": 2.0, "us": 1.1},
            "gpt-5.5": {"input": 5e-06, "output": 3e-05, "cache_read": 5e-07,
                "above": {"272000": {"input": 1e-05, "output": 4.5e-05, "cache_read": 1e-06}},
                "tiers": {"priority": {"input": 1.25e-05, "output": 7.5e-05}}}
        }}"#;

    #[test]
    fn litellm_keeps_only_what_usage_needs_in_the_table_format() {
        let source = json::parse(LITELLM).unwrap();
        let generated = from_litellm(&source, &meta()).unwrap();
        let table = PriceTable::parse(&generated.to_json()).unwrap();
        assert_eq!(table, PriceTable::parse(LITELLM_AS_TABLE).unwrap());
        assert_eq!(table.len(), 3);
        assert!(table.lookup("sample_spec").is_none());
        assert!(table.lookup("bedrock/claude-x").is_none());
        assert!(table.lookup("gpt-image-1").is_none());
    }

    #[test]
    fn the_output_is_the_same_for_the_same_source() {
        let source = json::parse(LITELLM).unwrap();
        let first = from_litellm(&source, &meta()).unwrap().to_json();
        let second = from_litellm(&source, &meta()).unwrap().to_json();
        assert_eq!(first, second);
        let ids: Vec<String> = json::parse(&first)
            .unwrap()
            .get("models")
            .and_then(Value::as_object)
            .unwrap()
            .iter()
            .map(|(id, _)| id.to_owned())
            .collect();
        assert_eq!(ids, ["claude-opus-4-6", "claude-opus-4-8", "gpt-5.5"]);
    }

    #[test]
    fn a_source_without_claude_or_openai_models_is_refused() {
        let source =
            json::parse(r#"{"bedrock/claude-x": {"litellm_provider": "bedrock"}}"#).unwrap();
        assert_eq!(
            from_litellm(&source, &meta()).unwrap_err(),
            PricingError::Shape("no Claude or OpenAI models")
        );
        assert_eq!(
            from_litellm(&json::parse("[]").unwrap(), &meta()).unwrap_err(),
            PricingError::Shape("top level")
        );
        assert_eq!(
            from_models_dev(&json::parse("{}").unwrap(), &meta()).unwrap_err(),
            PricingError::Shape("no Claude or OpenAI models")
        );
    }

    #[test]
    fn models_dev_is_per_million() {
        let source = json::parse(
            r#"{"anthropic":{"models":{"claude-sonnet-4-5":{"cost":{"input":3,"output":15,"cache_read":0.3,"cache_write":3.75}}}}}"#,
        )
        .unwrap();
        let v = from_models_dev(&source, &SourceMeta::default()).unwrap();
        let t = PriceTable::parse(&v.to_json()).unwrap();
        let tokens = Tokens {
            input: 1_000_000,
            cache_read: 0,
            cache_write_5m: 0,
            cache_write_1h: 0,
            output: 0,
            reasoning: 0,
        };
        let c = t
            .cost(Agent::Claude, "claude-sonnet-4-5", "", 0, &tokens)
            .unwrap();
        assert!((c - 3.0).abs() < 1e-12, "{c}");
    }

    fn overrides(rows: &str) -> Value {
        json::parse(&format!(r#"{{"v": 1, "rows": [{rows}]}}"#)).unwrap()
    }

    #[test]
    fn overrides_merge_into_models_and_add_missing_ones_with_their_source() {
        let source = json::parse(LITELLM).unwrap();
        let table = from_litellm(&source, &meta()).unwrap();
        let rows = overrides(
            r#"{"models": ["gpt-5.5"], "source": "vendor page A",
                "price": {"above": {"272000": {"cache_write_5m": 2e-05}},
                          "tiers": {"priority": {"cache_read": 1.25e-06}}}},
               {"models": ["claude-opus-4-6", "claude-3-haiku-20240307"], "source": "vendor page B",
                "price": {"input": 2.5e-07, "output": 1.25e-06, "web_search": 0.02}}"#,
        );
        let merged = apply_overrides(&table, &rows, "abc").unwrap();
        assert_eq!(
            merged.get("overrides_sha256").and_then(Value::as_str),
            Some("abc")
        );
        // What the merge must give, written out: members are merged into
        // the objects they meet, numbers replaced, a new model added, and
        // each touched model names its row's source.
        let want = r#"{"v": 1, "models": {
            "claude-3-haiku-20240307": {"input": 2.5e-07, "output": 1.25e-06, "web_search": 0.02},
            "claude-opus-4-6": {"input": 2.5e-07, "output": 1.25e-06, "cache_read": 5e-07,
                "cache_write_5m": 6.25e-06, "cache_write_1h": 1e-05,
                "tiers": {"batches": {"input": 2.5e-06, "output": 1.25e-05}}, "us": 1.1,
                "web_search": 0.02},
            "claude-opus-4-8": {"input": 5e-06, "output": 2.5e-05, "fast": 2.0, "us": 1.1},
            "gpt-5.5": {"input": 5e-06, "output": 3e-05, "cache_read": 5e-07,
                "above": {"272000": {"input": 1e-05, "output": 4.5e-05, "cache_read": 1e-06,
                    "cache_write_5m": 2e-05}},
                "tiers": {"priority": {"input": 1.25e-05, "output": 7.5e-05, "cache_read": 1.25e-06}}}
        }}"#;
        let (got, want) = (
            PriceTable::parse(&merged.to_json()).unwrap(),
            PriceTable::parse(want).unwrap(),
        );
        assert_eq!(got.len(), 4);
        for id in [
            "claude-3-haiku-20240307",
            "claude-opus-4-6",
            "claude-opus-4-8",
            "gpt-5.5",
        ] {
            assert_eq!(got.lookup(id), want.lookup(id), "{id}");
        }
        let note = |id: &str| {
            merged
                .get("models")
                .and_then(|m| m.get(id))
                .and_then(|m| m.get("source"))
                .and_then(Value::as_str)
                .map(str::to_owned)
        };
        assert_eq!(note("gpt-5.5").as_deref(), Some("vendor page A"));
        assert_eq!(
            note("claude-3-haiku-20240307").as_deref(),
            Some("vendor page B")
        );
        assert_eq!(note("claude-opus-4-8"), None);
        // Sorted by id, and the merge is idempotent (so a regenerated
        // table can be checked against its override file).
        let ids: Vec<String> = merged
            .get("models")
            .and_then(Value::as_object)
            .unwrap()
            .iter()
            .map(|(id, _)| id.to_owned())
            .collect();
        assert_eq!(
            ids,
            [
                "claude-3-haiku-20240307",
                "claude-opus-4-6",
                "claude-opus-4-8",
                "gpt-5.5"
            ]
        );
        assert_eq!(apply_overrides(&merged, &rows, "abc").unwrap(), merged);
    }

    #[test]
    fn a_bad_override_row_is_refused() {
        let table = from_litellm(&json::parse(LITELLM).unwrap(), &meta()).unwrap();
        let refused = |rows: &str| apply_overrides(&table, &overrides(rows), "").unwrap_err();
        let e = refused(r#"{"models": ["gpt-5.5"], "price": {"input": 1}}"#);
        assert!(e.contains("row 1: no source note"), "{e}");
        let e = refused(r#"{"models": ["gpt-5.5"], "source": "s", "price": {"inptu": 1}}"#);
        assert!(e.contains("unknown field inptu"), "{e}");
        let e = refused(
            r#"{"models": ["gpt-5.5"], "source": "s", "price": {"tiers": {"fast": {"input": 1}}}}"#,
        );
        assert!(e.contains("unknown tier fast"), "{e}");
        let e = refused(r#"{"models": ["gpt-5.5"], "source": "s", "price": {"input": -1}}"#);
        assert!(e.contains("input: not a price"), "{e}");
        let e = refused(r#"{"models": ["claude-new"], "source": "s", "price": {"input": 1}}"#);
        assert!(e.contains("claude-new: no input or output price"), "{e}");
        let e = refused(r#"{"models": [], "source": "s", "price": {}}"#);
        assert!(e.contains("no models"), "{e}");
        let wrong_version = json::parse(r#"{"v": 2, "rows": []}"#).unwrap();
        assert!(apply_overrides(&table, &wrong_version, "").is_err());
    }

    /// `pricing.json` is generated from the override file as it is now:
    /// laying the file over the bundled table changes nothing, and the
    /// table records the file's hash. Fails when the file was edited and
    /// the table not regenerated (`cargo xtask pricing`).
    #[test]
    fn the_bundled_table_has_the_override_file_applied() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let bytes = std::fs::read(root.join(super::super::OVERRIDES)).unwrap();
        let rows = json::parse(std::str::from_utf8(&bytes).unwrap()).unwrap();
        let bundled = json::parse(heeler::usage::pricing::BUNDLED).unwrap();
        let sha = sha256_hex(&bytes);
        assert_eq!(
            bundled.get("overrides_sha256").and_then(Value::as_str),
            Some(sha.as_str()),
            "pricing-overrides.json changed: regenerate pricing.json"
        );
        assert_eq!(apply_overrides(&bundled, &rows, &sha).unwrap(), bundled);
    }

    #[test]
    fn sha256_is_lowercase_hex() {
        // SHA-256 of the empty string (FIPS 180-2 test vector).
        assert_eq!(
            sha256_hex(b""),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
    }
}
