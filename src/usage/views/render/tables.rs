//! The views whose rows are sums by one key: `daily`, `weekly` and
//! `monthly` (a period), `models` and `dirs`.

use super::*;

/// `daily`, `weekly` or `monthly`: a row per period, with its models.
pub(super) fn period_view(
    (data, req, format): (&Data, &Request, Format),
    p: Period,
    picked: Picked,
    unpriced: &Unpriced,
) -> String {
    let view = View::Period(p);
    let rows = rows_by(picked, |day, _| period_start(p, day))
        .into_iter()
        .map(|(start, (acc, models))| Row {
            labels: vec![period_label(p, start), model_names(&models)],
            csv: None,
            json: Object::new()
                .with("period", period_label(p, start))
                .with("models", models_names_value(&models)),
            acc,
            models,
        })
        .collect();
    let head = match p {
        Period::Day => "Date",
        Period::Week => "Week of",
        Period::Month => "Month",
    };
    let columns = [Column::text(head, 0), Column::flexible("Models", 3)];
    tabular(
        (data, req, format),
        view,
        (&columns, &["period", "models"]),
        rows,
        unpriced,
    )
}

/// `models`: a row per agent and model, the costliest first.
pub(super) fn models_view(
    (data, req, format): (&Data, &Request, Format),
    picked: Picked,
    unpriced: &Unpriced,
) -> String {
    let view = View::Models;
    let mut rows: Vec<Row> = rows_by(picked, |_, k| (k.1, k.2.clone()))
        .into_iter()
        .map(|((agent, model), (acc, _))| Row {
            labels: vec![agent.name().into(), model.to_string()],
            csv: None,
            json: Object::new()
                .with("agent", agent.name())
                .with("model", &*model)
                .with("priced", acc.unpriced_requests == 0),
            acc,
            models: BTreeMap::new(),
        })
        .collect();
    sorted_rows(&mut rows, |a, b| {
        by_cost(&a.acc, &b.acc).then(a.labels.cmp(&b.labels))
    });
    let columns = [Column::text("Agent", 0), Column::flexible("Model", 0)];
    let req = Request {
        breakdown: false,
        ..req.clone()
    };
    tabular(
        (data, &req, format),
        view,
        (&columns, &["agent", "model"]),
        rows.into(),
        unpriced,
    )
}

/// `dirs`: a row per directory, the most tokens first.
pub(super) fn dirs_view(
    (data, req, format): (&Data, &Request, Format),
    picked: Picked,
    unpriced: &Unpriced,
) -> String {
    let view = View::Dirs;
    let mut rows: Vec<Row> = rows_by(picked, |_, k| k.3.clone())
        .into_iter()
        .map(|(cwd, (acc, models))| {
            let agents = agents_of(&models);
            Row {
                labels: vec![cwd.to_string(), agents.join(", ")],
                csv: None,
                json: Object::new().with("directory", &*cwd).with(
                    "agents",
                    Value::Array(agents.iter().map(|a| Value::from(*a)).collect()),
                ),
                acc,
                models,
            }
        })
        .collect();
    sorted_rows(&mut rows, |a, b| {
        b.acc
            .tokens
            .total()
            .cmp(&a.acc.tokens.total())
            .then(by_cost(&a.acc, &b.acc))
            .then(a.labels.cmp(&b.labels))
    });
    let columns = [Column::flexible("Directory", 0), Column::text("Agents", 3)];
    tabular(
        (data, req, format),
        view,
        (&columns, &["directory", "agents"]),
        rows.into(),
        unpriced,
    )
}
