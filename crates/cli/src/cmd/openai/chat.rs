//! `POST /v1/chat/completions`, `POST /v1/completions` (whole answers or server-sent
//! events with `stream: true`) and `GET /v1/models`.
//!
//! Gemma-3 270M here is a base model, so a chat is written out as a transcript it
//! continues — the system message, then `User: …` and `Assistant: …` lines, ending with
//! `Assistant:` — and generation stops at the next `\nUser:` (or the request's `stop`).

use std::sync::Arc;

use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use mmsched_backends::Backend;
use mmsched_backends::llm::LlmSession;
use mmsched_pipeline::engines::{Shared, lock};
use mmsched_pipeline::jobs::{PREFILL_CHUNK_TOKENS, work_error};
use mmsched_pipeline::service::JobEvent;
use mmsched_runtime::sched::{StepOutcome, Work, WorkError};
use serde_json::{Value, json};
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender, unbounded_channel};

use super::{
    ASR_ID, ApiClass, LLM_ID, ModelApi, OCR_ID, api_error, failed_answer, invalid, json_ok,
    mark_deadline, publish, shed_answer, unix_now,
};

/// Largest chat or completion request body.
pub const CHAT_BODY_LIMIT: usize = 256 * 1024;
/// Tokens generated when the request does not say.
const DEFAULT_MAX_TOKENS: usize = 128;
/// Where a chat transcript's next turn starts: the answer ends there.
const CHAT_STOP: &str = "\nUser:";

/// `GET /v1/models`.
pub async fn models(State(api): State<Arc<ModelApi>>) -> Response {
    let mut data = Vec::new();
    let e = &api.engines;
    for (id, present) in [
        (LLM_ID, e.llm.is_some()),
        (ASR_ID, e.asr.is_some()),
        (OCR_ID, !e.ocr.is_empty()),
    ] {
        if present {
            data.push(json!({"id": id, "object": "model", "created": 0, "owned_by": "mmsched"}));
        }
    }
    json_ok(json!({"object": "list", "data": data}))
}

/// What one generation step sends to the request.
enum Msg {
    Token(String),
    Finish(&'static str),
    Event(JobEvent),
}

/// A request as the handlers share it.
struct Generation {
    prompt: String,
    max_tokens: usize,
    temperature: Option<f64>,
    seed: u64,
    stop: Vec<String>,
    stream: bool,
    model: String,
}

/// `POST /v1/chat/completions`.
pub async fn chat_completions(
    State(api): State<Arc<ModelApi>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let req = match parse_body(&body) {
        Ok(v) => v,
        Err(r) => return r,
    };
    let prompt = match chat_prompt(&req) {
        Ok(p) => p,
        Err(r) => return r,
    };
    let mut stop = match stops(&req) {
        Ok(s) => s,
        Err(r) => return r,
    };
    stop.push(CHAT_STOP.into());
    generate(api, headers, &req, prompt, stop, true).await
}

/// `POST /v1/completions`.
pub async fn completions(
    State(api): State<Arc<ModelApi>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let req = match parse_body(&body) {
        Ok(v) => v,
        Err(r) => return r,
    };
    let prompt = match &req["prompt"] {
        Value::String(s) if !s.trim().is_empty() => s.clone(),
        Value::Array(a) if a.len() == 1 && a[0].as_str().is_some_and(|s| !s.trim().is_empty()) => {
            a[0].as_str().unwrap_or_default().to_string()
        }
        _ => {
            return invalid(
                "`prompt` must be a non-empty string (one prompt per request)".into(),
                Some("prompt"),
            );
        }
    };
    let stop = match stops(&req) {
        Ok(s) => s,
        Err(r) => return r,
    };
    generate(api, headers, &req, prompt, stop, false).await
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
fn chat_prompt(req: &Value) -> Result<String, Response> {
    let Some(messages) = req["messages"].as_array().filter(|m| !m.is_empty()) else {
        return Err(invalid(
            "`messages` must be a non-empty array of {\"role\", \"content\"}".into(),
            Some("messages"),
        ));
    };
    let mut out = String::new();
    for (i, m) in messages.iter().enumerate() {
        let text = content_text(&m["content"]).ok_or_else(|| {
            invalid(
                format!("messages[{i}].content must be a string or an array of text parts"),
                Some("messages"),
            )
        })?;
        match m["role"].as_str() {
            Some("system" | "developer") => {
                out.push_str(text.trim());
                out.push_str("\n\n");
            }
            Some("user") => out.push_str(&format!("User: {}\n", text.trim())),
            Some("assistant") => out.push_str(&format!("Assistant: {}\n", text.trim())),
            other => {
                return Err(invalid(
                    format!(
                        "messages[{i}].role is {other:?}; use \"system\", \"user\" or \"assistant\""
                    ),
                    Some("messages"),
                ));
            }
        }
    }
    out.push_str("Assistant:");
    Ok(out)
}

/// The request's `stop`: a string or an array of up to 4 strings.
fn stops(req: &Value) -> Result<Vec<String>, Response> {
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

/// Reads the common fields and runs the generation.
async fn generate(
    api: Arc<ModelApi>,
    headers: HeaderMap,
    req: &Value,
    prompt: String,
    stop: Vec<String>,
    chat: bool,
) -> Response {
    let Some(llm) = api.engines.llm.clone() else {
        return api_error(
            StatusCode::NOT_FOUND,
            "model_not_found",
            "no language model is loaded: start the server with --models".into(),
            Some("model"),
        );
    };
    let model = req["model"].as_str().unwrap_or(LLM_ID).to_string();
    if model != LLM_ID {
        return api_error(
            StatusCode::NOT_FOUND,
            "model_not_found",
            format!(
                "model {model:?} is not served here; use \"{LLM_ID}\" (GET /v1/models lists the models)"
            ),
            Some("model"),
        );
    }
    let max_tokens = match req
        .get("max_completion_tokens")
        .filter(|v| !v.is_null())
        .or_else(|| req.get("max_tokens").filter(|v| !v.is_null()))
    {
        None => None,
        Some(v) => match v.as_u64().filter(|&n| n >= 1) {
            Some(n) => Some(usize::try_from(n).unwrap_or(usize::MAX)),
            None => {
                return invalid(
                    "`max_tokens` must be a whole number of at least 1".into(),
                    Some("max_tokens"),
                );
            }
        },
    };
    let temperature = match &req["temperature"] {
        Value::Null => None,
        v => match v.as_f64().filter(|t| (0.0..=2.0).contains(t)) {
            Some(t) => Some(t),
            None => {
                return invalid(
                    "`temperature` must be a number from 0 to 2".into(),
                    Some("temperature"),
                );
            }
        },
    };
    let seed = match &req["seed"] {
        Value::Null => 0,
        v => match v.as_u64() {
            Some(s) => s,
            None => return invalid("`seed` must be a whole number".into(), Some("seed")),
        },
    };
    let stream = req["stream"].as_bool().unwrap_or(false);
    let g = Generation {
        prompt,
        max_tokens: max_tokens.unwrap_or(DEFAULT_MAX_TOKENS),
        temperature,
        seed,
        stop,
        stream,
        model,
    };
    run_generation(api, llm, headers, g, max_tokens.is_none(), chat).await
}

async fn run_generation(
    api: Arc<ModelApi>,
    llm: Shared<LlmSession>,
    headers: HeaderMap,
    mut g: Generation,
    default_max: bool,
    chat: bool,
) -> Response {
    let started = std::time::Instant::now();
    let slot = match api.admit(ApiClass::Text) {
        Ok(s) => s,
        Err(r) => return r,
    };
    let terms = match api.terms(ApiClass::Text, &headers) {
        Ok(t) => t,
        Err(r) => return r,
    };
    let deadline_ms = terms.deadline_ms;
    // The context bounds prompt + answer.
    let (prompt_tokens, context) = {
        let s = lock(&llm);
        (s.tokenizer().encode(&g.prompt), s.max_seq_len())
    };
    let room = context.saturating_sub(prompt_tokens.len());
    if default_max {
        g.max_tokens = g.max_tokens.min(room);
    }
    if prompt_tokens.len() >= context || g.max_tokens > room || g.max_tokens == 0 {
        return invalid(
            format!(
                "the prompt has {} tokens and max_tokens is {}: together at most the model's context of {context} tokens; shorten the prompt or lower max_tokens",
                prompt_tokens.len(),
                g.max_tokens
            ),
            Some("max_tokens"),
        );
    }
    let n_prompt = prompt_tokens.len();
    // One request at a time holds the session (its KV cache); the others wait their turn.
    let turn = api.llm_turn.clone().lock_owned().await;
    let (tx, mut rx) = unbounded_channel();
    let work = GenerationWork {
        model: llm,
        tokens: Some(prompt_tokens),
        temperature: g.temperature,
        seed: g.seed,
        max_tokens: g.max_tokens,
        produced: 0,
        prompt_done: false,
        granted: 1,
        filter: StopFilter::new(std::mem::take(&mut g.stop)),
        tx: tx.clone(),
    };
    let job = api.job(ApiClass::Text, terms, Box::new(work));
    let sink = Box::new(move |e: JobEvent| {
        if !matches!(e, JobEvent::Step { .. }) {
            let _ = tx.send(Msg::Event(e));
        }
    });
    if api.service.submit_to(job, sink).is_err() {
        return failed_answer("the scheduler has stopped".into());
    }
    static NEXT_ID: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
    let id = format!(
        "{}-{}-{}",
        if chat { "chatcmpl" } else { "cmpl" },
        unix_now(),
        NEXT_ID.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    );
    let created = unix_now();
    // Nothing is sent before the first token: a shed request still gets its 503.
    let first = rx.recv().await;
    match first {
        None => failed_answer("the generation ended without an answer".into()),
        Some(Msg::Event(JobEvent::Shed)) => shed_answer(ApiClass::Text, deadline_ms),
        Some(Msg::Event(JobEvent::Failed(why))) => failed_answer(why),
        Some(first) => {
            let out = Output {
                id,
                created,
                model: g.model.clone(),
                chat,
                prompt_tokens: n_prompt,
                deadline_ms,
                started,
                feed: api.results.clone(),
            };
            if g.stream {
                stream_answer(out, first, rx, (slot, turn))
            } else {
                whole_answer(&out, first, &mut rx).await
            }
        }
    }
}

/// What the answer says about the request.
struct Output {
    id: String,
    created: u64,
    model: String,
    chat: bool,
    prompt_tokens: usize,
    deadline_ms: u64,
    /// When the request arrived.
    started: std::time::Instant,
    feed: tokio::sync::broadcast::Sender<String>,
}

impl Output {
    fn publish(&self, on_time: bool, text: &str) {
        let kind = if self.chat { "chat" } else { "completion" };
        publish(
            &self.feed,
            kind,
            self.deadline_ms,
            self.started,
            on_time,
            text,
        );
    }

    fn usage(&self, completion: usize) -> Value {
        json!({
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": completion,
            "total_tokens": self.prompt_tokens + completion,
        })
    }

    fn mmsched(&self, on_time: bool) -> Value {
        json!({"deadline_ms": self.deadline_ms, "deadline_missed": !on_time})
    }

    /// One streamed chunk with `text` (and the finish reason on the last).
    fn chunk(&self, text: Option<&str>, finish: Option<&str>, first: bool) -> Value {
        if self.chat {
            let mut delta = serde_json::Map::new();
            if first {
                delta.insert("role".into(), json!("assistant"));
            }
            if let Some(t) = text {
                delta.insert("content".into(), json!(t));
            }
            json!({
                "id": self.id, "object": "chat.completion.chunk", "created": self.created,
                "model": self.model,
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
            })
        } else {
            json!({
                "id": self.id, "object": "text_completion", "created": self.created,
                "model": self.model,
                "choices": [{"index": 0, "text": text.unwrap_or(""), "finish_reason": finish}],
            })
        }
    }
}

/// Collects the whole answer.
async fn whole_answer(out: &Output, first: Msg, rx: &mut UnboundedReceiver<Msg>) -> Response {
    let mut text = String::new();
    let mut tokens = 0;
    let mut finish = "length";
    let mut msg = Some(first);
    let on_time = loop {
        match msg {
            Some(Msg::Token(t)) => {
                tokens += 1;
                text.push_str(&t);
            }
            Some(Msg::Finish(f)) => finish = f,
            Some(Msg::Event(JobEvent::Done { on_time, .. })) => break on_time,
            // Shed between two tokens (past the deadline): what was generated is the answer.
            Some(Msg::Event(JobEvent::Shed)) => break false,
            Some(Msg::Event(JobEvent::Failed(why))) => return failed_answer(why),
            Some(Msg::Event(JobEvent::Step { .. })) => {}
            None => break false,
        }
        msg = rx.recv().await;
    };
    out.publish(on_time, &text);
    let body = if out.chat {
        json!({
            "id": out.id, "object": "chat.completion", "created": out.created, "model": out.model,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text.trim_start()}, "finish_reason": finish}],
            "usage": out.usage(tokens),
            "mmsched": out.mmsched(on_time),
        })
    } else {
        json!({
            "id": out.id, "object": "text_completion", "created": out.created, "model": out.model,
            "choices": [{"index": 0, "text": text, "finish_reason": finish}],
            "usage": out.usage(tokens),
            "mmsched": out.mmsched(on_time),
        })
    };
    mark_deadline(json_ok(body), on_time)
}

/// Streams the answer as server-sent events; `held` (the request's place and its turn on
/// the model) is released when the stream ends.
fn stream_answer<H: Send + 'static>(
    out: Output,
    first: Msg,
    rx: UnboundedReceiver<Msg>,
    held: H,
) -> Response {
    struct State<H> {
        out: Output,
        rx: UnboundedReceiver<Msg>,
        pending: Option<Msg>,
        first: bool,
        finish: &'static str,
        tokens: usize,
        text: String,
        done: bool,
        _held: H,
    }
    let state = State {
        out,
        rx,
        pending: Some(first),
        first: true,
        finish: "length",
        tokens: 0,
        text: String::new(),
        done: false,
        _held: held,
    };
    let events = futures_util::stream::unfold(state, |mut s| async move {
        if s.done {
            return None;
        }
        loop {
            let msg = match s.pending.take() {
                Some(m) => Some(m),
                None => s.rx.recv().await,
            };
            let on_time = match msg {
                Some(Msg::Token(t)) => {
                    s.tokens += 1;
                    // A chat answer starts after "Assistant:"; a completion continues the
                    // prompt, where a leading space is part of the text.
                    let text = if s.first && s.out.chat {
                        t.trim_start().to_string()
                    } else {
                        t
                    };
                    s.text.push_str(&text);
                    let chunk = s.out.chunk(Some(&text), None, s.first);
                    s.first = false;
                    return Some((Ok::<_, std::convert::Infallible>(sse(&chunk)), s));
                }
                Some(Msg::Finish(f)) => {
                    s.finish = f;
                    continue;
                }
                Some(Msg::Event(JobEvent::Step { .. })) => continue,
                Some(Msg::Event(JobEvent::Done { on_time, .. })) => on_time,
                Some(Msg::Event(_)) | None => false,
            };
            // The last chunk: the finish reason, usage and whether the deadline was met.
            let mut last = s.out.chunk(None, Some(s.finish), s.first);
            last["usage"] = s.out.usage(s.tokens);
            last["mmsched"] = s.out.mmsched(on_time);
            s.out.publish(on_time, &s.text);
            s.done = true;
            let text = format!("{}data: [DONE]\n\n", sse(&last));
            return Some((Ok(text), s));
        }
    });
    super::event_stream(Body::from_stream(events))
}

fn sse(v: &Value) -> String {
    format!("data: {v}\n\n")
}

/// Holds back text that may be the start of a stop sequence.
struct StopFilter {
    stops: Vec<String>,
    pending: String,
}

impl StopFilter {
    fn new(stops: Vec<String>) -> Self {
        Self {
            stops,
            pending: String::new(),
        }
    }

    /// Adds `text`; returns what may be sent now and whether a stop sequence was reached
    /// (then the text before it is all that is sent).
    fn push(&mut self, text: &str) -> (String, bool) {
        self.pending.push_str(text);
        if let Some(at) = self
            .stops
            .iter()
            .filter_map(|s| self.pending.find(s.as_str()))
            .min()
        {
            let out = self.pending[..at].to_string();
            self.pending.clear();
            return (out, true);
        }
        // Keep the longest tail that is a prefix of a stop sequence.
        let keep = self
            .stops
            .iter()
            .flat_map(|s| {
                (1..s.len().min(self.pending.len() + 1))
                    .rev()
                    .filter(|&n| s.is_char_boundary(n))
                    .find(|&n| self.pending.ends_with(&s[..n]))
            })
            .max()
            .unwrap_or(0);
        let cut = self.pending.len() - keep;
        let out = self.pending[..cut].to_string();
        self.pending.drain(..cut);
        (out, false)
    }

    /// What is held back, once generation has ended.
    fn flush(&mut self) -> String {
        std::mem::take(&mut self.pending)
    }
}

/// One request's generation, stepped by the scheduler: prompt chunks, then one token per
/// step. It ends at a stop token or sequence, at `max_tokens`, or when the client has gone.
struct GenerationWork {
    model: Shared<LlmSession>,
    /// The prompt, until the first step starts the sequence.
    tokens: Option<Vec<u32>>,
    temperature: Option<f64>,
    seed: u64,
    max_tokens: usize,
    produced: usize,
    prompt_done: bool,
    granted: usize,
    filter: StopFilter,
    tx: UnboundedSender<Msg>,
}

impl GenerationWork {
    fn finish(&mut self, reason: &'static str) -> Result<StepOutcome, WorkError> {
        let rest = self.filter.flush();
        if !rest.is_empty() {
            let _ = self.tx.send(Msg::Token(rest));
        }
        let _ = self.tx.send(Msg::Finish(reason));
        Ok(StepOutcome::Finished)
    }
}

impl Work for GenerationWork {
    fn grant_threads(&mut self, threads: usize) {
        self.granted = threads.max(1);
    }

    fn step(&mut self) -> Result<StepOutcome, WorkError> {
        if self.tx.is_closed() {
            // The client has gone: stop spending the device on it.
            return Ok(StepOutcome::Finished);
        }
        let mut session = lock(&self.model);
        // An engine with a fixed thread count ignores the grant.
        let _ = session.grant_threads(self.granted);
        if let Some(tokens) = self.tokens.take() {
            session.set_sampling(self.temperature, self.seed);
            session
                .start_tokens(tokens)
                .map_err(|e| work_error("text generation", e))?;
        }
        let token = if self.prompt_done {
            session.step().map(Some)
        } else {
            session.prefill_chunk(PREFILL_CHUNK_TOKENS)
        }
        .map_err(|e| work_error("text generation", e))?;
        drop(session);
        let Some(token) = token else {
            return Ok(StepOutcome::Yield);
        };
        self.prompt_done = true;
        if token.stop {
            return self.finish("stop");
        }
        self.produced += 1;
        let (text, stopped) = self.filter.push(&token.text);
        if !text.is_empty() {
            let _ = self.tx.send(Msg::Token(text));
        }
        if stopped {
            return self.finish("stop");
        }
        if self.produced >= self.max_tokens {
            return self.finish("length");
        }
        Ok(StepOutcome::Yield)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stop_sequence_split_over_tokens_is_never_sent() {
        let mut f = StopFilter::new(vec!["\nUser:".into()]);
        assert_eq!(f.push(" Red"), (" Red".into(), false));
        assert_eq!(f.push(", green.\nUs"), (", green.".into(), false));
        assert_eq!(f.push("er: and"), (String::new(), true));
        let mut f = StopFilter::new(vec!["\nUser:".into()]);
        assert_eq!(f.push("a\nU"), ("a".into(), false));
        assert_eq!(f.push("nder"), ("\nUnder".into(), false));
        assert_eq!(f.flush(), "");
    }

    #[test]
    fn a_chat_is_written_as_a_transcript() {
        let req = json!({"messages": [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": [{"type": "text", "text": "Hi"}]},
        ]});
        let p = chat_prompt(&req).expect("valid");
        assert_eq!(p, "Be brief.\n\nUser: Hi\nAssistant:");
        assert!(chat_prompt(&json!({"messages": []})).is_err());
        assert!(chat_prompt(&json!({"messages": [{"role": "robot", "content": "x"}]})).is_err());
    }
}
