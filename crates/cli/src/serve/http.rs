//! The HTTP side of `tasksnap serve` (hyper on a one-thread tokio runtime): `GET /metrics`
//! answers with the last collection's bytes, in OpenMetrics when the `Accept` header asks for
//! it (Prometheus does), else in the Prometheus text format; `/` says where the metrics are;
//! anything else is 404, any other method 405.
//!
//! Bounded against bad clients: a request head larger than 16 KiB is refused (431) and one
//! not sent within 10 s is dropped (a silent connection, or one idle between requests);
//! a connection is asked to close after 60 s (the scrape in flight, if any, is finished
//! first) and cut 10 s later whatever it is doing, so a client that never reads holds one
//! connection for at most 70 s. At most the budget's connections are served at once
//! ([`super::budget`]: the open-files limit decides, up to 1,024); at the cap a newcomer is
//! served and an old connection goes in its place ([`super::conns`] says which), so no
//! client can hold the exporter by holding connections. A newcomer is answered 503 only if
//! no connection could be made to go within a second.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::header::{HeaderValue, ACCEPT, ALLOW, CONTENT_TYPE};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use tasksnap_export::encode::{
    wants_openmetrics, OPENMETRICS_CONTENT_TYPE, PROMETHEUS_CONTENT_TYPE,
};
use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpSocket};
use tokio::sync::{Notify, Semaphore};

use super::budget::Budget;
use super::conns::Conns;
use super::shared::Shared;

const MAX_HEAD_BYTES: usize = 16 * 1024;
const HEAD_TIMEOUT: Duration = Duration::from_secs(10);
const CONNECTION_LIFETIME: Duration = Duration::from_secs(60);
const CLOSE_GRACE: Duration = Duration::from_secs(10);
/// How long a newcomer waits for the connection it displaces to close.
const EVICT_WAIT: Duration = Duration::from_secs(1);
/// Newcomers being answered 503 at once (each holds a descriptor for up to a second, counted
/// in [`super::budget::NEWCOMERS`]); past that they are closed without an answer.
const MAX_REFUSING: usize = 2;

/// How the serving went.
#[derive(Debug, Default)]
pub struct Served {
    /// Scrapes of /metrics answered.
    pub scrapes: u64,
}

/// Binds `addr` with a listen queue deep enough for a burst of scrapers.
pub fn listen(addr: SocketAddr) -> Result<TcpListener, String> {
    let socket = if addr.is_ipv4() {
        TcpSocket::new_v4()
    } else {
        TcpSocket::new_v6()
    }
    .map_err(|e| format!("cannot make a socket: {e}"))?;
    // A restart must not wait for the old connections' TIME_WAIT.
    socket
        .set_reuseaddr(true)
        .map_err(|e| format!("cannot set SO_REUSEADDR: {e}"))?;
    socket.bind(addr).map_err(|e| match e.kind() {
        std::io::ErrorKind::AddrInUse => format!(
            "{addr} is in use (another tasksnap serve, or another exporter?): choose another \
             with --listen ADDR:PORT"
        ),
        std::io::ErrorKind::AddrNotAvailable => {
            format!("{addr}: no interface of this host has that address")
        }
        std::io::ErrorKind::PermissionDenied => {
            format!("{addr}: not allowed (a port below 1024 needs CAP_NET_BIND_SERVICE)")
        }
        _ => format!("cannot listen on {addr}: {e}"),
    })?;
    socket
        .listen(1024)
        .map_err(|e| format!("cannot listen on {addr}: {e}"))
}

/// Serves until `stop` is notified, at most `budget.connections` connections at once.
pub async fn serve(
    listener: TcpListener,
    shared: Arc<Shared>,
    stop: Arc<Notify>,
    budget: Budget,
) -> Served {
    let slots = Arc::new(Semaphore::new(budget.connections));
    // The sockets are this process's: the running kernel's tables, whatever tree the
    // collection reads.
    let conns = Arc::new(Conns::new(tasksnap_collect::Host::tcp_owners()));
    let refusing = Arc::new(AtomicUsize::new(0));
    let scrapes = Arc::new(AtomicU64::new(0));
    let local = listener.local_addr().ok();
    let mut accept_errors = 0u64;
    loop {
        let accepted = tokio::select! {
            a = listener.accept() => a,
            _ = stop.notified() => break,
        };
        let (stream, peer) = match accepted {
            Ok(s) => s,
            Err(e) => {
                // Out of descriptors or memory: say so once in a while, and give the
                // connections in flight a moment to end.
                if accept_errors % 1000 == 0 {
                    warn!("tasksnap serve: accepting a connection: {e}");
                }
                accept_errors += 1;
                tokio::time::sleep(Duration::from_millis(10)).await;
                continue;
            }
        };
        let _ = stream.set_nodelay(true);
        let permit = match slots.clone().try_acquire_owned() {
            Ok(p) => Some(p),
            // At the cap: an old connection goes (see conns.rs) and the newcomer takes its
            // place once it is closed.
            Err(_) if conns.evict_one() => {
                shared.evicted.fetch_add(1, Ordering::Relaxed);
                tokio::time::timeout(EVICT_WAIT, slots.clone().acquire_owned())
                    .await
                    .ok()
                    .and_then(Result::ok)
            }
            Err(_) => None,
        };
        let Some(permit) = permit else {
            if refusing.load(Ordering::Relaxed) < MAX_REFUSING {
                refusing.fetch_add(1, Ordering::Relaxed);
                let refusing = refusing.clone();
                tokio::spawn(async move {
                    let mut stream = stream;
                    let busy = b"HTTP/1.1 503 Service Unavailable\r\nRetry-After: 1\r\n\
                                 Content-Length: 0\r\nConnection: close\r\n\r\n";
                    let _ =
                        tokio::time::timeout(Duration::from_secs(1), stream.write_all(busy)).await;
                    refusing.fetch_sub(1, Ordering::Relaxed);
                });
            }
            continue;
        };
        let (id, evict) = conns.add(peer, local.unwrap_or(peer));
        let shared = shared.clone();
        let scrapes = scrapes.clone();
        let conns_of_task = conns.clone();
        tokio::spawn(async move {
            let _permit = permit;
            let conns = conns_of_task;
            let service = {
                let conns = conns.clone();
                service_fn(move |req: Request<Incoming>| {
                    conns.request(id);
                    let response = respond(&shared, &req, &scrapes);
                    async move { Ok::<_, Infallible>(response) }
                })
            };
            let mut builder = http1::Builder::new();
            builder
                .timer(TokioTimer::new())
                .header_read_timeout(HEAD_TIMEOUT)
                .max_buf_size(MAX_HEAD_BYTES);
            let conn = builder.serve_connection(TokioIo::new(stream), service);
            tokio::pin!(conn);
            tokio::select! {
                _ = conn.as_mut() => {}
                // Displaced by a newcomer: closed at once (dropping it closes the socket).
                _ = evict.notified() => {}
                _ = tokio::time::sleep(CONNECTION_LIFETIME) => {
                    conn.as_mut().graceful_shutdown();
                    tokio::select! {
                        _ = tokio::time::timeout(CLOSE_GRACE, conn) => {}
                        _ = evict.notified() => {}
                    }
                }
            }
            conns.remove(id);
        });
        // Let the newcomer read the request it has most likely sent already before the
        // next accept can make it the oldest silent connection.
        tokio::task::yield_now().await;
    }
    Served {
        scrapes: scrapes.load(Ordering::Relaxed),
    }
}

fn respond(shared: &Shared, req: &Request<Incoming>, scrapes: &AtomicU64) -> Response<Full<Bytes>> {
    let text = |status: StatusCode, body: &'static str| {
        let mut r = Response::new(Full::new(Bytes::from_static(body.as_bytes())));
        *r.status_mut() = status;
        r.headers_mut().insert(
            CONTENT_TYPE,
            HeaderValue::from_static("text/plain; charset=utf-8"),
        );
        r
    };
    if req.method() != Method::GET && req.method() != Method::HEAD {
        let mut r = text(StatusCode::METHOD_NOT_ALLOWED, "only GET and HEAD\n");
        r.headers_mut()
            .insert(ALLOW, HeaderValue::from_static("GET, HEAD"));
        return r;
    }
    match req.uri().path() {
        "/metrics" => {
            let e = shared.current();
            let om = req
                .headers()
                .get_all(ACCEPT)
                .iter()
                .filter_map(|v| v.to_str().ok())
                .any(wants_openmetrics);
            let (body, kind) = if om {
                (e.openmetrics.clone(), OPENMETRICS_CONTENT_TYPE)
            } else {
                (e.prometheus.clone(), PROMETHEUS_CONTENT_TYPE)
            };
            scrapes.fetch_add(1, Ordering::Relaxed);
            let mut r = Response::new(Full::new(Bytes::from_owner(body)));
            r.headers_mut()
                .insert(CONTENT_TYPE, HeaderValue::from_static(kind));
            r
        }
        "/" => text(
            StatusCode::OK,
            "tasksnap serve: the metrics are at /metrics (see docs/serve.md)\n",
        ),
        _ => text(
            StatusCode::NOT_FOUND,
            "not found: the metrics are at /metrics\n",
        ),
    }
}
