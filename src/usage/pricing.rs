//! Estimated API cost: the bundled price table and how a request is priced.
//!
//! Prices are never guessed: a model, service tier or multiplier the table
//! does not know leaves the request unpriced (and counted as such). The
//! table (`pricing.json`) keeps only the Claude and OpenAI models and the
//! fields Usage needs, with its source, version, date and the source's
//! SHA-256 so a reviewer can reproduce it. `cargo xtask pricing` generates it
//! offline from saved source bytes and lays `pricing-overrides.json` (vendor
//! prices the source lacks, each with its source note) over them
//! (`xtask/src/pricing/`); this module reads that format and owns what it
//! means: rates per token, long-context rates for the whole request above a
//! prompt threshold, service tiers, fast and US-only multipliers, and a
//! price per web search.

use std::collections::HashMap;

use crate::base::json::{self, Object, Value};
use crate::usage::event::{Agent, Tokens, flags};

/// The table shipped inside the binary.
pub const BUNDLED: &str = include_str!("../../pricing.json");

/// USD per token for one kind of request.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RateSet {
    pub input: Option<f64>,
    pub output: Option<f64>,
    pub cache_read: Option<f64>,
    pub cache_write_5m: Option<f64>,
    pub cache_write_1h: Option<f64>,
    /// Long-context rates: once the prompt exceeds the threshold, these
    /// apply to every bucket of the request (LiteLLM/vendor semantics).
    pub above: Vec<(u64, RateSet)>,
}

/// One model's prices.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ModelPrice {
    pub base: RateSet,
    /// Service tiers (`priority`, `flex`, `batches`, `ultrafast`).
    pub tiers: Vec<(String, RateSet)>,
    /// Multiplier for Claude fast mode (`speed: "fast"`).
    pub fast: Option<f64>,
    /// Multiplier for US-only inference (`inference_geo: "us"`).
    pub us: Option<f64>,
    /// USD per web search the request's server tools ran
    /// (`server_tool_use.web_search_requests`).
    pub web_search: Option<f64>,
}

/// Where a table came from (reported in every query answer).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SourceMeta {
    pub source: String,
    pub version: String,
    pub date: String,
    pub source_url: String,
    pub source_sha256: String,
    pub license: String,
}

/// A loaded price table.
#[derive(Debug, Clone, Default)]
pub struct PriceTable {
    pub meta: SourceMeta,
    /// Names these prices exactly: the source's hash and a hash of the
    /// whole table text, so an edit to the vendor overrides (which leaves
    /// the source alone) still reprices what was aggregated with the old
    /// table.
    identity: String,
    models: HashMap<String, ModelPrice>,
    normalised: HashMap<String, String>,
}

/// Two tables are equal when they price alike: the identity names the
/// text a table was read from, which may be formatted differently.
impl PartialEq for PriceTable {
    fn eq(&self, other: &PriceTable) -> bool {
        self.meta == other.meta
            && self.models == other.models
            && self.normalised == other.normalised
    }
}

/// Why a table could not be loaded or generated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PricingError {
    Json,
    Shape(&'static str),
}

impl std::fmt::Display for PricingError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PricingError::Json => write!(f, "not valid JSON"),
            PricingError::Shape(what) => write!(f, "unexpected shape: {what}"),
        }
    }
}

impl std::error::Error for PricingError {}

fn normalise_id(id: &str) -> String {
    id.to_ascii_lowercase().replace(['.', '@', '_'], "-")
}

fn strip_date(id: &str) -> Option<&str> {
    let (head, tail) = id.rsplit_once('-')?;
    (tail.len() == 8 && tail.bytes().all(|b| b.is_ascii_digit())).then_some(head)
}

/// Model ids whose price is another id's (kept tiny and explicit).
const ALIASES: &[(&str, &str)] = &[];

fn rate_set_from(o: &Object) -> RateSet {
    let f = |k: &str| o.get(k).and_then(Value::as_f64);
    let mut above: Vec<(u64, RateSet)> = o
        .get("above")
        .and_then(Value::as_object)
        .map(|a| {
            a.iter()
                .filter_map(|(k, v)| Some((k.parse::<u64>().ok()?, rate_set_from(v.as_object()?))))
                .collect()
        })
        .unwrap_or_default();
    above.sort_by_key(|(n, _)| *n);
    RateSet {
        input: f("input"),
        output: f("output"),
        cache_read: f("cache_read"),
        cache_write_5m: f("cache_write_5m"),
        cache_write_1h: f("cache_write_1h"),
        above,
    }
}

impl PriceTable {
    /// The table compiled into the binary.
    pub fn bundled() -> Result<PriceTable, PricingError> {
        PriceTable::parse(BUNDLED)
    }

    /// Loads a table in the `pricing.json` format.
    pub fn parse(text: &str) -> Result<PriceTable, PricingError> {
        let v = json::parse(text).map_err(|_| PricingError::Json)?;
        if v.get("v").and_then(Value::as_i64) != Some(1) {
            return Err(PricingError::Shape("v"));
        }
        let s = |k: &str| {
            v.get(k)
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string()
        };
        let meta = SourceMeta {
            source: s("source"),
            version: s("version"),
            date: s("date"),
            source_url: s("source_url"),
            source_sha256: s("source_sha256"),
            license: s("license"),
        };
        let models_obj = v
            .get("models")
            .and_then(Value::as_object)
            .ok_or(PricingError::Shape("models"))?;
        let mut models = HashMap::new();
        let mut normalised = HashMap::new();
        for (id, m) in models_obj.iter() {
            let Some(o) = m.as_object() else { continue };
            let tiers = o
                .get("tiers")
                .and_then(Value::as_object)
                .map(|t| {
                    t.iter()
                        .filter_map(|(k, v)| Some((k.to_string(), rate_set_from(v.as_object()?))))
                        .collect()
                })
                .unwrap_or_default();
            let price = ModelPrice {
                base: rate_set_from(o),
                tiers,
                fast: o.get("fast").and_then(Value::as_f64),
                us: o.get("us").and_then(Value::as_f64),
                web_search: o.get("web_search").and_then(Value::as_f64),
            };
            normalised
                .entry(normalise_id(id))
                .or_insert_with(|| id.to_string());
            models.insert(id.to_string(), price);
        }
        let identity = format!(
            "{}+{:016x}",
            meta.source_sha256,
            crate::usage::event::fnv1a(&[text.as_bytes()])
        );
        Ok(PriceTable {
            meta,
            identity,
            models,
            normalised,
        })
    }

    /// What an aggregate priced with this table records, to know whether
    /// a later table prices it the same ([`PriceTable::identity`]'s field
    /// doc says what it covers).
    pub fn identity(&self) -> &str {
        &self.identity
    }

    pub fn len(&self) -> usize {
        self.models.len()
    }

    pub fn is_empty(&self) -> bool {
        self.models.is_empty()
    }

    /// Exact id, then without a provider prefix, then without a `-YYYYMMDD`
    /// date, each also with `.`/`-` normalised, then the alias table. No
    /// fuzzy substring matching: unknown stays unknown.
    pub fn lookup(&self, model: &str) -> Option<&ModelPrice> {
        let mut candidates = vec![model];
        for prefix in ["anthropic/", "openai/", "anthropic.", "openai."] {
            if let Some(rest) = model.strip_prefix(prefix) {
                candidates.push(rest);
            }
        }
        let undated: Vec<&str> = candidates.iter().filter_map(|c| strip_date(c)).collect();
        candidates.extend(undated);
        for c in &candidates {
            if let Some(p) = self.models.get(*c) {
                return Some(p);
            }
            if let Some(p) = self
                .normalised
                .get(&normalise_id(c))
                .and_then(|id| self.models.get(id))
            {
                return Some(p);
            }
        }
        ALIASES
            .iter()
            .find(|(from, _)| candidates.contains(from))
            .and_then(|(_, to)| self.models.get(*to))
    }

    /// The estimated cost in USD of one request that ran no web search,
    /// or `None` when unpriced ([`cost_with`] prices searches too).
    pub fn cost(
        &self,
        agent: Agent,
        model: &str,
        tier: &str,
        bits: u8,
        tokens: &Tokens,
    ) -> Option<f64> {
        cost_with(self.lookup(model)?, agent, tier, bits, tokens, 0)
    }
}

/// The estimated cost in USD of one request with the model's prices
/// already looked up: its tokens, then `web_searches` at the model's
/// per-search price. `None` (unpriced) when any part has no price.
///
/// The fast and US-only multipliers scale the token cost only: the vendor
/// states them for token prices, and a search has its own flat price.
pub(crate) fn cost_with(
    price: &ModelPrice,
    agent: Agent,
    tier: &str,
    bits: u8,
    tokens: &Tokens,
    web_searches: u64,
) -> Option<f64> {
    let searches = match web_searches {
        0 => 0.0,
        n => n as f64 * price.web_search?,
    };
    Some(token_cost(price, agent, tier, bits, tokens)? + searches)
}

/// The cost of a request's tokens (see [`cost_with`]).
fn token_cost(
    price: &ModelPrice,
    agent: Agent,
    tier: &str,
    bits: u8,
    tokens: &Tokens,
) -> Option<f64> {
    let set = match tier_key(agent, tier)? {
        None => &price.base,
        Some(key) => &price.tiers.iter().find(|(k, _)| k == key)?.1,
    };
    let prompt = tokens.prompt();
    let above = set
        .above
        .iter()
        .rev()
        .find(|(threshold, _)| prompt > *threshold)
        .map(|(_, s)| s);
    let pick = |f: fn(&RateSet) -> Option<f64>| above.and_then(f).or_else(|| f(set));
    let input = pick(|s| s.input)?;
    let output = pick(|s| s.output)?;
    let (read_default, write_default) = match agent {
        Agent::Claude => (0.1 * input, 1.25 * input),
        _ => (input, input),
    };
    let cache_read = pick(|s| s.cache_read).unwrap_or(read_default);
    let write_5m = pick(|s| s.cache_write_5m).unwrap_or(write_default);
    let write_1h = pick(|s| s.cache_write_1h).unwrap_or(2.0 * input);
    let mut cost = tokens.input as f64 * input
        + tokens.output as f64 * output
        + tokens.cache_read as f64 * cache_read
        + tokens.cache_write_5m as f64 * write_5m
        + tokens.cache_write_1h as f64 * write_1h;
    if bits & flags::FAST != 0 {
        cost *= price.fast?;
    }
    if bits & flags::GEO_US != 0 {
        cost *= price.us?;
    }
    Some(cost)
}

/// The tier's key in the table: `Some(None)` for standard rates,
/// `Some(Some(key))` for a tier table, `None` for a tier we cannot map.
fn tier_key(agent: Agent, tier: &str) -> Option<Option<&'static str>> {
    Some(match (agent, tier) {
        (_, "") | (Agent::Claude, "standard") | (Agent::Codex, "default" | "auto") => None,
        (_, "priority") | (Agent::Codex, "fast") => Some("priority"),
        (_, "flex") => Some("flex"),
        (_, "batch" | "batches") => Some("batches"),
        (Agent::Codex, "ultrafast") => Some("ultrafast"),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A table in the `pricing.json` format: two Claude models (one with a
    /// 1-hour write rate, a batch tier and a US multiplier, one with fast and
    /// US multipliers only) and an OpenAI model with long-context rates above
    /// 272k prompt tokens and a priority tier.
    fn table() -> PriceTable {
        PriceTable::parse(
            r#"{"v": 1, "source": "litellm", "version": "test", "date": "2026-11-20",
            "source_url": "", "source_sha256": "", "license": "",
            "models": {
                "claude-opus-4-6": {"input": 5e-06, "output": 2.5e-05, "cache_read": 5e-07,
                    "cache_write_5m": 6.25e-06, "cache_write_1h": 1e-05,
                    "tiers": {"batches": {"input": 2.5e-06, "output": 1.25e-05}}, "us": 1.1},
                "claude-opus-4-8": {"input": 5e-06, "output": 2.5e-05, "fast": 2.0, "us": 1.1},
                "gpt-5.5": {"input": 5e-06, "output": 3e-05, "cache_read": 5e-07,
                    "above": {"272000": {"input": 1e-05, "output": 4.5e-05, "cache_read": 1e-06}},
                    "tiers": {"priority": {"input": 1.25e-05, "output": 7.5e-05}}}
            }}"#,
        )
        .unwrap()
    }

    fn tokens(input: u64, read: u64, w5: u64, w1: u64, output: u64) -> Tokens {
        Tokens {
            input,
            cache_read: read,
            cache_write_5m: w5,
            cache_write_1h: w1,
            output,
            reasoning: 0,
        }
    }

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-12
    }

    #[test]
    fn one_hour_writes_use_their_own_rate() {
        let t = table();
        let c = t
            .cost(
                Agent::Claude,
                "claude-opus-4-6",
                "standard",
                0,
                &tokens(10, 100, 20, 30, 5),
            )
            .unwrap();
        let want = 10.0 * 5e-6 + 100.0 * 5e-7 + 20.0 * 6.25e-6 + 30.0 * 1e-5 + 5.0 * 2.5e-5;
        assert!(close(c, want), "{c} {want}");
        // Without a 1h field: 2x input.
        let c = t
            .cost(
                Agent::Claude,
                "claude-opus-4-8",
                "",
                0,
                &tokens(0, 0, 0, 10, 0),
            )
            .unwrap();
        assert!(close(c, 10.0 * 2.0 * 5e-6));
    }

    #[test]
    fn ids_match_by_date_prefix_and_dots_but_never_fuzzily() {
        let t = table();
        assert!(t.lookup("claude-opus-4-6-20260101").is_some());
        assert!(t.lookup("anthropic/claude-opus-4-6").is_some());
        assert!(t.lookup("gpt-5-5").is_some());
        assert!(t.lookup("claude-opus-4").is_none());
        assert!(t.lookup("gpt-5.5-mini").is_none());
    }

    #[test]
    fn long_context_switches_every_bucket() {
        let t = table();
        let small = t
            .cost(
                Agent::Codex,
                "gpt-5.5",
                "",
                0,
                &tokens(272_000, 0, 0, 0, 10),
            )
            .unwrap();
        assert!(close(small, 272_000.0 * 5e-6 + 10.0 * 3e-5));
        let big = t
            .cost(
                Agent::Codex,
                "gpt-5.5",
                "",
                0,
                &tokens(272_000, 1, 0, 0, 10),
            )
            .unwrap();
        assert!(close(big, 272_000.0 * 1e-5 + 1e-6 + 10.0 * 4.5e-5));
    }

    #[test]
    fn tiers_and_multipliers_or_unpriced() {
        let t = table();
        let p = t
            .cost(Agent::Codex, "gpt-5.5", "fast", 0, &tokens(1, 0, 0, 0, 1))
            .unwrap();
        assert!(close(p, 1.25e-5 + 7.5e-5));
        assert_eq!(
            t.cost(Agent::Codex, "gpt-5.5", "flex", 0, &tokens(1, 0, 0, 0, 1)),
            None
        );
        assert_eq!(
            t.cost(
                Agent::Claude,
                "claude-opus-4-6",
                "priority",
                0,
                &tokens(1, 0, 0, 0, 1)
            ),
            None
        );
        assert_eq!(
            t.cost(
                Agent::Claude,
                "claude-opus-4-6",
                "",
                flags::FAST,
                &tokens(1, 0, 0, 0, 1)
            ),
            None
        );
        let fast = t
            .cost(
                Agent::Claude,
                "claude-opus-4-8",
                "",
                flags::FAST | flags::GEO_US,
                &tokens(1, 0, 0, 0, 0),
            )
            .unwrap();
        assert!(close(fast, 5e-6 * 2.0 * 1.1));
        assert_eq!(
            t.cost(Agent::Codex, "gpt-9", "", 0, &tokens(1, 0, 0, 0, 1)),
            None
        );
        // Codex without a cache-read rate reads at the input rate.
        let codex_read = t
            .cost(
                Agent::Codex,
                "claude-opus-4-8",
                "",
                0,
                &tokens(0, 10, 0, 0, 0),
            )
            .unwrap();
        assert!(close(codex_read, 10.0 * 5e-6));
    }

    #[test]
    fn the_table_format_is_checked() {
        assert_eq!(PriceTable::parse("{").unwrap_err(), PricingError::Json);
        assert_eq!(
            PriceTable::parse(r#"{"v": 2, "models": {}}"#).unwrap_err(),
            PricingError::Shape("v")
        );
        assert_eq!(
            PriceTable::parse(r#"{"v": 1}"#).unwrap_err(),
            PricingError::Shape("models")
        );
        let t = table();
        assert_eq!(t.len(), 3);
        assert_eq!(t.meta.version, "test");
        assert!(
            t.lookup("claude-opus-4-8")
                .is_some_and(|p| p.fast == Some(2.0))
        );
    }

    #[test]
    fn the_bundled_table_loads() {
        let t = PriceTable::bundled().unwrap();
        assert!(!t.is_empty());
        assert_eq!(t.meta.source_sha256.len(), 64);
        assert!(t.lookup("claude-opus-4-6").is_some());
        assert!(t.lookup("gpt-5.5").is_some());
    }

    #[test]
    fn an_edited_override_changes_the_identity_an_aggregate_records() {
        // Same source bytes, one rate changed (as an edit to the vendor
        // overrides would leave it): the identity must differ, so an
        // aggregate priced with the old table is rebuilt.
        let base = PriceTable::bundled().unwrap();
        let edited_text = BUNDLED.replacen("\"input\":0.000003", "\"input\":0.000004", 1);
        assert_ne!(edited_text, BUNDLED);
        let edited = PriceTable::parse(&edited_text).unwrap();
        assert_eq!(edited.meta.source_sha256, base.meta.source_sha256);
        assert_ne!(edited.identity(), base.identity());
        assert_eq!(PriceTable::bundled().unwrap().identity(), base.identity());
    }

    /// USD per million tokens, as the vendors publish rates.
    const M: f64 = 1e-6;

    fn bundled_cost(model: &str, tier: &str, tokens: &Tokens, searches: u64) -> Option<f64> {
        let t = PriceTable::bundled().unwrap();
        cost_with(t.lookup(model)?, Agent::Claude, tier, 0, tokens, searches)
    }

    #[test]
    fn sonnet_4_and_4_5_bill_a_prompt_over_200k_whole_at_the_long_context_rate() {
        // Anthropic's pricing page: Sonnet 4/4.5 are $3 input, $15 output,
        // $0.30 cache reads, $3.75 5-minute writes per million tokens; a
        // request whose input + cache reads + cache writes exceed 200,000
        // tokens is billed whole at $6 input, $22.50 output, $0.60 reads,
        // $7.50 5-minute and $12 1-hour writes.
        let big = tokens(5_000, 240_000, 10_000, 0, 2_000); // prompt 255,000
        // 5,000 × 6 + 240,000 × 0.60 + 10,000 × 7.50 + 2,000 × 22.50
        // = 30,000 + 144,000 + 75,000 + 45,000 = 294,000 $/M = $0.294
        // (at the base rates it would be 15,000 + 72,000 + 37,500 + 30,000
        // = 154,500 $/M = $0.1545).
        for model in [
            "claude-sonnet-4-5-20250929",
            "claude-sonnet-4-5",
            "claude-sonnet-4-20250514",
        ] {
            let c = bundled_cost(model, "standard", &big, 0).unwrap();
            assert!(close(c, 0.294), "{model}: {c}");
        }
        // 1-hour writes above the threshold: 100,000 × $12/M = $1.20, plus
        // 150,000 reads × $0.60/M = $0.09.
        let hour = tokens(0, 150_000, 0, 100_000, 0);
        let c = bundled_cost("claude-sonnet-4-5", "", &hour, 0).unwrap();
        assert!(close(c, 1.2 + 0.09), "{c}");
        // Exactly 200,000 prompt tokens is not above it: base rates,
        // 1,000 × 3 + 199,000 × 0.30 + 100 × 15 = 64,200 $/M.
        let edge = tokens(1_000, 199_000, 0, 0, 100);
        let c = bundled_cost("claude-sonnet-4-5", "standard", &edge, 0).unwrap();
        assert!(close(c, 0.0642), "{c}");
        // The Batch API halves the long-context rates too: $3 input and
        // $11.25 output per million, 300,000 × 3 + 1,000 × 11.25.
        let batch = tokens(300_000, 0, 0, 0, 1_000);
        let c = bundled_cost("claude-sonnet-4-5", "batch", &batch, 0).unwrap();
        assert!(close(c, 0.9 + 0.01125), "{c}");
        // Sonnet 4.6 has a 1M window at its flat rates: no threshold.
        let c = bundled_cost("claude-sonnet-4-6", "", &big, 0).unwrap();
        assert!(close(c, 0.1545), "{c}");
    }

    #[test]
    fn opus_4_6_fast_mode_is_six_times_its_standard_rates() {
        // Anthropic bills fast mode on Opus 4.6 at 6x: $30 input and $150
        // output per million tokens against $5 and $25, cache reads $3
        // against $0.50, 5-minute writes $37.50 against $6.25. One million
        // of each: 30 + 150 + 3 + 37.50 = $220.50 (standard: $36.75).
        let t = PriceTable::bundled().unwrap();
        let each = tokens(1_000_000, 1_000_000, 1_000_000, 0, 1_000_000);
        for model in ["claude-opus-4-6", "claude-opus-4-6-20260205"] {
            let standard = t.cost(Agent::Claude, model, "standard", 0, &each);
            let fast = t.cost(Agent::Claude, model, "standard", flags::FAST, &each);
            assert!(close(standard.unwrap(), 36.75), "{model}: {standard:?}");
            assert!(close(fast.unwrap(), 220.5), "{model}: {fast:?}");
        }
        // A model the vendor prices no fast mode for stays unpriced fast.
        let fast = t.cost(Agent::Claude, "claude-sonnet-4-5", "", flags::FAST, &each);
        assert_eq!(fast, None);
    }

    #[test]
    fn older_claude_models_are_priced_at_the_vendor_table_rates() {
        // One million tokens of each bucket (input, cache read, 5-minute
        // write, 1-hour write, output) costs the sum of the five published
        // rates per million: Opus 4/4.1 15 + 1.50 + 18.75 + 30 + 75,
        // Sonnet 3.7 3 + 0.30 + 3.75 + 6 + 15, Haiku 3.5 0.80 + 0.08 + 1 +
        // 1.6 + 4, Opus 3 as Opus 4, Haiku 3 0.25 + 0.03 + 0.30 + 0.50 + 1.25.
        // The prompt is 4M tokens: Sonnet 4 bills it at its long-context
        // rates, 6 + 0.60 + 7.50 + 12 + 22.50.
        let each = tokens(1_000_000, 1_000_000, 1_000_000, 1_000_000, 1_000_000);
        for (model, want) in [
            ("claude-opus-4-20250514", 140.25),
            ("claude-opus-4-1-20250805", 140.25),
            ("claude-sonnet-4-20250514", 48.6),
            ("claude-3-7-sonnet-20250219", 28.05),
            ("claude-3-5-haiku-20241022", 7.48),
            ("claude-3-opus-20240229", 140.25),
            ("claude-3-haiku-20240307", 2.33),
        ] {
            let c = bundled_cost(model, "standard", &each, 0).unwrap();
            assert!((c - want).abs() < 1e-9, "{model}: {c} {want}");
        }
        // Each undated id names one dated model, and is priced as it.
        for (undated, want) in [
            ("claude-opus-4", 140.25),
            ("claude-opus-4-1", 140.25),
            ("claude-opus-4.1", 140.25),
            ("claude-sonnet-4", 48.6),
            ("claude-3-7-sonnet", 28.05),
            ("claude-3-5-haiku", 7.48),
            ("claude-3-opus", 140.25),
            ("claude-3-haiku", 2.33),
        ] {
            let c = bundled_cost(undated, "standard", &each, 0).unwrap();
            assert!((c - want).abs() < 1e-9, "{undated}: {c} {want}");
        }
        // Small requests of the same models, at base rates: Sonnet 4 with
        // 10 input and 20 output tokens = 10 × 3 + 20 × 15 = 330 $/M.
        let c = bundled_cost("claude-sonnet-4-20250514", "", &tokens(10, 0, 0, 0, 20), 0);
        assert!(close(c.unwrap(), 330.0 * M));
    }

    #[test]
    fn web_searches_cost_ten_dollars_a_thousand_on_top_of_tokens() {
        // Anthropic: $10 per 1,000 searches = $0.01 a search, plus tokens.
        // Sonnet 4.5, 1,000 input and 100 output tokens and 3 searches:
        // 1,000 × 3 + 100 × 15 = 4,500 $/M = $0.0045, + 3 × $0.01.
        let small = tokens(1_000, 0, 0, 0, 100);
        let c = bundled_cost("claude-sonnet-4-5", "", &small, 3).unwrap();
        assert!(close(c, 0.0045 + 0.03), "{c}");
        // Haiku 4.5 and the older models have it from the override file.
        for model in [
            "claude-haiku-4-5-20251001",
            "claude-sonnet-4-20250514",
            "claude-opus-4-1-20250805",
            "claude-3-5-haiku-20241022",
        ] {
            let c = bundled_cost(model, "", &tokens(0, 0, 0, 0, 0), 2).unwrap();
            assert!(close(c, 0.02), "{model}: {c}");
        }
        // A model without a search price: tokens alone are priced, a
        // request with a search is unpriced (Claude 3 Opus had no web
        // search tool).
        assert!(bundled_cost("claude-3-opus-20240229", "", &small, 0).is_some());
        assert_eq!(bundled_cost("claude-3-opus-20240229", "", &small, 1), None);
    }

    #[test]
    fn multipliers_scale_tokens_and_not_searches() {
        let t = PriceTable::parse(
            r#"{"v": 1, "models": {"m": {"input": 1e-06, "output": 2e-06, "fast": 2.0, "us": 1.1, "web_search": 0.01}}}"#,
        )
        .unwrap();
        let p = t.lookup("m").unwrap();
        // (100 × 1 + 50 × 2) $/M = $0.0002, × 2 (fast) × 1.1 (US), then
        // 4 searches × $0.01.
        let c = cost_with(
            p,
            Agent::Claude,
            "",
            flags::FAST | flags::GEO_US,
            &tokens(100, 0, 0, 0, 50),
            4,
        )
        .unwrap();
        assert!(close(c, 0.0002 * 2.0 * 1.1 + 0.04), "{c}");
        // A tier the model lacks leaves the request unpriced, searches or not.
        assert_eq!(
            cost_with(p, Agent::Claude, "priority", 0, &tokens(1, 0, 0, 0, 1), 4),
            None
        );
    }
}
