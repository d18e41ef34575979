//! The Open Inference Protocol (KServe v2) endpoints over a runtime in virtual time (fake
//! models: OCR reads `STOP`, speech hears `turn left at the next sign`, text says ` word`
//! per token): metadata, health, JSON and binary inference for each model, and each error
//! status, as a v2 client sees them.

use std::collections::BTreeMap;

#[path = "support/server.rs"]
mod setup;
#[path = "support/wav.rs"]
mod wav;

use axum::body::Body;
use axum::http::{Request, StatusCode};
use http_body_util::BodyExt;
use mmsched_openai::ClassSettings;
use mmsched_pipeline::stats::Kind;
use serde_json::{Value, json};
use setup::{Server, Setup, server};

async fn get(s: &Server, path: &str) -> axum::response::Response {
    s.send(Request::get(path).body(Body::empty()).expect("request"))
        .await
}

async fn body_of(r: axum::response::Response) -> Vec<u8> {
    r.into_body()
        .collect()
        .await
        .expect("body")
        .to_bytes()
        .to_vec()
}

async fn json_of(r: axum::response::Response) -> Value {
    let bytes = body_of(r).await;
    serde_json::from_slice(&bytes).unwrap_or_else(|e| panic!("not JSON ({e}): {bytes:?}"))
}

fn infer(model: &str, body: Value) -> Request<Body> {
    Request::post(format!("/v2/models/{model}/infer"))
        .header("content-type", "application/json")
        .body(Body::from(body.to_string()))
        .expect("request")
}

/// A binary request: `header` as JSON then `tail`, with its Inference-Header-Content-Length.
fn infer_binary(model: &str, header: &Value, tail: &[u8]) -> Request<Body> {
    let mut body = header.to_string().into_bytes();
    let n = body.len();
    body.extend_from_slice(tail);
    Request::post(format!("/v2/models/{model}/infer"))
        .header("inference-header-content-length", n.to_string())
        .header("content-type", "application/octet-stream")
        .body(Body::from(body))
        .expect("request")
}

fn bytes_element(b: &[u8]) -> Vec<u8> {
    let mut out = (b.len() as u32).to_le_bytes().to_vec();
    out.extend_from_slice(b);
    out
}

fn sign_png() -> Vec<u8> {
    let img = image::RgbImage::from_pixel(8, 8, image::Rgb([255, 255, 255]));
    let mut out = std::io::Cursor::new(Vec::new());
    img.write_to(&mut out, image::ImageFormat::Png)
        .expect("PNG");
    out.into_inner()
}

/// A 16 kHz 16-bit mono WAV of `frames` frames of silence.
fn wav(frames: u32) -> Vec<u8> {
    wav::silence(16_000, 16, frames)
}

/// The error of an answer: its status and message (the protocol's `{"error": "…"}`).
async fn error_of(r: axum::response::Response) -> (StatusCode, String) {
    let status = r.status();
    let v = json_of(r).await;
    let message = v["error"]
        .as_str()
        .unwrap_or_else(|| panic!("not the v2 error shape: {v}"))
        .to_string();
    (status, message)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_and_model_metadata_and_health() {
    let s = server(Setup::default());
    let v = json_of(get(&s, "/v2").await).await;
    assert_eq!(v["name"], "mmsched");
    assert_eq!(v["extensions"], json!(["binary_tensor_data"]));
    for path in ["/v2/health/live", "/v2/health/ready"] {
        let r = get(&s, path).await;
        assert_eq!(r.status(), StatusCode::OK, "{path}");
        assert!(body_of(r).await.is_empty(), "{path}");
    }
    let v = json_of(get(&s, "/v2/models/pp-ocrv4").await).await;
    assert_eq!(v["name"], "pp-ocrv4");
    assert_eq!(v["versions"], json!(["1"]));
    assert_eq!(
        v["inputs"][0],
        json!({"name": "image", "datatype": "UINT8", "shape": [-1, -1, 3]})
    );
    assert_eq!(v["outputs"][0]["name"], "text");
    let v = json_of(get(&s, "/v2/models/gemma-3-270m/versions/1").await).await;
    assert_eq!(v["inputs"][0]["name"], "text_input");
    for m in ["pp-ocrv4", "whisper-tiny.en", "gemma-3-270m"] {
        let r = get(&s, &format!("/v2/models/{m}/ready")).await;
        assert_eq!(r.status(), StatusCode::OK, "{m}");
    }
    let (status, message) = error_of(get(&s, "/v2/models/resnet50").await).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert!(message.contains("pp-ocrv4"), "names the models: {message}");
    let (status, _) = error_of(get(&s, "/v2/models/pp-ocrv4/versions/7/ready").await).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    // Triton's own extensions are not served: 404 listing what is.
    let (status, message) = error_of(get(&s, "/v2/models/pp-ocrv4/config").await).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert!(message.contains("/infer"), "{message}");
    s.finish();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn json_inference_for_each_model() {
    let s = server(Setup {
        upload_limit: 4 << 20,
        ..Setup::default()
    });
    // OCR on RGB pixels, with an id and the deadline as a parameter.
    let pixels: Vec<u8> = vec![255; 4 * 6 * 3];
    let r = s
        .send(infer(
            "pp-ocrv4",
            json!({"id": "frame-1", "parameters": {"deadline_ms": 1500},
                   "inputs": [{"name": "image", "shape": [4, 6, 3], "datatype": "UINT8", "data": pixels}]}),
        ))
        .await;
    assert_eq!(r.status(), StatusCode::OK);
    assert_eq!(r.headers()["x-deadline-missed"], "false");
    let v = json_of(r).await;
    assert_eq!(v["model_name"], "pp-ocrv4");
    assert_eq!(v["id"], "frame-1");
    assert_eq!(v["parameters"]["deadline_ms"], 1500);
    assert_eq!(v["parameters"]["deadline_missed"], false);
    let out = |name: &str| {
        v["outputs"]
            .as_array()
            .expect("outputs")
            .iter()
            .find(|o| o["name"] == name)
            .unwrap_or_else(|| panic!("no {name} in {v}"))
            .clone()
    };
    assert_eq!(
        out("text"),
        json!({"name": "text", "datatype": "BYTES", "shape": [1], "data": ["STOP"]})
    );
    assert_eq!(out("boxes")["shape"], json!([1, 4, 2]));
    assert_eq!(out("scores")["datatype"], "FP32");
    // Speech from samples, [1, N].
    let r = s
        .send(infer(
            "whisper-tiny.en",
            json!({"inputs": [{"name": "audio", "shape": [1, 4], "datatype": "FP32", "data": [0.0, 0.1, -0.1, 0.0]}],
                   "outputs": [{"name": "text"}]}),
        ))
        .await;
    assert_eq!(r.status(), StatusCode::OK);
    let v = json_of(r).await;
    assert_eq!(
        v["outputs"][0]["data"],
        json!(["turn left at the next sign"])
    );
    // Text with max_tokens.
    let r = s
        .send(infer(
            "gemma-3-270m",
            json!({"parameters": {"max_tokens": 3},
                   "inputs": [{"name": "text_input", "shape": [1], "datatype": "BYTES", "data": ["Hi"]}]}),
        ))
        .await;
    assert_eq!(r.status(), StatusCode::OK);
    let v = json_of(r).await;
    assert_eq!(
        v["outputs"][0],
        json!({"name": "text_output", "datatype": "BYTES", "shape": [1], "data": [" word word word"]})
    );
    let summary = s.finish();
    assert_eq!(summary.vision.origin["api"].offered, 1);
    assert_eq!(summary.asr.origin["api"].offered, 1);
    assert_eq!(summary.llm.modality.origin["api"].on_time, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn binary_inference_as_tritonclient_sends_it() {
    let s = server(Setup {
        upload_limit: 4 << 20,
        ..Setup::default()
    });
    // A PNG file as a BYTES element; all outputs asked for in binary.
    let file = bytes_element(&sign_png());
    let header = json!({
        "inputs": [{"name": "image_file", "shape": [1], "datatype": "BYTES",
                    "parameters": {"binary_data_size": file.len()}}],
        "parameters": {"binary_data_output": true},
    });
    let r = s.send(infer_binary("pp-ocrv4", &header, &file)).await;
    assert_eq!(r.status(), StatusCode::OK);
    assert_eq!(r.headers()["content-type"], "application/octet-stream");
    let n: usize = r.headers()["inference-header-content-length"]
        .to_str()
        .expect("text")
        .parse()
        .expect("a length");
    let body = body_of(r).await;
    let head: Value = serde_json::from_slice(&body[..n]).expect("a JSON header");
    let outputs = head["outputs"].as_array().expect("outputs");
    assert_eq!(outputs[0]["name"], "text");
    assert_eq!(outputs[0]["parameters"]["binary_data_size"], 8);
    assert_eq!(&body[n..n + 8], &bytes_element(b"STOP")[..]);
    let total: u64 = outputs
        .iter()
        .map(|o| o["parameters"]["binary_data_size"].as_u64().expect("size"))
        .sum();
    assert_eq!(total as usize, body.len() - n, "the outputs fill the body");
    // Samples in binary, only `text` asked for and as JSON.
    let samples: Vec<u8> = [0.0f32; 1600]
        .iter()
        .flat_map(|f| f.to_le_bytes())
        .collect();
    let header = json!({
        "inputs": [{"name": "audio", "shape": [1600], "datatype": "FP32",
                    "parameters": {"binary_data_size": samples.len()}}],
        "outputs": [{"name": "text", "parameters": {"binary_data": false}}],
    });
    let r = s
        .send(infer_binary("whisper-tiny.en", &header, &samples))
        .await;
    assert_eq!(r.status(), StatusCode::OK);
    assert!(r.headers().get("inference-header-content-length").is_none());
    let v = json_of(r).await;
    assert_eq!(
        v["outputs"][0]["data"],
        json!(["turn left at the next sign"])
    );
    // A WAV file and a prompt, binary both ways.
    let file = bytes_element(&wav(8000));
    let header = json!({
        "inputs": [{"name": "audio_file", "shape": [1], "datatype": "BYTES",
                    "parameters": {"binary_data_size": file.len()}}],
        "outputs": [{"name": "text", "parameters": {"binary_data": true}}],
    });
    let r = s
        .send(infer_binary("whisper-tiny.en", &header, &file))
        .await;
    assert_eq!(r.status(), StatusCode::OK);
    let prompt = bytes_element(b"Hello");
    let header = json!({
        "inputs": [{"name": "text_input", "shape": [1], "datatype": "BYTES",
                    "parameters": {"binary_data_size": prompt.len()}}],
        "parameters": {"binary_data_output": true, "max_tokens": 2},
    });
    let r = s.send(infer_binary("gemma-3-270m", &header, &prompt)).await;
    assert_eq!(r.status(), StatusCode::OK);
    let body = body_of(r).await;
    assert!(body.ends_with(&bytes_element(b" word word")), "{body:?}");
    s.finish();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_error_has_the_protocol_shape_and_its_status() {
    let s = server(Setup::default());
    let text = |data: Value, datatype: &str| json!({"inputs": [{"name": "text_input", "shape": [1], "datatype": datatype, "data": data}]});
    let cases: Vec<(Request<Body>, StatusCode, &str)> = vec![
        (
            infer("gemma-3-270m", json!("{")),
            StatusCode::BAD_REQUEST,
            "JSON object",
        ),
        (
            Request::post("/v2/models/gemma-3-270m/infer")
                .body(Body::from("{not json"))
                .expect("req"),
            StatusCode::BAD_REQUEST,
            "JSON",
        ),
        (
            infer("gemma-3-270m", text(json!([1.5]), "FP32")),
            StatusCode::BAD_REQUEST,
            "BYTES",
        ),
        (
            infer("gemma-3-270m", text(json!(["a", "b"]), "BYTES")),
            StatusCode::BAD_REQUEST,
            "2",
        ),
        (
            infer("gemma-3-270m", json!({"inputs": []})),
            StatusCode::BAD_REQUEST,
            "text_input",
        ),
        (
            infer(
                "pp-ocrv4",
                json!({"inputs": [{"name": "image", "shape": [2, 2], "datatype": "UINT8", "data": [0, 0, 0, 0]}]}),
            ),
            StatusCode::BAD_REQUEST,
            "[H, W, 3]",
        ),
        (
            infer(
                "pp-ocrv4",
                json!({"inputs": [{"name": "image_file", "shape": [1], "datatype": "BYTES", "data": ["not an image"]}]}),
            ),
            StatusCode::BAD_REQUEST,
            "PNG or JPEG",
        ),
        (
            infer(
                "gemma-3-270m",
                json!({"inputs": [{"name": "text_input", "shape": [1], "datatype": "BYTES", "data": ["x"]}],
                       "outputs": [{"name": "logits"}]}),
            ),
            StatusCode::BAD_REQUEST,
            "text_output",
        ),
        (
            infer(
                "gemma-3-270m",
                json!({"parameters": {"deadline_ms": 0},
                       "inputs": [{"name": "text_input", "shape": [1], "datatype": "BYTES", "data": ["x"]}]}),
            ),
            StatusCode::BAD_REQUEST,
            "deadline_ms",
        ),
        (
            infer_binary(
                "gemma-3-270m",
                &json!({"inputs": [{"name": "text_input", "shape": [1], "datatype": "BYTES",
                                    "parameters": {"binary_data_size": 9}}]}),
                &[200, 0, 0, 0, b'x', 0, 0, 0, 0],
            ),
            StatusCode::BAD_REQUEST,
            "4-byte little-endian length",
        ),
        (
            Request::post("/v2/models/gemma-3-270m/infer")
                .header("inference-header-content-length", "5000")
                .body(Body::from("{}"))
                .expect("req"),
            StatusCode::BAD_REQUEST,
            "Inference-Header-Content-Length",
        ),
        (
            infer("gpt-9", text(json!(["x"]), "BYTES")),
            StatusCode::NOT_FOUND,
            "gemma-3-270m",
        ),
        (
            Request::post("/v2/models/pp-ocrv4/infer")
                .body(Body::from(vec![b' '; 2 << 20]))
                .expect("req"),
            StatusCode::PAYLOAD_TOO_LARGE,
            "--upload-limit-mib",
        ),
        (
            infer(
                "pp-ocrv4",
                json!({"inputs": [{"name": "image", "shape": [5000, 5000, 3], "datatype": "UINT8",
                                   "parameters": {"binary_data_size": 1}}]}),
            ),
            StatusCode::BAD_REQUEST,
            "Inference-Header-Content-Length",
        ),
    ];
    for (req, status, says) in cases {
        let what = format!("{} {}", req.method(), req.uri());
        let (got, message) = error_of(s.send(req).await).await;
        assert_eq!(got, status, "{what}: {message}");
        assert!(message.contains(says), "{what}: {message:?} lacks {says:?}");
    }
    let summary = s.finish();
    assert_eq!(
        summary.vision.offered + summary.llm.modality.offered,
        0,
        "no bad request reached the runtime"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shed_over_the_cap_late_and_unauthorised_answers() {
    let caps = BTreeMap::from([(
        Kind::Llm,
        ClassSettings {
            deadline_ms: 600_000,
            max_concurrent: 0,
        },
    )]);
    let s = server(Setup {
        caps,
        keys: Some("sk-good=0.9\n"),
        ..Setup::default()
    });
    let with_key = |mut r: Request<Body>| {
        r.headers_mut()
            .insert("authorization", "Bearer sk-good".parse().expect("header"));
        r
    };
    let pixels = json!({"inputs": [{"name": "image", "shape": [2, 2, 3], "datatype": "UINT8", "data": vec![0; 12]}]});
    // Without a key: 401, in the protocol's shape; health needs none.
    let r = s.send(infer("pp-ocrv4", pixels.clone())).await;
    assert_eq!(r.headers()["www-authenticate"], "Bearer");
    assert_eq!(error_of(r).await.0, StatusCode::UNAUTHORIZED);
    assert_eq!(get(&s, "/v2/health/ready").await.status(), StatusCode::OK);
    // Due in 5 ms, OCR (40 ms) is shed: 503 with Retry-After.
    let mut req = with_key(infer("pp-ocrv4", pixels.clone()));
    req.headers_mut()
        .insert("x-deadline-ms", "5".parse().expect("header"));
    let r = s.send(req).await;
    assert_eq!(r.headers()["retry-after"], "1");
    let (status, message) = error_of(r).await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
    assert!(message.contains("5 ms deadline"), "{message}");
    // A class with no room: 503 naming the cap.
    let r = s
        .send(with_key(infer(
            "gemma-3-270m",
            json!({"inputs": [{"name": "text_input", "shape": [1], "datatype": "BYTES", "data": ["x"]}]}),
        )))
        .await;
    let (status, message) = error_of(r).await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
    assert!(message.contains("--max-concurrent llm=0"), "{message}");
    let summary = s.finish();
    assert_eq!(summary.vision.origin["api"].shed, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_late_answer_is_returned_marked_deadline_missed() {
    let s = server(Setup {
        shedding: false,
        ..Setup::default()
    });
    let r = s
        .send(infer(
            "pp-ocrv4",
            json!({"parameters": {"deadline_ms": 5},
                   "inputs": [{"name": "image", "shape": [2, 2, 3], "datatype": "UINT8", "data": vec![0; 12]}]}),
        ))
        .await;
    assert_eq!(r.status(), StatusCode::OK);
    assert_eq!(r.headers()["x-deadline-missed"], "true");
    let v = json_of(r).await;
    assert_eq!(v["parameters"]["deadline_missed"], true);
    assert_eq!(v["outputs"][0]["data"], json!(["STOP"]));
    let summary = s.finish();
    assert_eq!(summary.vision.origin["api"].late, 1);
}

/// A JSON body is parsed within the decode budget: one that would take more than all of it
/// is a 413 that points to binary data.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_json_body_larger_than_the_decode_budget_gets_413() {
    let s = server(Setup {
        decode_budget: Some(64 << 10),
        ..Setup::default()
    });
    let samples = vec![0.25f32; 4000];
    let (status, message) = error_of(
        s.send(infer(
            "whisper-tiny.en",
            json!({"inputs": [{"name": "audio", "shape": [4000], "datatype": "FP32", "data": samples}]}),
        ))
        .await,
    )
    .await;
    assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE);
    assert!(message.contains("binary data"), "{message}");
    // The same samples in binary fit.
    let raw: Vec<u8> = samples.iter().flat_map(|f| f.to_le_bytes()).collect();
    let header = json!({"inputs": [{"name": "audio", "shape": [4000], "datatype": "FP32",
                                    "parameters": {"binary_data_size": raw.len()}}]});
    let r = s.send(infer_binary("whisper-tiny.en", &header, &raw)).await;
    assert_eq!(r.status(), StatusCode::OK);
    s.finish();
}
