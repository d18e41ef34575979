//! `GET /api/v1/results`: every result as a server-sent event while the server runs — the
//! HTTP requests' answers (`"origin": "api"`) and a scenario's OCR lines, speech segments,
//! transcripts and answers (`"origin": "streams"`) — one JSON object per event, shaped
//! like a line of `mmsched run --results`.

use std::sync::Arc;

use axum::body::Body;
use axum::extract::State;
use axum::response::Response;
use mmsched_pipeline::results::ResultRecord;
use mmsched_pipeline::run::Observer;
use tokio::sync::broadcast;

use crate::OpenAi;
use crate::answer::event_stream;

/// Results a slow reader may fall behind by before it misses some (it is told how many).
pub const FEED_CAPACITY: usize = 1024;

/// A new feed (give its sender to [`Publish`] and to [`crate::OpenAi::new`]).
pub fn feed_channel() -> broadcast::Sender<String> {
    broadcast::channel(FEED_CAPACITY).0
}

/// Publishes a runtime's results to the feed.
#[derive(Debug)]
pub struct Publish(pub broadcast::Sender<String>);

impl Observer for Publish {
    fn result(&mut self, record: &ResultRecord) {
        // No subscriber is not an error: the feed is for whoever listens.
        let _ = self.0.send(record.to_json_line());
    }
}

/// The feed as server-sent events.
pub async fn feed(State(api): State<Arc<OpenAi>>) -> Response {
    let rx = api.results.subscribe();
    let events = futures_util::stream::unfold(rx, |mut rx| async move {
        let event = match rx.recv().await {
            Ok(line) => format!("data: {line}\n\n"),
            Err(broadcast::error::RecvError::Lagged(n)) => {
                format!(": {n} result(s) skipped: this reader fell behind\n\n")
            }
            Err(broadcast::error::RecvError::Closed) => return None,
        };
        Some((Ok::<_, std::convert::Infallible>(event), rx))
    });
    event_stream(Body::from_stream(events))
}
