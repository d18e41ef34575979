//! Arbitrary bytes as an Open Inference Protocol (KServe v2) request
//! (`POST /v2/models/{name}/infer`): the first line is the Inference-Header-Content-Length
//! header (none when empty), the rest the body. Tensors or an error, never a panic; every
//! tensor holds exactly the elements its shape declares, and the tensors together are no
//! bigger than a few times the body (a one-digit JSON number becomes at most 8 bytes).
#![no_main]

use libfuzzer_sys::fuzz_target;
use mmsched_openai::v2::tensor::{Data, parse_request};

fuzz_target!(|data: &[u8]| {
    let (header, body) = match data.iter().position(|&b| b == b'\n') {
        Some(at) => (&data[..at], &data[at + 1..]),
        None => (&data[..0], data),
    };
    let header = std::str::from_utf8(header).ok().filter(|h| !h.is_empty());
    if let Ok(req) = parse_request(body, header) {
        let mut total = 0usize;
        for t in &req.inputs {
            let elements: u64 = t.shape.iter().product();
            match (&t.data, t.datatype.size()) {
                (Data::Fixed(b), Some(size)) => {
                    assert_eq!(b.len() as u64, elements * size as u64);
                    total += b.len();
                }
                (Data::Bytes(items), None) => {
                    assert_eq!(items.len() as u64, elements);
                    total += items.iter().map(Vec::len).sum::<usize>();
                }
                _ => panic!("{} data of the wrong kind", t.datatype.as_str()),
            }
        }
        assert!(total <= 8 * body.len());
    }
});
