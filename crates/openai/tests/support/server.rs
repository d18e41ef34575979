//! A server over a runtime in virtual time, for the HTTP tests: mmsched's real executor on
//! virtual lanes and fake models that answer at once (`mmsched-pipeline`'s `fakes`).

use std::collections::BTreeMap;
use std::sync::Arc;

use axum::body::Body;
use axum::http::Request;
use mmsched_core::policy::Policy;
use mmsched_openai::keys::ApiKeys;
use mmsched_openai::results::feed_channel;
use mmsched_openai::{ClassSettings, OpenAi, router};
use mmsched_pipeline::RunConfig;
use mmsched_pipeline::host::{FOREVER_NANOS, Host, serving_scenario};
use mmsched_pipeline::inputs::DEVICE_EPOCH_NANOS;
use mmsched_pipeline::models::fake::{QUICK, virtual_mmsched};
use mmsched_pipeline::run::{Quiet, RunParts};
use mmsched_pipeline::stats::Kind;
use mmsched_report::RunSummary;
use mmsched_runtime::sched::SchedulerKind;
use mmsched_runtime::sched::virtual_time::VirtualClock;
use tower::ServiceExt;

/// A server over a runtime in virtual time.
pub struct Server {
    host: Host,
    app: axum::Router,
}

pub struct Setup {
    pub sessions: usize,
    pub shedding: bool,
    pub caps: BTreeMap<Kind, ClassSettings>,
    pub keys: Option<&'static str>,
    pub upload_limit: usize,
    pub decode_budget: Option<usize>,
}

impl Default for Setup {
    fn default() -> Self {
        Self {
            sessions: 1,
            shedding: true,
            caps: BTreeMap::new(),
            keys: None,
            upload_limit: 1 << 20,
            decode_budget: None,
        }
    }
}

pub fn server(s: Setup) -> Server {
    let clock = VirtualClock::new(DEVICE_EPOCH_NANOS);
    let policy = Policy::default();
    let (exec, models) = virtual_mmsched(&policy, 2, !s.shedding, &clock, QUICK);
    let parts = RunParts {
        clock,
        exec,
        models: Arc::new(models.with_llm_sessions(s.sessions)),
        notes: Vec::new(),
        signals: None,
    };
    let mut config = RunConfig::new(
        serving_scenario(2).expect("scenario"),
        policy,
        SchedulerKind::Mmsched,
    );
    config.duration_nanos = FOREVER_NANOS;
    config.platform = false;
    // Without shedding, neither the executor nor the book sheds (the `no-admission`
    // ablation's pair of settings).
    config.mechanisms.admission = s.shedding;
    let host = Host::with_parts(config, parts, Box::new(Quiet)).expect("runtime");
    let keys = s.keys.map(|k| ApiKeys::parse(k).expect("keys"));
    let mut api = OpenAi::new(host.client(), s.caps, s.upload_limit, feed_channel(), keys);
    if let Some(bytes) = s.decode_budget {
        api = api.with_decode_budget(bytes);
    }
    Server {
        host,
        app: router(Arc::new(api)),
    }
}

impl Server {
    pub async fn send(&self, req: Request<Body>) -> axum::response::Response {
        self.app.clone().oneshot(req).await.expect("infallible")
    }

    pub fn finish(self) -> RunSummary {
        self.host.finish().expect("the runtime stops").summary
    }
}
