//! The endpoints over a runtime in virtual time: mmsched's real executor on virtual lanes
//! (OCR 40 ms, a token 30 ms, a transcription 300 ms) and fake models that answer at once,
//! driven with HTTP requests through the router (no socket). Each test checks what an
//! OpenAI client sees — status, headers, body shape, server-sent event framing — and what
//! the runtime counted.

use std::collections::BTreeMap;

#[path = "support/png.rs"]
mod png;
use png::png_header;
#[path = "support/server.rs"]
mod setup;
#[path = "support/wav.rs"]
mod wav;
use setup::{Setup, server};

use axum::body::Body;
use axum::http::{Request, StatusCode};
use http_body_util::BodyExt;
use mmsched_openai::ClassSettings;
use mmsched_pipeline::stats::Kind;
use serde_json::{Value, json};

fn post(path: &str) -> axum::http::request::Builder {
    Request::post(path).header("content-type", "application/json")
}

fn chat(body: Value) -> Request<Body> {
    post("/v1/chat/completions")
        .body(Body::from(body.to_string()))
        .expect("request")
}

async fn json_of(r: axum::response::Response) -> Value {
    let bytes = r.into_body().collect().await.expect("body").to_bytes();
    serde_json::from_slice(&bytes).unwrap_or_else(|e| panic!("not JSON ({e}): {bytes:?}"))
}

fn user(text: &str) -> Value {
    json!([{"role": "user", "content": text}])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_chat_is_answered_whole_with_usage_and_its_deadline_mark() {
    let s = server(Setup::default());
    let r = s
        .send(chat(
            json!({"model": "gemma-3-270m", "messages": user("Hi"), "max_tokens": 4}),
        ))
        .await;
    assert_eq!(r.status(), StatusCode::OK);
    assert_eq!(r.headers()["x-deadline-missed"], "false");
    let v = json_of(r).await;
    assert_eq!(v["object"], "chat.completion");
    assert_eq!(v["choices"][0]["message"]["content"], "word word word word");
    assert_eq!(v["choices"][0]["finish_reason"], "length");
    assert_eq!(v["usage"]["completion_tokens"], 4);
    assert_eq!(v["mmsched"]["deadline_missed"], false);
    let summary = s.finish();
    let api = &summary.llm.modality.origin["api"];
    assert_eq!((api.offered, api.on_time), (1, 1));
    assert_eq!(summary.llm.tokens, 4);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_streamed_chat_is_framed_as_server_sent_events_ending_with_done() {
    let s = server(Setup::default());
    let r = s
        .send(chat(
            json!({"messages": user("Hi"), "max_tokens": 3, "stream": true}),
        ))
        .await;
    assert_eq!(r.status(), StatusCode::OK);
    assert_eq!(r.headers()["content-type"], "text/event-stream");
    let text = String::from_utf8(
        r.into_body()
            .collect()
            .await
            .expect("body")
            .to_bytes()
            .to_vec(),
    )
    .expect("UTF-8");
    let events: Vec<&str> = text.split("\n\n").filter(|e| !e.is_empty()).collect();
    assert_eq!(events.last(), Some(&"data: [DONE]"), "{text}");
    let chunks: Vec<Value> = events[..events.len() - 1]
        .iter()
        .map(|e| {
            let data = e.strip_prefix("data: ").unwrap_or_else(|| panic!("{e}"));
            serde_json::from_str(data).expect("a JSON chunk")
        })
        .collect();
    // Three tokens, then the last chunk with the finish reason and usage.
    assert_eq!(chunks.len(), 4, "{text}");
    assert_eq!(chunks[0]["choices"][0]["delta"]["role"], "assistant");
    assert_eq!(chunks[0]["choices"][0]["delta"]["content"], "word");
    assert_eq!(chunks[1]["choices"][0]["delta"]["content"], " word");
    let last = &chunks[3];
    assert_eq!(last["choices"][0]["finish_reason"], "length");
    assert_eq!(last["usage"]["completion_tokens"], 3);
    assert_eq!(last["mmsched"]["deadline_missed"], false);
    assert!(
        chunks
            .iter()
            .all(|c| c["object"] == "chat.completion.chunk")
    );
    s.finish();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn beyond_the_class_cap_a_request_gets_503_with_retry_after_and_counts_as_shed() {
    let caps = BTreeMap::from([(
        Kind::Llm,
        ClassSettings {
            deadline_ms: 600_000,
            max_concurrent: 1,
        },
    )]);
    let s = server(Setup {
        caps,
        ..Setup::default()
    });
    // A long answer holds the one place; the stream is read from a task of its own.
    let long = s
        .send(chat(
            json!({"messages": user("long"), "max_tokens": 200, "stream": true}),
        ))
        .await;
    assert_eq!(long.status(), StatusCode::OK);
    let r = s
        .send(chat(json!({"messages": user("second"), "max_tokens": 2})))
        .await;
    assert_eq!(r.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(r.headers()["retry-after"], "1");
    let v = json_of(r).await;
    assert_eq!(v["error"]["type"], "overloaded");
    assert!(
        v["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("--max-concurrent llm=1")),
        "{v}"
    );
    long.into_body()
        .collect()
        .await
        .expect("the long answer ends");
    let summary = s.finish();
    let api = &summary.llm.modality.origin["api"];
    assert_eq!((api.offered, api.on_time, api.shed), (2, 1, 1));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_that_cannot_make_its_deadline_is_shed_with_503() {
    let s = server(Setup::default());
    // OCR takes 40 ms; due in 5 ms it cannot be on time, so mmsched sheds it.
    let png = sign_png();
    let r = s
        .send(
            Request::post("/api/v1/ocr")
                .header("x-deadline-ms", "5")
                .body(Body::from(png))
                .expect("request"),
        )
        .await;
    assert_eq!(r.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(r.headers()["retry-after"], "1");
    let v = json_of(r).await;
    assert!(
        v["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("5 ms deadline")),
        "{v}"
    );
    let summary = s.finish();
    assert_eq!(summary.vision.origin["api"].shed, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_late_answer_still_comes_marked_deadline_missed() {
    // Without shedding, a frame due in 5 ms runs and ends after its deadline.
    let s = server(Setup {
        shedding: false,
        ..Setup::default()
    });
    let r = s
        .send(
            Request::post("/api/v1/ocr")
                .header("x-deadline-ms", "5")
                .body(Body::from(sign_png()))
                .expect("request"),
        )
        .await;
    assert_eq!(r.status(), StatusCode::OK);
    assert_eq!(r.headers()["x-deadline-missed"], "true");
    let v = json_of(r).await;
    assert_eq!(v["lines"][0]["text"], "STOP");
    assert_eq!(v["on_time"], false);
    let summary = s.finish();
    assert_eq!(summary.vision.origin["api"].late, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_api_keys_a_request_without_a_listed_key_gets_401() {
    let s = server(Setup {
        keys: Some("sk-good=0.9\n"),
        ..Setup::default()
    });
    let r = s
        .send(Request::get("/v1/models").body(Body::empty()).expect("req"))
        .await;
    assert_eq!(r.status(), StatusCode::UNAUTHORIZED);
    assert_eq!(r.headers()["www-authenticate"], "Bearer");
    assert_eq!(json_of(r).await["error"]["type"], "invalid_api_key");
    let r = s
        .send(
            Request::get("/v1/models")
                .header("authorization", "Bearer sk-good")
                .body(Body::empty())
                .expect("req"),
        )
        .await;
    assert_eq!(r.status(), StatusCode::OK);
    let ids: Vec<Value> = json_of(r).await["data"]
        .as_array()
        .expect("a list")
        .iter()
        .map(|m| m["id"].clone())
        .collect();
    assert_eq!(
        ids,
        vec![
            json!("gemma-3-270m"),
            json!("whisper-tiny.en"),
            json!("pp-ocrv4")
        ]
    );
    s.finish();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_goes_away_mid_stream_frees_its_session() {
    let s = server(Setup::default());
    let r = s
        .send(chat(
            json!({"messages": user("long"), "max_tokens": 4000, "stream": true}),
        ))
        .await;
    assert_eq!(r.status(), StatusCode::OK);
    let mut body = r.into_body();
    let first = body.frame().await.expect("a frame").expect("data");
    assert!(first.is_data());
    // The client hangs up.
    drop(body);
    // With one session, the next request is answered only once the first has let it go.
    let r = s
        .send(chat(json!({"messages": user("next"), "max_tokens": 2})))
        .await;
    assert_eq!(r.status(), StatusCode::OK);
    let summary = s.finish();
    let api = &summary.llm.modality.origin["api"];
    assert_eq!((api.offered, api.on_time, api.unfinished), (2, 1, 1));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn errors_have_the_openai_shape_and_the_class_of_their_cause() {
    let s = server(Setup::default());
    // The client's input: 400 naming the field.
    let r = s
        .send(
            post("/v1/chat/completions")
                .body(Body::from("{not json"))
                .expect("req"),
        )
        .await;
    assert_eq!(r.status(), StatusCode::BAD_REQUEST);
    assert_eq!(json_of(r).await["error"]["type"], "invalid_request_error");
    let r = s
        .send(chat(json!({"messages": user("x"), "temperature": 9})))
        .await;
    assert_eq!(r.status(), StatusCode::BAD_REQUEST);
    assert_eq!(json_of(r).await["error"]["param"], "temperature");
    let r = s
        .send(chat(json!({"model": "gpt-9", "messages": user("x")})))
        .await;
    assert_eq!(r.status(), StatusCode::NOT_FOUND);
    // The device's fault: 500.
    let r = s
        .send(chat(
            json!({"messages": user("FAIL please"), "max_tokens": 2}),
        ))
        .await;
    assert_eq!(r.status(), StatusCode::INTERNAL_SERVER_ERROR);
    let v = json_of(r).await;
    assert_eq!(v["error"]["type"], "server_error");
    assert!(
        v["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("told to fail")),
        "{v}"
    );
    let summary = s.finish();
    assert_eq!(summary.llm.modality.origin["api"].failed, 1);
}

/// A small valid PNG (the fake OCR reads every frame as `STOP`).
fn sign_png() -> Vec<u8> {
    let img = image::RgbImage::from_pixel(8, 8, image::Rgb([255, 255, 255]));
    let mut out = std::io::Cursor::new(Vec::new());
    img.write_to(&mut out, image::ImageFormat::Png)
        .expect("PNG");
    out.into_inner()
}

/// The error of an answer: its status, `type`, `code` and message.
async fn error_of(r: axum::response::Response) -> (StatusCode, String, String, String) {
    let status = r.status();
    let v = json_of(r).await;
    let e = &v["error"];
    let text = |k: &str| e[k].as_str().unwrap_or_default().to_string();
    (status, text("type"), text("code"), text("message"))
}

fn ocr(body: Vec<u8>) -> Request<Body> {
    Request::post("/api/v1/ocr")
        .body(Body::from(body))
        .expect("request")
}

/// A multipart transcription request with `wav` as its file.
fn transcription(wav: Vec<u8>) -> Request<Body> {
    let mut body = b"--XyZ\r\nContent-Disposition: form-data; name=\"model\"\r\n\r\nwhisper-1\r\n--XyZ\r\nContent-Disposition: form-data; name=\"file\"; filename=\"clip.wav\"\r\nContent-Type: audio/wav\r\n\r\n".to_vec();
    body.extend_from_slice(&wav);
    body.extend_from_slice(b"\r\n--XyZ--\r\n");
    Request::post("/v1/audio/transcriptions")
        .header("content-type", "multipart/form-data; boundary=XyZ")
        .body(Body::from(body))
        .expect("request")
}

/// A WAV file declaring `rate` Hz, 8-bit mono, holding `frames` frames of silence.
fn wav(rate: u32, frames: u32) -> Vec<u8> {
    wav::silence(rate, 8, frames)
}

/// Finding 3: a body over the route's limit was answered by the HTTP layer in plain text
/// (`Failed to buffer the request body…`); it is a 413 in OpenAI's shape naming the limit.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_body_over_its_limit_gets_413_in_the_openai_shape() {
    let s = server(Setup::default());
    let (status, kind, code, message) = error_of(s.send(ocr(vec![0; 2 << 20])).await).await;
    assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE);
    assert_eq!(
        (kind.as_str(), code.as_str()),
        ("invalid_request_error", "request_too_large")
    );
    assert!(
        message.contains("1 MiB") && message.contains("--upload-limit-mib"),
        "{message}"
    );
    let big = json!({"messages": user(&"x".repeat(300 * 1024))});
    let (status, _, code, message) = error_of(s.send(chat(big)).await).await;
    assert_eq!(
        (status, code.as_str()),
        (StatusCode::PAYLOAD_TOO_LARGE, "request_too_large")
    );
    assert!(message.contains("256 KiB"), "{message}");
    let summary = s.finish();
    assert_eq!(summary.vision.offered + summary.llm.modality.offered, 0);
}

/// Finding 3: eight concurrent uploads of a PNG declaring 10000×10000 pixels were each
/// decoded (300 MB as RGB) before the vision cap; the header says it, so each is a 413
/// before a pixel is decoded, and none reaches the runtime.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn images_are_bounded_by_their_header_before_decoding() {
    let s = server(Setup::default());
    let answers =
        futures_util::future::join_all((0..8).map(|_| s.send(ocr(png_header(10_000, 10_000)))))
            .await;
    for r in answers {
        let (status, _, code, message) = error_of(r).await;
        assert_eq!(
            (status, code.as_str()),
            (StatusCode::PAYLOAD_TOO_LARGE, "request_too_large")
        );
        assert!(
            message.contains("10000×10000") && message.contains("16 megapixels"),
            "{message}"
        );
    }
    // Not an image: 415. A valid header over bytes that do not decode: 422.
    let (status, _, code, _) = error_of(s.send(ocr(b"GIF89a not read here".to_vec())).await).await;
    assert_eq!(
        (status, code.as_str()),
        (StatusCode::UNSUPPORTED_MEDIA_TYPE, "unsupported_media_type")
    );
    let (status, _, code, message) = error_of(s.send(ocr(png_header(64, 64))).await).await;
    assert_eq!(
        (status, code.as_str()),
        (StatusCode::UNPROCESSABLE_ENTITY, "unprocessable_input"),
        "{message}"
    );
    let summary = s.finish();
    assert_eq!(
        summary.vision.offered, 0,
        "nothing was decoded or submitted"
    );
}

/// Decoding counts against a memory budget: an image whose pixels would take more than
/// all of it is a 413 naming the budget.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_upload_larger_than_the_decode_budget_gets_413() {
    let s = server(Setup {
        decode_budget: Some(100),
        ..Setup::default()
    });
    let (status, _, code, message) = error_of(s.send(ocr(sign_png())).await).await;
    assert_eq!(
        (status, code.as_str()),
        (StatusCode::PAYLOAD_TOO_LARGE, "request_too_large")
    );
    assert!(message.contains("decode budget"), "{message}");
    s.finish();
}

/// Finding 3: a 1 KB WAV declaring 1 Hz cost 90 s of CPU and answered `. . .`, and a 786 s
/// WAV got `500 server_error`. Both are the client's input, read from the header before a
/// sample is decoded: 422 for the rate, 413 for the length.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn audio_is_bounded_by_its_header_at_the_declared_rate() {
    let s = server(Setup {
        upload_limit: 16 << 20,
        ..Setup::default()
    });
    let (status, kind, code, message) = error_of(s.send(transcription(wav(1, 1000))).await).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(
        (kind.as_str(), code.as_str()),
        ("invalid_request_error", "unprocessable_input")
    );
    assert!(
        message.contains("1 Hz") && message.contains("8000 to 192000 Hz"),
        "{message}"
    );
    let (status, _, code, message) =
        error_of(s.send(transcription(wav(8_000, 786 * 8_000))).await).await;
    assert_eq!(
        (status, code.as_str()),
        (StatusCode::PAYLOAD_TOO_LARGE, "request_too_large")
    );
    assert!(
        message.contains("786 s") && message.contains("at most 600 s"),
        "{message}"
    );
    // Two seconds at 8 kHz are transcribed.
    let r = s.send(transcription(wav(8_000, 16_000))).await;
    assert_eq!(r.status(), StatusCode::OK);
    let summary = s.finish();
    let api = &summary.asr.origin["api"];
    assert_eq!((api.offered, api.accounted()), (1, 1));
}

/// A client that hangs up mid-stream while other streams and OCR uploads run: its work is
/// freed, everyone else is answered, and every request is accounted for once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_leaving_mid_stream_under_load_loses_nobody_elses_answer() {
    let s = server(Setup {
        sessions: 2,
        ..Setup::default()
    });
    let mut streams = Vec::new();
    for i in 0..3 {
        // The first asks for a long answer: it is still streaming when its client leaves.
        let tokens = if i == 0 { 4000 } else { 40 };
        let r = s
            .send(chat(json!({
                "messages": user(&format!("story {i}")),
                "max_tokens": tokens,
                "stream": true
            })))
            .await;
        assert_eq!(r.status(), StatusCode::OK);
        streams.push(r.into_body());
    }
    let first = streams[0].frame().await.expect("a frame").expect("data");
    assert!(first.is_data());
    // The first client hangs up after its first token, while the others and four OCR
    // uploads are under way.
    drop(streams.remove(0));
    let (ocr_answers, texts) = tokio::join!(
        futures_util::future::join_all((0..4).map(|_| s.send(ocr(sign_png())))),
        futures_util::future::join_all(streams.into_iter().map(|b| async move {
            String::from_utf8(b.collect().await.expect("body").to_bytes().to_vec()).expect("UTF-8")
        })),
    );
    for r in ocr_answers {
        assert!(
            [StatusCode::OK, StatusCode::SERVICE_UNAVAILABLE].contains(&r.status()),
            "{}",
            r.status()
        );
    }
    for t in &texts {
        assert!(t.trim_end().ends_with("data: [DONE]"), "{t}");
    }
    let summary = s.finish();
    let llm = &summary.llm.modality.origin["api"];
    assert_eq!(llm.offered, 3);
    assert_eq!(llm.unfinished, 1, "the stream whose client left: {llm:?}");
    assert_eq!(llm.on_time + llm.late, 2, "{llm:?}");
    assert_eq!(llm.accounted(), llm.offered, "{llm:?}");
    let vision = &summary.vision.origin["api"];
    assert_eq!((vision.offered, vision.accounted()), (4, 4), "{vision:?}");
}
