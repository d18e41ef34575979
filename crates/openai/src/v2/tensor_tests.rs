//! The parser on good and hostile bodies: every malformed one is an error naming the
//! problem, none panics or allocates by a declared size.

use super::*;
use serde_json::json;

/// A binary request: `header` as JSON, then `tail`; the header length to send.
fn binary(header: &Value, tail: &[u8]) -> (Vec<u8>, String) {
    let mut body = header.to_string().into_bytes();
    let n = body.len().to_string();
    body.extend_from_slice(tail);
    (body, n)
}

fn bytes_elements(items: &[&[u8]]) -> Vec<u8> {
    let mut out = Vec::new();
    for i in items {
        out.extend((i.len() as u32).to_le_bytes());
        out.extend_from_slice(i);
    }
    out
}

#[test]
fn a_json_request_is_read_with_nested_data() {
    let body = json!({
        "id": "r1",
        "parameters": {"max_tokens": 4},
        "inputs": [
            {"name": "image", "shape": [2, 1, 3], "datatype": "UINT8", "data": [[[1, 2, 3]], [[4, 5, 6]]]},
            {"name": "audio", "shape": [2], "datatype": "FP32", "data": [0.5, -1.0]},
            {"name": "text_input", "shape": [1], "datatype": "BYTES", "data": ["hi"]},
        ],
        "outputs": [{"name": "text", "parameters": {"binary_data": true}}],
    });
    let r = parse_request(body.to_string().as_bytes(), None).expect("valid");
    assert_eq!(r.id.as_deref(), Some("r1"));
    assert_eq!(r.inputs[0].data, Data::Fixed(vec![1, 2, 3, 4, 5, 6]));
    assert_eq!(r.inputs[1].f32s(), Some(vec![0.5, -1.0]));
    assert_eq!(r.inputs[2].data, Data::Bytes(vec![b"hi".to_vec()]));
    assert!(r.binary("text"));
    assert!(!r.binary("scores"));
}

#[test]
fn a_binary_request_takes_each_inputs_bytes_in_order() {
    let words = bytes_elements(&[b"hello", b""]);
    let floats: Vec<u8> = [1.5f32, 2.0].iter().flat_map(|f| f.to_le_bytes()).collect();
    let header = json!({
        "inputs": [
            {"name": "a", "shape": [2], "datatype": "BYTES", "parameters": {"binary_data_size": words.len()}},
            {"name": "b", "shape": [1, 2], "datatype": "FP32", "parameters": {"binary_data_size": 8}},
        ],
        "parameters": {"binary_data_output": true},
    });
    let mut tail = words.clone();
    tail.extend(&floats);
    let (body, n) = binary(&header, &tail);
    let r = parse_request(&body, Some(&n)).expect("valid");
    assert_eq!(
        r.inputs[0].data,
        Data::Bytes(vec![b"hello".to_vec(), Vec::new()])
    );
    assert_eq!(r.inputs[1].f32s(), Some(vec![1.5, 2.0]));
    assert!(r.binary("anything"), "binary_data_output applies to all");
}

fn refused(body: &[u8], header: Option<&str>) -> TensorError {
    match parse_request(body, header) {
        Ok(r) => panic!("accepted {r:?}"),
        Err(e) => e,
    }
}

fn one_input(input: Value) -> Vec<u8> {
    json!({"inputs": [input]}).to_string().into_bytes()
}

#[test]
fn malformed_json_and_fields_are_named() {
    assert!(matches!(refused(b"{not json", None), TensorError::Json(_)));
    assert!(matches!(refused(b"[1]", None), TensorError::Field { .. }));
    assert!(matches!(refused(b"{}", None), TensorError::Field { .. }));
    for (input, wants) in [
        (
            json!({"name": "x", "shape": [-1], "datatype": "FP32", "data": [1]}),
            "shape",
        ),
        (
            json!({"name": "x", "shape": [1.5], "datatype": "FP32", "data": [1]}),
            "shape",
        ),
        (
            json!({"name": "x", "shape": "3", "datatype": "FP32", "data": [1]}),
            "shape",
        ),
        (
            json!({"name": "x", "shape": [1], "datatype": "FLOAT", "data": [1]}),
            "FLOAT",
        ),
        (
            json!({"name": 3, "shape": [1], "datatype": "FP32", "data": [1]}),
            "name",
        ),
        (
            json!({"name": "x", "shape": [1], "datatype": "FP32"}),
            "no data",
        ),
        (
            json!({"name": "x", "shape": [2], "datatype": "FP32", "data": [1]}),
            "2 elements",
        ),
        (
            json!({"name": "x", "shape": [1], "datatype": "UINT8", "data": [256]}),
            "UINT8",
        ),
        (
            json!({"name": "x", "shape": [1], "datatype": "UINT8", "data": [-1]}),
            "UINT8",
        ),
        (
            json!({"name": "x", "shape": [1], "datatype": "FP32", "data": [1e300]}),
            "FP32",
        ),
        (
            json!({"name": "x", "shape": [1], "datatype": "BYTES", "data": [1]}),
            "BYTES",
        ),
        (
            json!({"name": "x", "shape": [1], "datatype": "FP16", "data": [1]}),
            "binary",
        ),
        (
            json!({"name": "x", "shape": [1], "datatype": "FP32", "data": [1],
                   "parameters": {"binary_data_size": 4}}),
            "both",
        ),
        (
            json!({"name": "x", "shape": [1], "datatype": "FP32", "parameters": {"binary_data_size": 4}}),
            "Inference-Header-Content-Length",
        ),
        (
            json!({"name": "x", "shape": [1], "datatype": "FP32", "data": [1],
                   "parameters": {"binary_data_size": -4}}),
            "binary_data_size",
        ),
    ] {
        let e = refused(&one_input(input.clone()), None).to_string();
        assert!(e.contains(wants), "{input}: {e}");
    }
    let twice = json!({"inputs": [
        {"name": "x", "shape": [1], "datatype": "FP32", "data": [1]},
        {"name": "x", "shape": [1], "datatype": "FP32", "data": [1]},
    ]});
    assert!(matches!(
        refused(twice.to_string().as_bytes(), None),
        TensorError::Duplicate(_)
    ));
}

#[test]
fn overflowing_and_huge_shapes_allocate_nothing() {
    let huge = u64::MAX / 2;
    let e = refused(
        &one_input(json!({"name": "x", "shape": [huge, huge], "datatype": "FP32", "data": [1]})),
        None,
    );
    assert!(matches!(e, TensorError::ShapeOverflow { .. }), "{e}");
    // A shape of 2^60 BYTES elements over 8 bytes of data: a count mismatch, found
    // while walking the bytes present.
    let data = bytes_elements(&[b"a", b"b"]);
    let header = json!({"inputs": [{"name": "x", "shape": [1u64 << 60], "datatype": "BYTES",
        "parameters": {"binary_data_size": data.len()}}]});
    let (body, n) = binary(&header, &data);
    assert!(matches!(
        refused(&body, Some(&n)),
        TensorError::Count { given: 2, .. }
    ));
    let header = json!({"inputs": [{"name": "x", "shape": [1u64 << 62], "datatype": "FP32",
        "parameters": {"binary_data_size": 8}}]});
    let (body, n) = binary(&header, &[0; 8]);
    let e = refused(&body, Some(&n));
    assert!(e.to_string().contains("more than 2^64"), "{e}");
}

#[test]
fn truncated_and_inconsistent_binary_bodies_are_refused() {
    let header = json!({"inputs": [{"name": "x", "shape": [2], "datatype": "FP32",
        "parameters": {"binary_data_size": 8}}]});
    let (body, n) = binary(&header, &[0; 8]);
    parse_request(&body, Some(&n)).expect("the whole body is valid");
    // Every truncation of the body is an error, never a panic.
    for cut in 0..body.len() {
        assert!(parse_request(&body[..cut], Some(&n)).is_err(), "cut {cut}");
    }
    assert!(matches!(
        refused(&body, Some("99999")),
        TensorError::HeaderPastEnd { .. }
    ));
    assert!(matches!(
        refused(&body, Some("-3")),
        TensorError::HeaderLength(_)
    ));
    assert!(matches!(
        refused(&body, Some("18446744073709551616")),
        TensorError::HeaderLength(_)
    ));
    // The header length one short cuts the JSON; one long takes a data byte into it.
    let short = (n.parse::<usize>().expect("n") - 1).to_string();
    assert!(matches!(refused(&body, Some(&short)), TensorError::Json(_)));
    // Extra bytes after the last input.
    let (extra, n) = binary(&header, &[0; 12]);
    assert!(matches!(
        refused(&extra, Some(&n)),
        TensorError::Leftover(4)
    ));
    // A size that is not elements × 4.
    let odd = json!({"inputs": [{"name": "x", "shape": [2], "datatype": "FP32",
        "parameters": {"binary_data_size": 6}}]});
    let (body, n) = binary(&odd, &[0; 6]);
    assert!(matches!(
        refused(&body, Some(&n)),
        TensorError::BinarySize { .. }
    ));
    // A size past the end of the body.
    let past = json!({"inputs": [{"name": "x", "shape": [2], "datatype": "FP32",
        "parameters": {"binary_data_size": u64::MAX}}]});
    let (body, n) = binary(&past, &[0; 8]);
    assert!(matches!(
        refused(&body, Some(&n)),
        TensorError::PastEnd { .. }
    ));
}

#[test]
fn a_bytes_length_prefix_past_the_end_is_refused() {
    for tail in [
        vec![5, 0, 0, 0, b'a'],         // declares 5, holds 1
        vec![0xff, 0xff, 0xff, 0xff],   // declares 4 GiB
        vec![1, 0],                     // half a length
        bytes_elements(&[b"ab", b"c"]), // two elements for a shape of one
    ] {
        let header = json!({"inputs": [{"name": "t", "shape": [1], "datatype": "BYTES",
            "parameters": {"binary_data_size": tail.len()}}]});
        let (body, n) = binary(&header, &tail);
        let e = refused(&body, Some(&n));
        assert!(
            matches!(
                e,
                TensorError::BytesPastEnd { .. } | TensorError::Count { .. }
            ),
            "{tail:?}: {e}"
        );
    }
    // No element where the shape wants one.
    let header = json!({"inputs": [{"name": "t", "shape": [1], "datatype": "BYTES",
        "parameters": {"binary_data_size": 0}}]});
    let (body, n) = binary(&header, &[]);
    assert!(matches!(
        refused(&body, Some(&n)),
        TensorError::Count { given: 0, .. }
    ));
}

/// A cheap deterministic fuzz: every byte of a valid binary request flipped to a few
/// values, and random tails; the parser answers each without panicking.
#[test]
fn mutated_bodies_never_panic() {
    let words = bytes_elements(&[b"hello", b"world"]);
    let header = json!({"inputs": [
        {"name": "a", "shape": [2], "datatype": "BYTES", "parameters": {"binary_data_size": words.len()}},
        {"name": "b", "shape": [1, 1, 3], "datatype": "UINT8", "data": [1, 2, 3]},
    ]});
    let (body, n) = binary(&header, &words);
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let mut next = || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    for i in 0..body.len() {
        for v in [0u8, 0xff, b'-', b'9', b'[', b'"'] {
            let mut m = body.clone();
            m[i] = v;
            let _ = parse_request(&m, Some(&n));
            let _ = parse_request(&m, None);
        }
    }
    for _ in 0..2000 {
        let mut m = body.clone();
        let at = (next() as usize) % m.len();
        m.truncate(at);
        m.extend((0..(next() % 16)).map(|_| next() as u8));
        let len = (next() as usize % (m.len() + 8)).to_string();
        let _ = parse_request(&m, Some(&len));
    }
}

#[test]
fn an_answer_is_json_or_json_then_binary() {
    let text = Output {
        name: "text".into(),
        shape: vec![2],
        data: OutData::Bytes(vec!["EXIT".into(), "12".into()]),
    };
    let scores = Output {
        name: "scores".into(),
        shape: vec![2],
        data: OutData::F32(vec![0.5, 1.0]),
    };
    let mut head = Map::new();
    head.insert("model_name".into(), "pp-ocrv4".into());
    let (body, len) = encode_answer(
        head.clone(),
        &[(text.clone(), false), (scores.clone(), false)],
    );
    assert_eq!(len, None);
    let v: Value = serde_json::from_slice(&body).expect("JSON");
    assert_eq!(v["outputs"][0]["data"], json!(["EXIT", "12"]));
    assert_eq!(v["outputs"][1]["data"], json!([0.5, 1.0]));
    let (body, len) = encode_answer(head, &[(text, true), (scores, false)]);
    let len = len.expect("binary");
    let v: Value = serde_json::from_slice(&body[..len]).expect("a JSON header");
    assert_eq!(v["outputs"][0]["parameters"]["binary_data_size"], 14);
    assert!(v["outputs"][0].get("data").is_none());
    assert_eq!(&body[len..], &bytes_elements(&[b"EXIT", b"12"])[..]);
}
