//! The stable-toolchain stand-in for the `fuzz/` target: arbitrary text and bytes fed to
//! the policy parsers (TOML and JSON) and then to validation must give a value or an
//! error, never a panic.

use mmsched_core::policy::{Policy, PolicySpec};
use proptest::prelude::*;

fn parse_and_validate(text: &str) {
    if let Ok(spec) = toml::from_str::<PolicySpec>(text) {
        let _ = Policy::try_from(spec);
    }
    if let Ok(spec) = serde_json::from_str::<PolicySpec>(text)
        && let Ok(p) = Policy::try_from(spec)
    {
        // A valid policy round-trips through its written-out document.
        assert_eq!(Policy::try_from(p.to_spec()).as_ref(), Ok(&p));
    }
}

/// Fragments of real policy documents, so random text reaches validation often.
fn near_policy_toml() -> impl Strategy<Value = String> {
    let key = prop::sample::select(vec![
        "version",
        "name",
        "weight_deadline",
        "weight_importance",
        "weight_battery",
        "battery_saver_below",
        "risk_boost_above",
        "risk_boost_deadline_weight",
        "dispatch",
        "heavy_classes",
        "slot_len_micros",
        "horizon_slots",
        "alpha",
        "beta",
        "gamma",
        "degraded_at",
        "critical_at",
        "evaluate_hz",
        "window",
        "smoothing",
        "enabled",
        "vision",
        "default",
    ]);
    let section = prop::sample::select(vec![
        "",
        "[arbiter]",
        "[slots]",
        "[ldti]",
        "[ldti.adaptive]",
        "[ldti.actions]",
        "[routing]",
        "[importance]",
    ]);
    let value = prop_oneof![
        any::<f64>().prop_map(|x| format!("{x:?}")),
        any::<i64>().prop_map(|x| x.to_string()),
        Just("\"edf\"".to_string()),
        Just("\"score\"".to_string()),
        Just("[\"llm\", \"\"]".to_string()),
        Just("nan".to_string()),
        Just("inf".to_string()),
        Just("-inf".to_string()),
        Just("true".to_string()),
        "\\PC{0,8}".prop_map(|s| format!("{s:?}")),
    ];
    prop::collection::vec((section, key, value), 0..12).prop_map(|lines| {
        lines
            .into_iter()
            .map(|(s, k, v)| format!("{s}\n{k} = {v}\n"))
            .collect()
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_text_never_panics(text in "\\PC{0,200}") {
        parse_and_validate(&text);
    }

    #[test]
    fn arbitrary_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..256)) {
        parse_and_validate(&String::from_utf8_lossy(&bytes));
    }

    #[test]
    fn near_policy_documents_never_panic(text in near_policy_toml()) {
        parse_and_validate(&text);
    }

    #[test]
    fn near_policy_json_never_panics(
        fields in prop::collection::vec((0usize..6, any::<f64>()), 0..6),
    ) {
        let names = ["weight_deadline", "weight_importance", "weight_battery",
                     "battery_saver_below", "risk_boost_above", "risk_boost_deadline_weight"];
        let body: Vec<String> = fields
            .iter()
            .map(|(i, x)| format!("\"{}\": {}", names[*i], if x.is_finite() { format!("{x:e}") } else { "1e999".into() }))
            .collect();
        parse_and_validate(&format!("{{\"arbiter\": {{{}}}}}", body.join(", ")));
    }
}
