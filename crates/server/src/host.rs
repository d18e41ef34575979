//! Which `Host` headers the server answers. A browser page on another site can send
//! requests to this machine under a DNS name it controls (DNS rebinding); checking `Host`
//! against the address the server is bound to stops that. IP literals cannot be rebound, so
//! they pass when they name the bound address (any address when bound to 0.0.0.0 or ::);
//! names other than `localhost` must be allowed explicitly.

use std::net::{IpAddr, SocketAddr};

use axum::Router;
use axum::extract::Request;
use axum::http::{StatusCode, header};
use axum::middleware::Next;

/// The `Host` policy of a server.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum HostCheck {
    /// The bound address (or `localhost` on a loopback or wildcard bind), with the bound
    /// port, plus these names (`name` or `name:port`, compared case-insensitively).
    #[default]
    BoundAddress,
    /// The bound address as above, plus these host names.
    BoundAddressAnd(Vec<String>),
    /// Any `Host` (the check is off).
    Any,
}

impl HostCheck {
    /// From the values of a repeatable `--allow-host` option: none → the bound address
    /// only; `*` → any.
    pub fn from_allowed(names: &[String]) -> Self {
        if names.iter().any(|n| n == "*") {
            Self::Any
        } else if names.is_empty() {
            Self::BoundAddress
        } else {
            Self::BoundAddressAnd(names.iter().map(|n| n.to_ascii_lowercase()).collect())
        }
    }

    /// Whether a request with this `Host` header value is answered by a server bound to
    /// `bound`.
    pub fn allows(&self, host: &str, bound: SocketAddr) -> bool {
        let extra: &[String] = match self {
            Self::Any => return true,
            Self::BoundAddress => &[],
            Self::BoundAddressAnd(names) => names,
        };
        let host = host.trim().to_ascii_lowercase();
        let Some((name, port)) = split_host(&host) else {
            return false;
        };
        if extra
            .iter()
            .any(|a| *a == host || (*a == name && port == bound.port()))
        {
            return true;
        }
        if port != bound.port() {
            return false;
        }
        let wildcard = bound.ip().is_unspecified();
        match name.parse::<IpAddr>() {
            Ok(ip) => wildcard || ip == bound.ip(),
            Err(_) => name == "localhost" && (wildcard || bound.ip().is_loopback()),
        }
    }
}

/// `router` answering 421 to every request whose `Host` `check` does not allow for a
/// server bound to `bound`.
pub fn guard(router: Router, check: HostCheck, bound: SocketAddr) -> Router {
    if check == HostCheck::Any {
        return router;
    }
    router.layer(axum::middleware::from_fn(move |req: Request, next: Next| {
        let check = check.clone();
        async move {
            let host = req
                .headers()
                .get(header::HOST)
                .and_then(|h| h.to_str().ok())
                .unwrap_or("");
            if check.allows(host, bound) {
                return next.run(req).await;
            }
            let message = format!(
                "this server answers requests for {bound} only, not for Host {:?}; use that address, or start the server with --allow-host NAME for a name that points at it",
                mmsched_core::text::shorten(host, 80)
            );
            crate::api::error(StatusCode::MISDIRECTED_REQUEST, message)
        }
    }))
}

/// `host[:port]` or `[v6][:port]` → (host without brackets, port; 80 when absent).
fn split_host(host: &str) -> Option<(&str, u16)> {
    if let Some(rest) = host.strip_prefix('[') {
        let (ip, after) = rest.split_once(']')?;
        let port = match after.strip_prefix(':') {
            Some(p) => p.parse().ok()?,
            None if after.is_empty() => 80,
            None => return None,
        };
        return Some((ip, port));
    }
    match host.rsplit_once(':') {
        Some((name, p)) => Some((name, p.parse().ok()?)),
        None => Some((host, 80)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn addr(s: &str) -> SocketAddr {
        s.parse().unwrap_or_else(|e| panic!("{s}: {e}"))
    }

    #[test]
    fn the_bound_loopback_address_and_localhost_pass() {
        let b = addr("127.0.0.1:9100");
        let c = HostCheck::default();
        assert!(c.allows("127.0.0.1:9100", b));
        assert!(c.allows("localhost:9100", b));
        assert!(c.allows("LOCALHOST:9100", b));
    }

    #[test]
    fn another_port_name_or_address_is_refused() {
        let b = addr("127.0.0.1:9100");
        let c = HostCheck::default();
        assert!(!c.allows("127.0.0.1:9101", b));
        assert!(!c.allows("evil.example:9100", b));
        assert!(!c.allows("10.0.0.1:9100", b));
        assert!(!c.allows("127.0.0.1", b), "no port means 80");
        assert!(!c.allows("127.0.0.1:notaport", b));
        assert!(!c.allows("", b));
    }

    #[test]
    fn a_wildcard_bind_takes_any_ip_literal_but_no_unlisted_name() {
        let b = addr("0.0.0.0:8080");
        let c = HostCheck::default();
        assert!(c.allows("192.0.2.7:8080", b));
        assert!(c.allows("[::1]:8080", b));
        assert!(c.allows("localhost:8080", b));
        assert!(!c.allows("device.lan:8080", b));
        assert!(HostCheck::from_allowed(&["Device.lan".into()]).allows("device.lan:8080", b));
        assert!(HostCheck::from_allowed(&["device.lan:8080".into()]).allows("device.lan:8080", b));
        assert!(!HostCheck::from_allowed(&["device.lan:1".into()]).allows("device.lan:8080", b));
    }

    #[test]
    fn a_star_turns_the_check_off() {
        let c = HostCheck::from_allowed(&["*".into()]);
        assert_eq!(c, HostCheck::Any);
        assert!(c.allows("anything:1", addr("127.0.0.1:9100")));
    }

    #[test]
    fn ipv6_hosts_are_split_at_the_bracket() {
        assert_eq!(split_host("[::1]:80"), Some(("::1", 80)));
        assert_eq!(split_host("[::1]"), Some(("::1", 80)));
        assert_eq!(split_host("[::1]x"), None);
        assert!(HostCheck::default().allows("[::1]:9100", addr("[::1]:9100")));
    }
}
