//! Whisper `model.safetensors` → GGUF with q8_0 linear layers, the file candle's quantized
//! Whisper (`candle_transformers::models::whisper::quantized_model`) loads.
//!
//! Every 2-D projection weight (`*_proj.weight`, `fc1.weight`, `fc2.weight`) whose rows are a
//! whole number of 32-value blocks is quantised to q8_0: per block of 32 values one float16
//! scale `d = max|x| / 127` and 32 int8 values `round(x / d)` (ggml's `quantize_row_q8_0`
//! reference, which candle's x86 code also follows). Every other tensor (convolutions, biases,
//! layer norms, embeddings) keeps its stored float16/float32 values, so only the matrix
//! multiplications change. The conversion is plain arithmetic in a fixed tensor order, so
//! the output is byte-identical on every machine and is pinned by sha256 like a download.

use std::collections::BTreeMap;

use half::f16;

/// Values per q8_0 block.
const QK8_0: usize = 32;
/// GGUF data alignment (the format's default; no `general.alignment` key is written).
const ALIGNMENT: usize = 32;
/// ggml type ids.
const GGML_F32: u32 = 0;
const GGML_F16: u32 = 1;
const GGML_Q8_0: u32 = 8;
/// GGUF metadata value type of a string.
const GGUF_STRING: u32 = 8;

/// Why quantising failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum QuantizeError {
    /// The input is not a readable safetensors file.
    #[error("reading the Whisper safetensors: {0}")]
    Read(String),
    /// A tensor has a dtype this conversion does not handle.
    #[error("tensor {name} has dtype {dtype}; only float16 and float32 weights are quantised")]
    Dtype {
        /// The tensor.
        name: String,
        /// Its dtype.
        dtype: String,
    },
}

/// Whether `name` (with `shape`) is quantised to q8_0.
pub fn is_quantized(name: &str, shape: &[usize]) -> bool {
    let projection = name.ends_with("_proj.weight")
        || name.ends_with(".fc1.weight")
        || name.ends_with(".fc2.weight");
    projection && shape.len() == 2 && shape[1].is_multiple_of(QK8_0)
}

/// q8_0 blocks of `values` (a multiple of 32 long), 34 bytes each.
pub fn q8_0_blocks(values: &[f32]) -> Vec<u8> {
    let mut out = Vec::with_capacity(values.len() / QK8_0 * (2 + QK8_0));
    for block in values.chunks_exact(QK8_0) {
        let amax = block.iter().fold(0f32, |m, x| m.max(x.abs()));
        let d = amax / 127.0;
        let id = if d != 0.0 { 1.0 / d } else { 0.0 };
        out.extend_from_slice(&f16::from_f32(d).to_le_bytes());
        // `as` saturates; |x·id| ≤ 127 up to rounding anyway.
        out.extend(block.iter().map(|&x| (x * id).round() as i8 as u8));
    }
    out
}

fn values_f32(view: &safetensors::tensor::TensorView<'_>) -> Vec<f32> {
    let data = view.data();
    match view.dtype() {
        safetensors::Dtype::F16 => data
            .chunks_exact(2)
            .map(|b| f16::from_le_bytes([b[0], b[1]]).to_f32())
            .collect(),
        _ => data
            .chunks_exact(4)
            .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .collect(),
    }
}

/// One tensor of the output: name, row-major shape, ggml type, data.
struct Entry {
    name: String,
    shape: Vec<usize>,
    ggml_type: u32,
    data: Vec<u8>,
}

fn put_string(out: &mut Vec<u8>, s: &str) {
    out.extend_from_slice(&(s.len() as u64).to_le_bytes());
    out.extend_from_slice(s.as_bytes());
}

fn pad(out: &mut Vec<u8>) {
    out.resize(out.len().div_ceil(ALIGNMENT) * ALIGNMENT, 0);
}

/// Quantises the Whisper weights in `safetensors` (Hugging Face names) into a GGUF file.
pub fn quantize(safetensors: &[u8]) -> Result<Vec<u8>, QuantizeError> {
    let st = safetensors::SafeTensors::deserialize(safetensors)
        .map_err(|e| QuantizeError::Read(e.to_string()))?;
    // Sorted by name: the output must not depend on the input's order.
    let mut tensors: BTreeMap<String, _> = BTreeMap::new();
    for (name, view) in st.tensors() {
        tensors.insert(name, view);
    }
    let mut entries = Vec::with_capacity(tensors.len());
    for (name, view) in tensors {
        let shape = view.shape().to_vec();
        let (ggml_type, data) = match view.dtype() {
            safetensors::Dtype::F16 | safetensors::Dtype::F32 if is_quantized(&name, &shape) => {
                (GGML_Q8_0, q8_0_blocks(&values_f32(&view)))
            }
            safetensors::Dtype::F16 => (GGML_F16, view.data().to_vec()),
            safetensors::Dtype::F32 => (GGML_F32, view.data().to_vec()),
            other => {
                return Err(QuantizeError::Dtype {
                    name,
                    dtype: format!("{other:?}"),
                });
            }
        };
        entries.push(Entry {
            name,
            shape,
            ggml_type,
            data,
        });
    }
    Ok(gguf(&entries))
}

/// Serialises `entries` as GGUF version 3 (little-endian, 32-byte aligned data; ggml lists
/// dimensions innermost first, the reverse of the row-major shape).
fn gguf(entries: &[Entry]) -> Vec<u8> {
    let metadata = [
        ("general.architecture", "whisper"),
        ("general.file_type", "q8_0"),
    ];
    let mut out = Vec::new();
    out.extend_from_slice(b"GGUF");
    out.extend_from_slice(&3u32.to_le_bytes());
    out.extend_from_slice(&(entries.len() as u64).to_le_bytes());
    out.extend_from_slice(&(metadata.len() as u64).to_le_bytes());
    for (key, value) in metadata {
        put_string(&mut out, key);
        out.extend_from_slice(&GGUF_STRING.to_le_bytes());
        put_string(&mut out, value);
    }
    let mut offset = 0usize;
    for e in entries {
        put_string(&mut out, &e.name);
        out.extend_from_slice(&(e.shape.len() as u32).to_le_bytes());
        for &d in e.shape.iter().rev() {
            out.extend_from_slice(&(d as u64).to_le_bytes());
        }
        out.extend_from_slice(&e.ggml_type.to_le_bytes());
        out.extend_from_slice(&(offset as u64).to_le_bytes());
        offset += e.data.len().div_ceil(ALIGNMENT) * ALIGNMENT;
    }
    pad(&mut out);
    for e in entries {
        out.extend_from_slice(&e.data);
        pad(&mut out);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn q8_0_matches_the_ggml_reference_block() {
        // One block: max |x| = 2.54 → d = 0.02, values x / d rounded.
        let mut x = vec![0f32; 32];
        x[0] = 2.54;
        x[1] = -1.0;
        x[2] = 0.015; // 0.75 → 1
        x[3] = -0.009; // −0.45 → 0
        let b = q8_0_blocks(&x);
        assert_eq!(b.len(), 34);
        let d = f16::from_le_bytes([b[0], b[1]]).to_f32();
        assert!((d - 0.02).abs() < 1e-5, "{d}");
        assert_eq!(&b[2..6], &[127u8, (-50i8) as u8, 1, 0]);
        assert!(b[6..].iter().all(|&v| v == 0));
        // An all-zero block has scale 0 and zero values.
        assert_eq!(q8_0_blocks(&[0.0; 32]), vec![0u8; 34]);
    }

    #[test]
    fn only_projection_matrices_are_quantised() {
        assert!(is_quantized(
            "model.encoder.layers.0.self_attn.q_proj.weight",
            &[384, 384]
        ));
        assert!(is_quantized(
            "model.decoder.layers.3.fc2.weight",
            &[384, 1536]
        ));
        assert!(!is_quantized(
            "model.encoder.layers.0.self_attn.q_proj.bias",
            &[384]
        ));
        assert!(!is_quantized(
            "model.decoder.embed_tokens.weight",
            &[51864, 384]
        ));
        assert!(!is_quantized("model.encoder.conv1.weight", &[384, 80, 3]));
        assert!(!is_quantized("x.fc1.weight", &[8, 30]));
    }

    #[test]
    fn gguf_layout_is_aligned_with_reversed_dimensions() {
        let st = safetensors::tensor::serialize(
            [
                (
                    "a.fc1.weight",
                    safetensors::tensor::TensorView::new(
                        safetensors::Dtype::F32,
                        vec![2, 32],
                        &[0u8; 256],
                    )
                    .expect("view"),
                ),
                (
                    "b.bias",
                    safetensors::tensor::TensorView::new(
                        safetensors::Dtype::F16,
                        vec![3],
                        &[1u8; 6],
                    )
                    .expect("view"),
                ),
            ],
            None,
        )
        .expect("serialise");
        let g = quantize(&st).expect("quantises");
        assert_eq!(&g[..4], b"GGUF");
        assert_eq!(u32::from_le_bytes([g[4], g[5], g[6], g[7]]), 3);
        assert_eq!(g.len() % ALIGNMENT, 0);
        // Two q8_0 blocks (68 bytes, padded to 96), then 6 bytes of f16 (padded to 32).
        assert_eq!(&g[g.len() - 32..g.len() - 26], &[1u8; 6]);
        let text = String::from_utf8_lossy(&g);
        assert!(text.contains("a.fc1.weight") && text.contains("b.bias"));
        // The same input always gives the same bytes.
        assert_eq!(quantize(&st).expect("again"), g);
    }
}
