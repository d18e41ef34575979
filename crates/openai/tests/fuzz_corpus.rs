//! Replays the seed corpus of the `v2_infer_request` fuzz target
//! (fuzz/corpus/v2_infer_request) with the target's own checks.

use mmsched_openai::v2::tensor::{Data, parse_request};

#[test]
fn the_v2_request_corpus_gives_whole_tensors_or_an_error() {
    let dir = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../fuzz/corpus/v2_infer_request"
    );
    let (mut files, mut parsed) = (0, 0);
    for entry in std::fs::read_dir(dir).expect("the corpus exists") {
        let data = std::fs::read(entry.expect("listable").path()).expect("readable");
        files += 1;
        let (header, body) = match data.iter().position(|&b| b == b'\n') {
            Some(at) => (&data[..at], &data[at + 1..]),
            None => (&data[..0], &data[..]),
        };
        let header = std::str::from_utf8(header).ok().filter(|h| !h.is_empty());
        let Ok(req) = parse_request(body, header) else {
            continue;
        };
        parsed += 1;
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
    assert!(files >= 7 && parsed >= 3, "{files} files, {parsed} parsed");
}
