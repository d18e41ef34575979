//! Running a chat or completion request on the runtime and answering it: whole (one JSON
//! body) or streamed as server-sent events, one chunk per token as the runtime makes it,
//! then a last chunk with the finish reason, the usage and whether the deadline was met,
//! then `data: [DONE]`. Nothing is sent before the first token, so a request shed before
//! it ran still gets its `503`.

use std::sync::Arc;

use axum::body::Body;
use axum::http::HeaderMap;
use axum::response::Response;
use mmsched_pipeline::request::{Finish, Input, Prompt, Reply, Update};
use mmsched_pipeline::stats::Kind;
use serde_json::{Value, json};
use tokio::sync::mpsc::UnboundedReceiver;

use crate::answer::{event_stream, failed, json_ok, mark_deadline, shed, unix_now};
use crate::{CancelOnDrop, OpenAi, Slot};

/// A request as the handlers read it.
pub struct Generation {
    /// What to continue, how much, how to sample and where to stop.
    pub prompt: Prompt,
    /// Tokens of the prompt (for `usage`).
    pub prompt_tokens: usize,
    /// Server-sent events, or one body.
    pub stream: bool,
    /// The model id asked for.
    pub model: String,
    /// A chat (`chat.completion`) or a completion (`text_completion`).
    pub chat: bool,
}

/// Runs `g` within its class's cap and answers it.
pub async fn run(api: Arc<OpenAi>, headers: HeaderMap, g: Generation) -> Response {
    let slot = match api.admit(Kind::Llm) {
        Ok(s) => s,
        Err(r) => return r,
    };
    let terms = match api.terms(Kind::Llm, &headers) {
        Ok(t) => t,
        Err(r) => return r,
    };
    let mut submitted = match api.submit(Input::Prompt(g.prompt), terms) {
        Ok(s) => s,
        Err(r) => return r,
    };
    static NEXT_ID: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
    let n = NEXT_ID.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let out = Shape {
        id: format!(
            "{}-{}-{n}",
            if g.chat { "chatcmpl" } else { "cmpl" },
            unix_now()
        ),
        created: unix_now(),
        model: g.model,
        chat: g.chat,
        prompt_tokens: g.prompt_tokens,
        deadline_ms: terms.deadline_ms,
    };
    // Nothing is sent before the first update: a shed request still gets its 503.
    let first = submitted.updates.recv().await;
    match first {
        None => failed(&mmsched_runtime::sched::WorkError::Cancelled {
            why: "the generation ended without an answer",
        }),
        Some(Update::Shed(why)) => shed(Kind::Llm, terms.deadline_ms, &why),
        Some(Update::Failed(e)) => failed(&e),
        Some(first) if g.stream => {
            let held = Held {
                _slot: slot,
                guard: submitted.guard,
            };
            stream_answer(out, first, submitted.updates, held)
        }
        Some(first) => {
            let r = whole_answer(&out, first, &mut submitted.updates).await;
            submitted.guard.disarm();
            r
        }
    }
}

/// What the answer says about the request.
struct Shape {
    id: String,
    created: u64,
    model: String,
    chat: bool,
    prompt_tokens: usize,
    deadline_ms: u64,
}

impl Shape {
    fn usage(&self, completion: u32) -> Value {
        json!({
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": completion,
            "total_tokens": self.prompt_tokens + completion as usize,
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

    /// The whole answer's body.
    fn body(&self, text: &str, finish: &str, tokens: u32, on_time: bool) -> Value {
        if self.chat {
            json!({
                "id": self.id, "object": "chat.completion", "created": self.created, "model": self.model,
                "choices": [{"index": 0, "message": {"role": "assistant", "content": text.trim_start()}, "finish_reason": finish}],
                "usage": self.usage(tokens),
                "mmsched": self.mmsched(on_time),
            })
        } else {
            json!({
                "id": self.id, "object": "text_completion", "created": self.created, "model": self.model,
                "choices": [{"index": 0, "text": text, "finish_reason": finish}],
                "usage": self.usage(tokens),
                "mmsched": self.mmsched(on_time),
            })
        }
    }
}

/// How a generation ended, as the last chunk or the body tells it.
struct End {
    finish: &'static str,
    tokens: Option<u32>,
    on_time: bool,
}

/// The end an update makes (`None` for a token): a text answer's finish, or — shed past
/// its deadline between two tokens, or stopped — what was generated is the answer, late.
fn end_of(u: &Update) -> Option<End> {
    match u {
        Update::Token(_) => None,
        Update::Finished(a) => Some(match &a.reply {
            Reply::Text { tokens, finish, .. } => End {
                finish: match finish {
                    Finish::Stop => "stop",
                    Finish::Length | Finish::Cancelled => "length",
                },
                tokens: Some(*tokens),
                on_time: a.on_time,
            },
            _ => End {
                finish: "stop",
                tokens: None,
                on_time: a.on_time,
            },
        }),
        Update::Shed(_) | Update::Failed(_) => Some(End {
            finish: "length",
            tokens: None,
            on_time: false,
        }),
    }
}

/// Collects the whole answer.
async fn whole_answer(out: &Shape, first: Update, rx: &mut UnboundedReceiver<Update>) -> Response {
    let mut text = String::new();
    let mut tokens = 0u32;
    let mut next = Some(first);
    let end = loop {
        let Some(u) = next else {
            break End {
                finish: "length",
                tokens: None,
                on_time: false,
            };
        };
        if let Update::Failed(e) = &u
            && tokens == 0
        {
            return failed(e);
        }
        if let Update::Token(t) = &u {
            tokens += 1;
            text.push_str(t);
        }
        if let Some(end) = end_of(&u) {
            break end;
        }
        next = rx.recv().await;
    };
    let tokens = end.tokens.unwrap_or(tokens);
    mark_deadline(
        json_ok(out.body(&text, end.finish, tokens, end.on_time)),
        end.on_time,
    )
}

/// What a streamed answer holds until it ends: its place in the class's cap, and the
/// guard that cancels the request if the client goes away first.
struct Held {
    _slot: Slot,
    guard: CancelOnDrop,
}

/// Streams the answer as server-sent events; `held` is released when the stream ends (or
/// is dropped because the client went away, which cancels the request).
fn stream_answer(out: Shape, first: Update, rx: UnboundedReceiver<Update>, held: Held) -> Response {
    struct State {
        out: Shape,
        rx: UnboundedReceiver<Update>,
        pending: Option<Update>,
        first: bool,
        tokens: u32,
        done: bool,
        held: Held,
    }
    let state = State {
        out,
        rx,
        pending: Some(first),
        first: true,
        tokens: 0,
        done: false,
        held,
    };
    let events = futures_util::stream::unfold(state, |mut s| async move {
        if s.done {
            return None;
        }
        let u = match s.pending.take() {
            Some(u) => Some(u),
            None => s.rx.recv().await,
        };
        if let Some(Update::Token(t)) = &u {
            s.tokens += 1;
            // A chat answer starts after "Assistant:"; a completion continues the prompt,
            // where a leading space is part of the text.
            let text = if s.first && s.out.chat {
                t.trim_start().to_string()
            } else {
                t.clone()
            };
            let chunk = s.out.chunk(Some(&text), None, s.first);
            s.first = false;
            return Some((Ok::<_, std::convert::Infallible>(sse(&chunk)), s));
        }
        let end = u.as_ref().and_then(end_of).unwrap_or(End {
            finish: "length",
            tokens: None,
            on_time: false,
        });
        // The last chunk: the finish reason, usage and whether the deadline was met.
        let mut last = s.out.chunk(None, Some(end.finish), s.first);
        last["usage"] = s.out.usage(end.tokens.unwrap_or(s.tokens));
        last["mmsched"] = s.out.mmsched(end.on_time);
        s.done = true;
        s.held.guard.disarm();
        Some((Ok(format!("{}data: [DONE]\n\n", sse(&last))), s))
    });
    event_stream(Body::from_stream(events))
}

fn sse(v: &Value) -> String {
    format!("data: {v}\n\n")
}
