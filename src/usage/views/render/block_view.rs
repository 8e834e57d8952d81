//! The `blocks` view: 5-hour blocks with their burn rate, and the active
//! block's projection against the plan's 5-hour limit when it is known.

use super::*;

/// A block's projection now: whether it is active, its projected cost
/// and tokens at its end, the plan's 5-hour limit (used percent, reset)
/// when known, and the share of that limit projected.
type Projection = (
    bool,
    Option<(f64, f64)>,
    Option<(f64, Option<i64>)>,
    Option<f64>,
);

fn projection(data: &Data, b: &Block) -> Projection {
    let active = b.active(data.now);
    let projected = if active { b.projected(data.now) } else { None };
    let limit = if active {
        five_hour_limit(data, b.agent)
    } else {
        None
    };
    let pct = match (projected, limit) {
        (Some((cost, _)), Some((used, _))) => {
            blocks::projected_percent(used, b.acc.totals().cost_usd, cost)
        }
        _ => None,
    };
    (active, projected, limit, pct)
}

/// The `blocks` view: 5-hour blocks of the picked slots per agent, with
/// their burn rate, and the active ones' projection.
pub(super) fn blocks_view(
    data: &Data,
    req: &Request,
    picked: Picked,
    unpriced: &Unpriced,
    format: Format,
) -> String {
    let per_agent = sum_by(picked.iter().map(|(_, k, acc)| ((k.0, k.1), **acc)));
    let list = blocks::blocks(
        per_agent
            .iter()
            .map(|((slot, agent), acc)| (*slot, *agent, acc)),
    );
    match format {
        Format::Json => blocks_json(data, req, &list, unpriced),
        Format::Csv => blocks_csv(data, &list),
        Format::Text(style) => blocks_text(data, req, &list, unpriced, style),
    }
}

fn blocks_json(data: &Data, req: &Request, list: &[Block], unpriced: &Unpriced) -> String {
    let rows = list
        .iter()
        .map(|b| {
            let (active, projected, limit, pct) = projection(data, b);
            let num = |v: Option<f64>| v.map_or(Value::Null, |v| Value::from(round_usd(v)));
            Value::Object(
                Object::new()
                    .with("agent", b.agent.name())
                    .with("start", b.start)
                    .with("end", b.end)
                    .with("first_at", b.acc.first_ts)
                    .with("last_at", b.acc.last_ts)
                    .with("active", active)
                    .with("totals", b.acc.totals().to_value())
                    .with("burn_usd_per_hour", num(b.burn_per_hour()))
                    .with(
                        "burn_tokens_per_hour",
                        b.tokens_per_hour()
                            .map_or(Value::Null, |t| Value::from(t.round() as u64)),
                    )
                    .with("projected_cost_usd", num(projected.map(|p| p.0)))
                    .with(
                        "projected_tokens",
                        projected.map_or(Value::Null, |p| Value::from(p.1.round() as u64)),
                    )
                    .with("limit_used_percent", num(limit.map(|l| l.0)))
                    .with("projected_percent", num(pct)),
            )
        })
        .collect();
    Value::Object(
        header(data, req, View::Blocks)
            .with("blocks", Value::Array(rows))
            .with("unpriced_models", unpriced_value(unpriced)),
    )
    .to_json()
        + "\n"
}

fn blocks_csv(data: &Data, list: &[Block]) -> String {
    let mut head = vec!["agent", "start", "end", "active"];
    head.extend(CSV_TOKENS);
    head.push("burn_usd_per_hour");
    let rows: Vec<Vec<String>> = list
        .iter()
        .map(|b| {
            let mut cells = vec![
                b.agent.name().to_string(),
                format_timestamp(b.start),
                format_timestamp(b.end),
                b.active(data.now).to_string(),
            ];
            cells.extend(csv_cells(&b.acc));
            cells.push(
                b.burn_per_hour()
                    .map(|r| Value::from(round_usd(r)).to_json())
                    .unwrap_or_default(),
            );
            cells
        })
        .collect();
    table::csv(&head, &rows)
}

fn blocks_text(
    data: &Data,
    req: &Request,
    list: &[Block],
    unpriced: &Unpriced,
    style: Style,
) -> String {
    let mut columns = vec![
        Column::text("Block start", 0),
        Column::text("Agent", 3),
        Column::text("Status", 4),
        Column::number("Requests", 1),
    ];
    columns.extend([
        Column::number("Total", 6),
        Column::number("Cost", 0),
        Column::number("Burn/h", 3),
    ]);
    let mut t = Table {
        columns,
        rows: Vec::new(),
    };
    for b in list {
        let status = if b.active(data.now) {
            format!("active, {} left", duration(b.end - data.now))
        } else {
            "ended".to_string()
        };
        t.rows.push((
            RowKind::Plain,
            vec![
                local_minute(data, b.start),
                b.agent.name().into(),
                status,
                group(b.acc.requests),
                group(b.acc.tokens.total()),
                cost_cell(&b.acc),
                b.burn_per_hour().map(dollars).unwrap_or_default(),
            ],
        ));
    }
    let mut lines = vec![title(data, req, View::Blocks)];
    if list.is_empty() {
        lines.push("No requests in this range.".into());
    } else {
        lines.extend(t.lines(style));
    }
    let mut all = SlotAcc::default();
    for b in list {
        all.merge(&b.acc);
    }
    lines.extend(notes(&all, unpriced));
    for b in list.iter().filter(|b| b.active(data.now)) {
        lines.push(active_line(data, b));
    }
    lines.join("\n") + "\n"
}

/// The line under the table for an active block: its sums so far, burn
/// rate and projection, and its share of the 5-hour limit when known.
fn active_line(data: &Data, b: &Block) -> String {
    let (_, projected, limit, pct) = projection(data, b);
    let t = b.acc.totals();
    let mut line = format!(
        "Active {} block {}–{}: {} tokens, {}",
        b.agent.name(),
        local_time(data, b.start),
        local_time(data, b.end),
        group(t.tokens.total()),
        cost_cell(&b.acc),
    );
    match (b.burn_per_hour(), projected) {
        (Some(rate), Some((cost, tokens))) => line.push_str(&format!(
            "; burning {}/h, projected {} and {} tokens at {}",
            dollars(rate),
            dollars(cost),
            group(tokens.round() as u64),
            local_time(data, b.end)
        )),
        _ => line.push_str(NO_RATE_YET),
    }
    if let (Some((used, _)), Some(p)) = (limit, pct) {
        line.push_str(&format!(
            "; 5h limit {} used, projected {}",
            percent(used),
            percent(p)
        ));
    }
    line + "."
}
