//! Models of the user's own over the v2 protocol: their inputs and outputs as the graph
//! declares them, fed `FP32` tensors (one per graph input) or, for a model that takes
//! images, an image (`image`: `UINT8 [H, W, 3]` RGB pixels, or `image_file`: a PNG or JPEG
//! file); answered with every graph output as `FP32`, and for a classifier a `classes`
//! output of `score:index:label` strings (the form of Triton's classification extension).

use std::sync::Arc;

use axum::body::Bytes;
use axum::http::HeaderMap;
use axum::response::Response;
use mmsched_backends::TensorF32;
use mmsched_backends::onnx::{OnnxInput, OnnxOutput};
use mmsched_backends::tensor::TensorInfo;
use mmsched_pipeline::request::{Answer, Input, Reply};
use mmsched_pipeline::stats::Kind;
use serde_json::{Value, json};

use super::infer::{bytes_out, deadline_param, head_of, inflated, pixels_frame, read, respond};
use super::models::VERSION;
use super::tensor::{Data, DataType, InferRequest, OutData, Output, Tensor};
use crate::OpenAi;
use crate::answer::invalid;
use crate::media::{image_upload, run_one};

/// A model of the user's own, as the endpoints describe and feed it.
#[derive(Debug, Clone, PartialEq)]
pub struct UserModel {
    /// Its class (its name).
    pub kind: Kind,
    /// The graph's inputs.
    pub inputs: Vec<TensorInfo>,
    /// The graph's outputs.
    pub outputs: Vec<TensorInfo>,
    /// Whether it takes an image in place of its tensor.
    pub takes_images: bool,
    /// Whether its output reads as classes.
    pub classifier: bool,
    /// Whether its output reads as boxes.
    pub detector: bool,
}

/// The extra output of a classifier.
const CLASSES: &str = "classes";
/// The extra outputs of a detector: boxes (left, top, right, bottom; frame pixels for an
/// image), their scores, and their classes as `index:label`.
const BOXES: [&str; 3] = ["detection_boxes", "detection_scores", "detection_classes"];

impl UserModel {
    /// Its name.
    pub fn id(&self) -> &'static str {
        self.kind.as_str()
    }

    fn input_specs(&self) -> Vec<Value> {
        let mut all: Vec<Value> = self.inputs.iter().map(info_json).collect();
        if self.takes_images {
            all.push(json!({"name": "image", "datatype": "UINT8", "shape": [-1, -1, 3]}));
            all.push(json!({"name": "image_file", "datatype": "BYTES", "shape": [1]}));
        }
        all
    }

    fn output_names(&self) -> Vec<String> {
        let mut all: Vec<String> = self.outputs.iter().map(|o| o.name.clone()).collect();
        if self.classifier {
            all.push(CLASSES.to_string());
        }
        if self.detector {
            all.extend(BOXES.iter().map(|s| s.to_string()));
        }
        all
    }

    /// `GET /v2/models/{name}`'s body.
    pub fn metadata(&self) -> Value {
        let mut outputs: Vec<Value> = self.outputs.iter().map(info_json).collect();
        if self.classifier {
            outputs.push(json!({"name": CLASSES, "datatype": "BYTES", "shape": [-1, -1]}));
        }
        if self.detector {
            outputs.push(json!({"name": BOXES[0], "datatype": "FP32", "shape": [-1, 4]}));
            outputs.push(json!({"name": BOXES[1], "datatype": "FP32", "shape": [-1]}));
            outputs.push(json!({"name": BOXES[2], "datatype": "BYTES", "shape": [-1]}));
        }
        json!({
            "name": self.id(),
            "versions": [VERSION],
            "platform": "onnxruntime_onnx",
            "inputs": self.input_specs(),
            "outputs": outputs,
        })
    }

    /// The runtime input of the request's tensors: an image, or every graph input.
    async fn input(
        &self,
        api: &Arc<OpenAi>,
        req: &mut InferRequest,
    ) -> Result<OnnxInput, Response> {
        let name = self.id();
        let wants = || {
            self.input_specs()
                .iter()
                .map(|v| {
                    format!(
                        "{} ({} {})",
                        v["name"].as_str().unwrap_or(""),
                        v["datatype"].as_str().unwrap_or(""),
                        v["shape"]
                    )
                })
                .collect::<Vec<_>>()
                .join(", ")
        };
        if let Some(i) = req
            .inputs
            .iter()
            .position(|t| t.name == "image" || t.name == "image_file")
        {
            if !self.takes_images {
                return Err(invalid(
                    format!("{name} takes no image; give its tensors: {}", wants()),
                    None,
                ));
            }
            let t = req.inputs.remove(i);
            if let Some(other) = req.inputs.first() {
                return Err(invalid(
                    format!(
                        "the request gives {:?} beside {:?}; {name} takes one image or its tensors, not both",
                        other.name, t.name
                    ),
                    None,
                ));
            }
            let frame = match (t.datatype, t.data) {
                (DataType::Bytes, Data::Bytes(mut items)) if items.len() == 1 => {
                    image_upload(api, items.swap_remove(0), "the image_file tensor").await
                }
                (DataType::U8, Data::Fixed(pixels)) => pixels_frame(&t.name, &t.shape, pixels),
                (datatype, _) => Err(invalid(
                    format!(
                        "input {:?} is {} {:?}; {name} reads UINT8 [H, W, 3] (RGB pixels) as `image` or BYTES [1] (a PNG or JPEG file) as `image_file`",
                        t.name,
                        datatype.as_str(),
                        t.shape
                    ),
                    None,
                )),
            }?;
            return Ok(OnnxInput::Image(frame));
        }
        let mut tensors = Vec::with_capacity(self.inputs.len());
        for info in &self.inputs {
            let Some(i) = req.inputs.iter().position(|t| t.name == info.name) else {
                return Err(invalid(
                    format!(
                        "the request has no input {:?}; {name} wants {}",
                        info.name,
                        wants()
                    ),
                    None,
                ));
            };
            tensors.push(fp32_tensor(name, info, req.inputs.remove(i))?);
        }
        if let Some(extra) = req.inputs.first() {
            return Err(invalid(
                format!("{name} has no input {:?}; it wants {}", extra.name, wants()),
                None,
            ));
        }
        Ok(OnnxInput::Tensors(tensors))
    }
}

fn info_json(i: &TensorInfo) -> Value {
    json!({"name": i.name, "datatype": i.datatype.as_str(), "shape": i.shape})
}

/// An `FP32` request tensor checked against the graph input `info`.
fn fp32_tensor(model: &str, info: &TensorInfo, t: Tensor) -> Result<TensorF32, Response> {
    let shape: Vec<usize> = t.shape.iter().map(|&d| d as usize).collect();
    let values = match t.f32s() {
        Some(v) if info.accepts(&shape) => v,
        _ => {
            return Err(invalid(
                format!(
                    "input {:?} of {model} must be FP32 {}; it is {} {:?}",
                    info.name,
                    info.shape_text(),
                    t.datatype.as_str(),
                    t.shape
                ),
                None,
            ));
        }
    };
    TensorF32::new(shape, values).map_err(|e| invalid(format!("input {:?}: {e}", info.name), None))
}

/// The answer's outputs: every graph output, and a classifier's classes.
fn outputs(out: OnnxOutput) -> Vec<Output> {
    let OnnxOutput {
        tensors,
        classes,
        detections,
    } = out;
    let mut all: Vec<Output> = tensors
        .into_iter()
        .map(|(name, t)| Output {
            name: name.into(),
            shape: t.shape.iter().map(|&d| d as u64).collect(),
            data: OutData::F32(t.data),
        })
        .collect();
    if let Some(rows) = &classes {
        let k = rows.first().map_or(0, Vec::len) as u64;
        let items: Vec<String> = rows
            .iter()
            .flatten()
            .map(|c| {
                let label = c.label.clone().unwrap_or_default();
                format!("{}:{}:{label}", c.score, c.index)
            })
            .collect();
        let mut o = bytes_out(CLASSES, items);
        o.shape = vec![rows.len() as u64, k];
        all.push(o);
    }
    if let Some(found) = detections {
        let n = found.len() as u64;
        all.push(Output {
            name: BOXES[0].into(),
            shape: vec![n, 4],
            data: OutData::F32(found.iter().flat_map(|d| d.bbox).collect()),
        });
        all.push(Output {
            name: BOXES[1].into(),
            shape: vec![n],
            data: OutData::F32(found.iter().map(|d| d.score).collect()),
        });
        let classes = found
            .iter()
            .map(|d| format!("{}:{}", d.index, d.label.clone().unwrap_or_default()))
            .collect();
        all.push(bytes_out(BOXES[2], classes));
    }
    all
}

/// Runs one inference request on the user's `model` and answers it.
pub async fn infer(
    api: Arc<OpenAi>,
    model: UserModel,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let body = match inflated(&api, &headers, body).await {
        Ok(b) => b,
        Err(r) => return r,
    };
    let mut req = match read(&api, model.kind, &headers, body).await {
        Ok(r) => r,
        Err(r) => return r,
    };
    let names = model.output_names();
    if let Some(w) = req.outputs.iter().find(|w| !names.contains(&w.name)) {
        return invalid(
            format!(
                "{} has no output {:?}; its outputs are {} (or leave `outputs` out for all of them)",
                model.id(),
                w.name,
                names.join(", ")
            ),
            None,
        );
    }
    let given_ms = match deadline_param(&req) {
        Ok(ms) => ms,
        Err(r) => return r,
    };
    let terms = match api.terms_or(model.kind, &headers, given_ms) {
        Ok(t) => t,
        Err(r) => return r,
    };
    let slot = match api.admit(model.kind) {
        Ok(s) => s,
        Err(r) => return r,
    };
    let input = match model.input(&api, &mut req).await {
        Ok(i) => i,
        Err(r) => return r,
    };
    let kind = model.kind;
    run_one(
        &api,
        kind,
        slot,
        terms,
        Input::Model { kind, input },
        |a: Answer| {
            let head = head_of(model.id(), &req, &terms, a.on_time);
            let all = match a.reply {
                Reply::Model(out) => outputs(out),
                _ => Vec::new(),
            };
            respond(&req, head, all)
        },
    )
    .await
}
