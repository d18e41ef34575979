//! Why a stream's source could not be opened: one variant per kind of source, each keeping
//! the source's own error as its cause.

use std::net::AddrParseError;

use mmsched_backends::BackendError;
use mmsched_models::MissingModel;
use mmsched_runtime::source::camera::CameraError;
use mmsched_runtime::source::feed::FrameError;
use mmsched_runtime::source::rtp::RtpError;
use mmsched_runtime::source::text::TextSourceError;

/// A source of a scenario's stream that could not be opened.
#[derive(Debug, thiserror::Error)]
pub enum SourceError {
    /// The generated camera could not start (its font, its frame size).
    #[error("cannot start the generated camera")]
    Camera(#[source] CameraError),
    /// A folder of frames, a video file or a V4L2 device could not be opened.
    #[error("cannot open the {kind} source")]
    Frames {
        /// `frames`, `video` or `v4l2`.
        kind: &'static str,
        /// Why.
        #[source]
        source: FrameError,
    },
    /// The RTP source's `bind` is not an IP address.
    #[error("source.bind {value:?} is not an IP address: write one such as \"127.0.0.1\"")]
    Bind {
        /// The value given.
        value: String,
        /// The parser's error.
        #[source]
        source: AddrParseError,
    },
    /// The RTP source's format or socket was refused.
    #[error("cannot receive RTP")]
    Rtp(#[source] RtpError),
    /// A WAV file (the source's, or the recorded speech clip) could not be read.
    #[error("cannot read the WAV file")]
    Wav(#[source] BackendError),
    /// The recorded speech clip is not in the model cache.
    #[error("the recorded speech clip is missing")]
    Clip(#[source] MissingModel),
    /// The prompts file could not be read.
    #[error("cannot read the prompts file")]
    Prompts(#[source] TextSourceError),
    /// The text requests could not be set up.
    #[error("cannot start the text requests")]
    Text(#[source] TextSourceError),
}
