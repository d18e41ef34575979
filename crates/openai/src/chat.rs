//! `POST /v1/chat/completions`, `POST /v1/completions` and `GET /v1/models`: the request
//! read into a [`Prompt`] with its checks (each bad field named with its fix), then run by
//! [`crate::generate`].
//!
//! Gemma-3 270M here is a base model, so a chat is written out as a transcript it
//! continues — the system message, then `User: …` and `Assistant: …` lines, ending with
//! `Assistant:` — and generation stops at the next `\nUser:` (or the request's `stop`).

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::Response;
use mmsched_pipeline::request::{Prompt, Sampling};
use mmsched_pipeline::stats::Kind;
use serde_json::{Value, json};

use crate::answer::{invalid, json_ok, model_not_found};
use crate::generate::{Generation, run};
use crate::{LLM_ID, OCR_ID, OpenAi};

/// Largest chat or completion request body.
pub const CHAT_BODY_LIMIT: usize = 256 * 1024;
/// Tokens generated when the request does not say.
const DEFAULT_MAX_TOKENS: u32 = 128;
/// Where a chat transcript's next turn starts: the answer ends there.
const CHAT_STOP: &str = "\nUser:";

/// `GET /v1/models`.
pub async fn models(State(api): State<Arc<OpenAi>>) -> Response {
    let mut data = Vec::new();
    let (text_id, speech_id) = (api.text_model_id(), api.speech_model_id());
    for (id, kind) in [
        (text_id.as_str(), Kind::Llm),
        (speech_id.as_str(), Kind::Asr),
        (OCR_ID, Kind::Vision),
    ] {
        if api.client.has(kind) {
            data.push(json!({"id": id, "object": "model", "created": 0, "owned_by": "mmsched"}));
        }
    }
    json_ok(json!({"object": "list", "data": data}))
}

/// `POST /v1/chat/completions`.
pub async fn chat_completions(
    State(api): State<Arc<OpenAi>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let read = parse_body(&body).and_then(|req| {
        let (text, stop) = chat_prompt(&api, &req)?;
        let mut stops = stops(&req)?;
        stops.extend(stop.map(String::from));
        Ok((req, text, stops))
    });
    match read {
        Ok((req, text, stops)) => generate(api, headers, &req, text, stops, true).await,
        Err(r) => r,
    }
}

/// `POST /v1/completions`.
pub async fn completions(
    State(api): State<Arc<OpenAi>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let read = parse_body(&body).and_then(|req| {
        let text = completion_prompt(&req)?;
        let stops = stops(&req)?;
        Ok((req, text, stops))
    });
    match read {
        Ok((req, text, stops)) => generate(api, headers, &req, text, stops, false).await,
        Err(r) => r,
    }
}

fn parse_body(body: &[u8]) -> Result<Value, Response> {
    let v: Value = serde_json::from_slice(body).map_err(|e| {
        invalid(
            format!("the body is not JSON: {e}; send a JSON object like {{\"model\": \"{LLM_ID}\", \"messages\": [...]}}"),
            None,
        )
    })?;
    if !v.is_object() {
        return Err(invalid("the body must be a JSON object".into(), None));
    }
    Ok(v)
}

/// A completion's `prompt`: one non-empty string.
fn completion_prompt(req: &Value) -> Result<String, Response> {
    match &req["prompt"] {
        Value::String(s) if !s.trim().is_empty() => Ok(s.clone()),
        Value::Array(a) if a.len() == 1 && a[0].as_str().is_some_and(|s| !s.trim().is_empty()) => {
            Ok(a[0].as_str().unwrap_or_default().to_string())
        }
        _ => Err(invalid(
            "`prompt` must be a non-empty string (one prompt per request)".into(),
            Some("prompt"),
        )),
    }
}

/// A message's text: a string, or the text parts of an array of content parts.
fn content_text(content: &Value) -> Option<String> {
    match content {
        Value::String(s) => Some(s.clone()),
        Value::Array(parts) => Some(
            parts
                .iter()
                .filter(|p| p["type"] == "text")
                .filter_map(|p| p["text"].as_str())
                .collect::<Vec<_>>()
                .join("\n"),
        ),
        Value::Null => Some(String::new()),
        _ => None,
    }
}

/// The chat written out as a transcript the base model continues.
fn chat_messages(req: &Value) -> Result<Vec<(String, String)>, Response> {
    let Some(messages) = req["messages"].as_array().filter(|m| !m.is_empty()) else {
        return Err(invalid(
            "`messages` must be a non-empty array of {\"role\", \"content\"}".into(),
            Some("messages"),
        ));
    };
    let mut out = Vec::with_capacity(messages.len());
    for (i, m) in messages.iter().enumerate() {
        let text = content_text(&m["content"]).ok_or_else(|| {
            invalid(
                format!("messages[{i}].content must be a string or an array of text parts"),
                Some("messages"),
            )
        })?;
        let role = match m["role"].as_str() {
            Some("system" | "developer") => "system",
            Some("user") => "user",
            Some("assistant") => "assistant",
            other => {
                return Err(invalid(
                    format!(
                        "messages[{i}].role is {other:?}; use \"system\", \"user\" or \"assistant\""
                    ),
                    Some("messages"),
                ));
            }
        };
        out.push((role.to_string(), text.trim().to_string()));
    }
    Ok(out)
}

/// A chat as a plain transcript, for a base model without a chat template (the default).
fn transcript(messages: &[(String, String)]) -> String {
    let mut out = String::new();
    for (role, text) in messages {
        match role.as_str() {
            "system" => {
                out.push_str(text);
                out.push_str("\n\n");
            }
            "user" => out.push_str(&format!("User: {text}\n")),
            _ => out.push_str(&format!("Assistant: {text}\n")),
        }
    }
    out.push_str("Assistant:");
    out
}

/// The prompt of a chat and the stops it adds: written with the text model's chat
/// template where it has one (its end-of-turn token then ends the answer), else as a
/// transcript that ends at the next `User:` turn.
fn chat_prompt(api: &OpenAi, req: &Value) -> Result<(String, Option<&'static str>), Response> {
    let messages = chat_messages(req)?;
    match api.client.format_chat(&messages) {
        Some(Ok(text)) => Ok((text, None)),
        Some(Err(e)) => Err(invalid(e.to_string(), Some("messages"))),
        None => Ok((transcript(&messages), Some(CHAT_STOP))),
    }
}

/// The request's `stop`: a string or an array of up to 4 strings.
pub(crate) fn stops(req: &Value) -> Result<Vec<String>, Response> {
    let bad = || {
        invalid(
            "`stop` must be a string or an array of up to 4 non-empty strings".into(),
            Some("stop"),
        )
    };
    match &req["stop"] {
        Value::Null => Ok(Vec::new()),
        Value::String(s) if !s.is_empty() => Ok(vec![s.clone()]),
        Value::Array(a) if a.len() <= 4 => a
            .iter()
            .map(|s| s.as_str().filter(|s| !s.is_empty()).map(String::from))
            .collect::<Option<Vec<_>>>()
            .ok_or_else(bad),
        _ => Err(bad()),
    }
}

/// `max_completion_tokens` or `max_tokens`, if given.
fn max_tokens(req: &Value) -> Result<Option<u32>, Response> {
    let given = req
        .get("max_completion_tokens")
        .filter(|v| !v.is_null())
        .or_else(|| req.get("max_tokens").filter(|v| !v.is_null()));
    match given {
        None => Ok(None),
        Some(v) => v
            .as_u64()
            .filter(|&n| n >= 1)
            .map(|n| Some(u32::try_from(n).unwrap_or(u32::MAX)))
            .ok_or_else(|| {
                invalid(
                    "`max_tokens` must be a whole number of at least 1".into(),
                    Some("max_tokens"),
                )
            }),
    }
}

/// `temperature` (0 to 2) and `seed`.
fn sampling(req: &Value) -> Result<Sampling, Response> {
    let temperature = match &req["temperature"] {
        Value::Null => None,
        v => Some(
            v.as_f64()
                .filter(|t| (0.0..=2.0).contains(t))
                .ok_or_else(|| {
                    invalid(
                        "`temperature` must be a number from 0 to 2".into(),
                        Some("temperature"),
                    )
                })?,
        ),
    };
    let seed = match &req["seed"] {
        Value::Null => 0,
        v => v
            .as_u64()
            .ok_or_else(|| invalid("`seed` must be a whole number".into(), Some("seed")))?,
    };
    Ok(Sampling { temperature, seed })
}

/// The prompt `text` with `fields`' `max_tokens`, `temperature` and `seed` (the request
/// body's, or the v2 protocol's parameters) and `stops`, and its length in tokens; 400
/// unless prompt and answer fit the model's context.
pub(crate) fn prompt_for(
    api: &OpenAi,
    fields: &Value,
    text: String,
    stops: Vec<String>,
) -> Result<(Prompt, usize), Response> {
    let asked = max_tokens(fields)?;
    let sampling = sampling(fields)?;
    let prompt_tokens = api.client.count_tokens(&text).unwrap_or(0);
    let context = api.client.context_tokens().unwrap_or(0);
    let room = u32::try_from(context.saturating_sub(prompt_tokens)).unwrap_or(u32::MAX);
    // Without `max_tokens`, the answer may fill what the context leaves, up to the default.
    let max = asked.unwrap_or(DEFAULT_MAX_TOKENS.min(room));
    if prompt_tokens >= context || max > room || max == 0 {
        return Err(invalid(
            format!(
                "the prompt has {prompt_tokens} tokens and max_tokens is {max}: together at most the model's context of {context} tokens; shorten the prompt or lower max_tokens"
            ),
            Some("max_tokens"),
        ));
    }
    let prompt = Prompt {
        text,
        max_tokens: max,
        sampling,
        stops,
    };
    Ok((prompt, prompt_tokens))
}

/// Reads the common fields, checks the prompt against the model's context and runs the
/// generation.
async fn generate(
    api: Arc<OpenAi>,
    headers: HeaderMap,
    req: &Value,
    text: String,
    stops: Vec<String>,
    chat: bool,
) -> Response {
    if !api.client.has(Kind::Llm) {
        return model_not_found(
            "no language model is loaded: start the server with --models".into(),
        );
    }
    let served = api.text_model_id();
    let model = req["model"].as_str().unwrap_or(&served).to_string();
    if model != served {
        return model_not_found(format!(
            "model {model:?} is not served here; use \"{served}\" (GET /v1/models lists the models)"
        ));
    }
    let (prompt, prompt_tokens) = match prompt_for(&api, req, text, stops) {
        Ok(p) => p,
        Err(r) => return r,
    };
    let g = Generation {
        prompt,
        prompt_tokens,
        stream: req["stream"].as_bool().unwrap_or(false),
        model,
        chat,
    };
    run(api, headers, g).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_chat_is_written_as_a_transcript() {
        let req = json!({"messages": [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": [{"type": "text", "text": "Hi"}]},
        ]});
        let p = transcript(&chat_messages(&req).expect("valid"));
        assert_eq!(p, "Be brief.\n\nUser: Hi\nAssistant:");
        assert!(chat_messages(&json!({"messages": []})).is_err());
        assert!(chat_messages(&json!({"messages": [{"role": "robot", "content": "x"}]})).is_err());
    }

    #[test]
    fn bad_fields_are_refused_with_their_name() {
        for (req, param) in [
            (json!({"max_tokens": 0}), "max_tokens"),
            (json!({"temperature": 3}), "temperature"),
            (json!({"seed": -1}), "seed"),
            (json!({"stop": [1]}), "stop"),
            (json!({"prompt": ""}), "prompt"),
        ] {
            let refused = max_tokens(&req)
                .err()
                .or_else(|| sampling(&req).err())
                .or_else(|| stops(&req).err())
                .or_else(|| completion_prompt(&req).err());
            let r = refused.unwrap_or_else(|| panic!("{req} was accepted"));
            assert_eq!(r.status(), axum::http::StatusCode::BAD_REQUEST, "{param}");
        }
    }
}
