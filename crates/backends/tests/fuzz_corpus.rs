//! Replays the seed corpora of the `wav_decode` and `image_decode` fuzz targets
//! (fuzz/corpus/…) with the targets' own checks, so every `cargo test` runs them on stable.

use mmsched_backends::RgbFrame;
use mmsched_backends::audio::decode_wav;

fn corpus(target: &str) -> Vec<(String, Vec<u8>)> {
    let dir = format!("{}/../../fuzz/corpus/{target}", env!("CARGO_MANIFEST_DIR"));
    let mut files: Vec<(String, Vec<u8>)> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{dir}: {e}"))
        .map(|e| {
            let path = e.expect("listable").path();
            let name = path
                .file_name()
                .expect("a file")
                .to_string_lossy()
                .into_owned();
            (name, std::fs::read(&path).expect("readable"))
        })
        .collect();
    files.sort();
    files
}

#[test]
fn the_wav_corpus_decodes_or_fails_cleanly_and_refuses_rates_outside_8_to_192_khz() {
    let files = corpus("wav_decode");
    assert!(files.len() >= 3);
    for (name, data) in files {
        match decode_wav(data.as_slice(), &name) {
            Ok(clip) => {
                assert!(clip.sample_rate_hz > 0, "{name}");
                assert!(
                    !name.contains("-hz") && !name.contains("truncated"),
                    "{name}"
                );
            }
            Err(e) => {
                assert!(e.to_string().contains(&name), "{e}");
                if name.contains("zero-hz") {
                    assert!(e.to_string().contains("rate of 0 Hz"), "{e}");
                }
                if name.contains("one-hz") {
                    assert!(e.to_string().contains("rate of 1 Hz"), "{e}");
                }
            }
        }
    }
}

#[test]
fn the_image_corpus_decodes_or_fails_cleanly() {
    let files = corpus("image_decode");
    assert!(files.len() >= 2);
    let mut decoded = 0;
    for (name, data) in files {
        if let Ok(f) = RgbFrame::decode(&data, &name) {
            assert_eq!(f.data().len(), f.width() as usize * f.height() as usize * 3);
            decoded += 1;
        }
    }
    assert!(decoded >= 1);
}
