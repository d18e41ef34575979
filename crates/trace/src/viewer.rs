//! mmTracer, the web viewer: three static files embedded in the binary.
//!
//! Plain JavaScript drawing on a canvas; no framework, no CDN, no build step. The page
//! loads trace NDJSON from `/api/v1/trace` (or a file the user opens or drops on it), so any
//! server that answers that path — `mmsched trace view`, `mmsched serve` — can host it by
//! serving [`asset`] for every other path.

const INDEX_HTML: &str = include_str!("viewer/index.html");
const VIEWER_JS: &str = include_str!("viewer/viewer.js");
const VIEWER_CSS: &str = include_str!("viewer/viewer.css");

/// Where the viewer fetches the trace from.
pub const TRACE_API_PATH: &str = "/api/v1/trace";

/// Content type of a trace served at [`TRACE_API_PATH`].
pub const TRACE_CONTENT_TYPE: &str = "application/x-ndjson";

/// The embedded asset at a URL path: its content type and bytes. `/` and `/index.html`
/// give the page; unknown paths give `None`.
pub fn asset(path: &str) -> Option<(&'static str, &'static [u8])> {
    match path {
        "/" | "/index.html" | "index.html" => {
            Some(("text/html; charset=utf-8", INDEX_HTML.as_bytes()))
        }
        "/viewer.js" | "viewer.js" | "/assets/viewer.js" | "assets/viewer.js" => {
            Some(("text/javascript; charset=utf-8", VIEWER_JS.as_bytes()))
        }
        "/viewer.css" | "viewer.css" | "/assets/viewer.css" | "assets/viewer.css" => {
            Some(("text/css; charset=utf-8", VIEWER_CSS.as_bytes()))
        }
        _ => None,
    }
}

/// Every asset path, for servers that register routes one by one.
pub const ASSET_PATHS: [&str; 3] = ["/", "/viewer.js", "/viewer.css"];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn assets_are_served_and_self_contained() {
        let (ct, html) = asset("/").expect("index");
        assert!(ct.starts_with("text/html"));
        let html = std::str::from_utf8(html).expect("utf-8");
        assert!(html.contains("viewer.js") && html.contains("viewer.css"));
        for p in ASSET_PATHS {
            let (_, body) = asset(p).expect("listed asset exists");
            let text = std::str::from_utf8(body).expect("utf-8");
            // No CDN: nothing is fetched from another origin.
            assert!(
                !text.contains("http://") && !text.contains("https://"),
                "{p} references a remote URL"
            );
        }
        assert!(asset("/nope").is_none());
    }
}
