//! `serve`: the web dashboard (`jobs_web`) of the backend on an address of its own, until
//! SIGTERM or Ctrl-C.

use std::future::IntoFuture;
use std::net::SocketAddr;
use std::time::Duration;

use jobs::AnyBackend;
use tokio::net::TcpListener;
use tokio::sync::watch;

use crate::Failure;

/// How long open connections (a page's live event stream never ends by itself) may take to
/// finish once a shutdown signal came.
const GRACE: Duration = Duration::from_secs(2);

/// Serves the dashboard of `backend` on `bind` (read-only with `read_only`), printing the URL
/// once listening, until a shutdown signal.
pub(crate) async fn serve(
    backend: AnyBackend,
    bind: SocketAddr,
    read_only: bool,
) -> Result<(), Failure> {
    let listener = TcpListener::bind(bind)
        .await
        .map_err(|e| Failure::Unavailable(format!("cannot listen on {bind}: {e}")))?;
    let addr = listener
        .local_addr()
        .map_err(|e| Failure::Unavailable(format!("cannot listen on {bind}: {e}")))?;
    let app = jobs_web::Dashboard::new(backend)
        .read_only(read_only)
        .router();
    crate::print(&format!("serving the dashboard on http://{addr}/\n"));

    let (signalled, mut stopping) = watch::channel(false);
    let server = axum::serve(listener, app)
        .with_graceful_shutdown(async move {
            jobs::shutdown_signal().await;
            let _ = signalled.send(true);
        })
        .into_future();
    let grace_over = async move {
        if stopping.wait_for(|&stop| stop).await.is_ok() {
            tokio::time::sleep(GRACE).await;
        }
    };
    tokio::select! {
        served = server => served
            .map_err(|e| Failure::Refused(format!("the dashboard's server failed: {e}"))),
        () = grace_over => Ok(()),
    }
}
