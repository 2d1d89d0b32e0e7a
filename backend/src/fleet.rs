//! The fleet: one gRPC server per backend of a scenario, each on its own TCP listener, with
//! crash and restart done for real (the listener closes, open connections are cut, and it is bound
//! again on the same port at restart).
//!
//! Connections are served with hyper's HTTP/2 server directly, not `tonic::transport::Server`:
//! that one answers every call whose `grpc-timeout` has passed with DEADLINE_EXCEEDED, and a black
//! hole must never answer, and it offers no way to cut its connections without a graceful drain,
//! and a crash must not drain.

use std::convert::Infallible;
use std::future::Future;
use std::io::Write as _;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use hyper_util::rt::{TokioExecutor, TokioIo};
use lblab_model::backend::Backend;
use lblab_model::scenario::BackendSpec;
use lblab_policy::Nanos;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::task::{JoinHandle, JoinSet};
use tonic::server::NamedService;
use tonic_health::pb::health_server::HealthServer;
use tonic_health::server::{HealthReporter, HealthService};

use lblab_wire::orca::OrcaTrailers;
use lblab_wire::pb::echo::echo_server::EchoServer;
use lblab_wire::timer::{PreciseTimer, DEFAULT_SPIN};
use lblab_wire::Clock;

pub use lblab_record::DelayAccuracy;

use crate::node::{EchoService, Node};
use crate::{BackendError, ListenError};

/// How to start a fleet.
#[derive(Debug, Clone)]
pub struct FleetOptions {
    /// Where to listen. With port 0 every backend gets an ephemeral port; with port `p`, backend `i`
    /// listens on `p + i`. Default `127.0.0.1:0`.
    pub listen: SocketAddr,
    /// Time 0 of the scenario's fault timeline (default: when the fleet starts). A load generator
    /// in the same process passes the same instant so both agree on when faults happen.
    pub origin: Option<Instant>,
    /// How long before each deadline the timer thread spins instead of sleeping.
    pub spin: Duration,
    /// Run the timer thread in the real-time scheduling class at this priority
    /// ([`timer::set_realtime`](lblab_wire::timer::set_realtime)); `None`: normal priority.
    pub realtime: Option<i32>,
    /// Pin the timer thread to this CPU ([`timer::pin_to_cpu`](lblab_wire::timer::pin_to_cpu)).
    pub cpu: Option<usize>,
}

impl Default for FleetOptions {
    fn default() -> Self {
        FleetOptions {
            listen: SocketAddr::from(([127, 0, 0, 1], 0)),
            origin: None,
            spin: DEFAULT_SPIN,
            realtime: None,
            cpu: None,
        }
    }
}

/// A running fleet. Dropping it without [`Fleet::shutdown`] aborts its tasks.
pub struct Fleet {
    nodes: Vec<Arc<Node>>,
    addrs: Vec<SocketAddr>,
    stop: watch::Sender<bool>,
    tasks: Vec<JoinHandle<()>>,
    clock: Clock,
    _timer: PreciseTimer,
}

impl std::fmt::Debug for Fleet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Fleet").field("addrs", &self.addrs).finish()
    }
}

impl Fleet {
    /// Starts one server per backend. Must be called inside a tokio runtime; the servers run on
    /// it, and crash/restart times are taken from each backend's timeline relative to the origin.
    pub async fn start(
        backends: &[BackendSpec],
        options: &FleetOptions,
    ) -> Result<Fleet, BackendError> {
        let origin = options.origin.unwrap_or_else(Instant::now);
        let clock = Clock::new(origin);
        let timer = PreciseTimer::start(
            "lblab-backend-timer",
            options.spin,
            options.realtime,
            options.cpu,
        )
        .map_err(|cause| BackendError::Io {
            what: "starting the timer thread".into(),
            cause,
        })?;
        let (stop, _) = watch::channel(false);
        let mut fleet = Fleet {
            nodes: Vec::new(),
            addrs: Vec::new(),
            stop,
            tasks: Vec::new(),
            clock,
            _timer: timer,
        };
        let reflection = Reflection::new()
            .map_err(|e| BackendError::Config(format!("building the reflection service: {e}")))?;
        for (i, spec) in backends.iter().enumerate() {
            let mut addr = options.listen;
            if addr.port() != 0 {
                let port = u16::try_from(usize::from(addr.port()) + i).map_err(|_| {
                    ListenError::PastLastPort {
                        port: options.listen.port(),
                        backends: backends.len(),
                    }
                })?;
                addr.set_port(port);
            }
            let listener = TcpListener::bind(addr).await.map_err(|cause| {
                if cause.kind() == std::io::ErrorKind::AddrInUse {
                    BackendError::Listen(ListenError::InUse {
                        backend: spec.name.clone(),
                        addr,
                        cause,
                    })
                } else {
                    BackendError::Io {
                        what: format!("backend {} cannot listen on {addr}", spec.name),
                        cause,
                    }
                }
            })?;
            let addr = listener.local_addr().map_err(|cause| BackendError::Io {
                what: "reading the bound address".into(),
                cause,
            })?;
            let model = Backend::new(spec.params.clone(), spec.timeline.clone(), spec.seed);
            let node = Arc::new(Node::new(
                spec.name.clone(),
                model,
                clock,
                fleet._timer.handle(),
                spec.network_rtt,
            ));
            let reporter = HealthReporter::new();
            reporter.set_serving::<EchoServer<EchoService>>().await;
            let router = Router {
                node: node.clone(),
                echo: EchoServer::new(EchoService { node: node.clone() }),
                health: HealthServer::new(HealthService::from_health_reporter(reporter)),
                reflection: reflection.clone(),
            };
            let down_at_start = spec.timeline.down_at(0);
            let first = if down_at_start { None } else { Some(listener) };
            let changes = spec.timeline.availability_changes();
            let task = tokio::spawn(serve_node(
                node.clone(),
                router,
                addr,
                first,
                changes,
                fleet.stop.subscribe(),
            ));
            fleet.tasks.push(task);
            fleet.nodes.push(node);
            fleet.addrs.push(addr);
        }
        Ok(fleet)
    }

    /// The servers' addresses, in backend order.
    pub fn addrs(&self) -> &[SocketAddr] {
        &self.addrs
    }

    /// Time 0 of the fault timeline.
    pub fn origin(&self) -> Instant {
        self.clock.origin()
    }

    /// Delay accuracy so far, over the whole fleet.
    pub fn delay_accuracy(&self) -> DelayAccuracy {
        let mut all =
            Histogram::<u64>::new_with_bounds(1, 3_600_000_000_000, 3).expect("valid bounds");
        let mut early = 0;
        for n in &self.nodes {
            let st = n.lock();
            let _ = all.add(&st.delay_error);
            early += st.early;
        }
        DelayAccuracy::from_histogram(&all, early)
    }

    /// Stops every server (listeners closed, connections cut) and the timer thread, and returns the
    /// delay accuracy of the whole run.
    pub async fn shutdown(mut self) -> DelayAccuracy {
        let _ = self.stop.send(true);
        for t in self.tasks.drain(..) {
            let _ = t.await;
        }
        self.delay_accuracy()
    }
}

impl Drop for Fleet {
    fn drop(&mut self) {
        for t in &self.tasks {
            t.abort();
        }
    }
}

enum Wake {
    Stop,
    Change(bool),
    Accepted(std::io::Result<TcpStream>),
}

/// One backend's accept loop, following its timeline's crashes and restarts.
async fn serve_node(
    node: Arc<Node>,
    router: Router,
    addr: SocketAddr,
    mut listener: Option<TcpListener>,
    changes: Vec<(Nanos, bool)>,
    mut stop: watch::Receiver<bool>,
) {
    let svc = OrcaTrailers::new(router);
    let mut conns = JoinSet::new();
    let mut changes = changes.into_iter().peekable();
    loop {
        let change_at = changes
            .peek()
            .map(|&(t, up)| (tokio::time::Instant::from_std(node.clock.instant(t)), up));
        let wake = tokio::select! {
            _ = stop.changed() => Wake::Stop,
            up = async {
                match change_at {
                    Some((at, up)) => { tokio::time::sleep_until(at).await; up }
                    None => std::future::pending().await,
                }
            } => Wake::Change(up),
            accepted = async {
                match &listener {
                    Some(l) => l.accept().await.map(|(s, _)| s),
                    None => std::future::pending().await,
                }
            } => Wake::Accepted(accepted),
        };
        match wake {
            Wake::Stop => break,
            Wake::Change(up) => {
                changes.next();
                if up {
                    if listener.is_none() {
                        listener = rebind(addr, &mut stop).await;
                    }
                } else {
                    // The process dies: no more listener, every connection cut, work in flight lost.
                    listener = None;
                    conns.abort_all();
                    node.crash();
                }
            }
            Wake::Accepted(Ok(stream)) => {
                let _ = stream.set_nodelay(true);
                conns.spawn(serve_connection(stream, svc.clone()));
                while conns.try_join_next().is_some() {}
            }
            Wake::Accepted(Err(_)) => {
                // Out of file descriptors or similar: back off briefly instead of spinning.
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        }
    }
    drop(listener);
    conns.abort_all();
    node.crash();
}

/// Binds `addr` again after a restart, retrying while something else holds the port.
async fn rebind(addr: SocketAddr, stop: &mut watch::Receiver<bool>) -> Option<TcpListener> {
    loop {
        match TcpListener::bind(addr).await {
            Ok(l) => return Some(l),
            Err(e) => {
                // Never a panic on a closed stderr (a fleet run under `| head`).
                let _ = writeln!(
                    std::io::stderr(),
                    "lblab-backend: cannot listen on {addr} again after restart ({e}); retrying"
                );
                tokio::select! {
                    _ = stop.changed() => return None,
                    _ = tokio::time::sleep(Duration::from_millis(100)) => {}
                }
            }
        }
    }
}

async fn serve_connection(stream: TcpStream, svc: OrcaTrailers<Router>) {
    let svc = hyper_util::service::TowerToHyperService::new(svc);
    let _ = hyper::server::conn::http2::Builder::new(TokioExecutor::new())
        .serve_connection(TokioIo::new(stream), svc)
        .await;
}

type BoxFuture =
    Pin<Box<dyn Future<Output = Result<http::Response<tonic::body::Body>, Infallible>> + Send>>;

/// A gRPC service behind a box: the reflection services' types cannot be named.
type BoxedService = tower::util::BoxCloneService<
    http::Request<tonic::body::Body>,
    http::Response<tonic::body::Body>,
    Infallible,
>;

/// Server reflection (grpc.reflection.v1 and v1alpha) over lblab's protos and the health
/// service's, so that grpcurl-style tools (and `lblab loadgen --call`) discover the services.
#[derive(Clone)]
struct Reflection {
    v1: BoxedService,
    v1alpha: BoxedService,
}

impl Reflection {
    fn new() -> Result<Reflection, tonic_reflection::server::Error> {
        let builder = || {
            tonic_reflection::server::Builder::configure()
                .register_encoded_file_descriptor_set(lblab_wire::pb::FILE_DESCRIPTOR_SET)
                .register_encoded_file_descriptor_set(tonic_health::pb::FILE_DESCRIPTOR_SET)
        };
        Ok(Reflection {
            v1: BoxedService::new(builder().build_v1()?),
            v1alpha: BoxedService::new(builder().build_v1alpha()?),
        })
    }
}

/// Routes a request to the Echo, health or reflection service by its path.
#[derive(Clone)]
struct Router {
    node: Arc<Node>,
    echo: EchoServer<EchoService>,
    health: HealthServer<HealthService>,
    reflection: Reflection,
}

impl<B> tower::Service<http::Request<B>> for Router
where
    B: http_body::Body<Data = bytes::Bytes> + Send + 'static,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>> + Send + 'static,
{
    type Response = http::Response<tonic::body::Body>;
    type Error = Infallible;
    type Future = BoxFuture;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: http::Request<B>) -> BoxFuture {
        let req = req.map(tonic::body::Body::new);
        let path = req.uri().path();
        let is = |name: &str| {
            path.strip_prefix('/')
                .and_then(|p| p.strip_prefix(name))
                .is_some_and(|r| r.starts_with('/'))
        };
        if is(<EchoServer<EchoService> as NamedService>::NAME) {
            Box::pin(tower::Service::call(&mut self.echo, req))
        } else if is(<HealthServer<HealthService> as NamedService>::NAME) {
            // The health service sees the backend's faults as a health Check would.
            let (node, call) = (
                self.node.clone(),
                tower::Service::call(&mut self.health, req),
            );
            Box::pin(async move {
                node.health_gate().await;
                call.await
            })
        } else if is("grpc.reflection.v1.ServerReflection") {
            Box::pin(tower::Service::call(&mut self.reflection.v1, req))
        } else if is("grpc.reflection.v1alpha.ServerReflection") {
            Box::pin(tower::Service::call(&mut self.reflection.v1alpha, req))
        } else {
            Box::pin(async { Ok(tonic::Status::unimplemented("no such service").into_http()) })
        }
    }
}
