//! A worker's liveness: a hold on the store that ends by itself when the worker's process dies,
//! so that other workers rescue its jobs at once instead of waiting out their leases.
//!
//! A backend keeps the hold on a connection of its own (on PostgreSQL a session advisory lock,
//! on Redis the connection's client name): the server drops it the moment the process dies,
//! since the kernel closes the process's sockets. The backend says how to make such a
//! connection and how to tell it broke ([`Hold`]); [`LivenessKeeper::keep`] holds it, taking it
//! again after each break, and reports whether it stands. The worker keeps the [`Liveness`],
//! and dropping it ends the hold. A stopped (SIGSTOP) or hung process keeps its connection, and so its hold:
//! its jobs are rescued when their leases lapse, as before, and its late writes are refused.
//!
//! ```
//! # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
//! use jobs_core::liveness;
//!
//! let (keeper, liveness) = liveness();
//! assert_eq!(liveness.held_for(), None);
//! keeper.held();
//! assert!(liveness.held_for().is_some());
//! drop(liveness);
//! keeper.released().await; // the backend's task now lets the hold go
//! # });
//! ```

use std::future::Future;
use std::time::Duration;

use tokio::sync::watch;
use tokio::time::Instant;

use crate::Error;

/// The first pause before a broken hold is taken again; it doubles up to [`MAX_PAUSE`].
const FIRST_PAUSE: Duration = Duration::from_millis(50);
/// The longest pause between attempts to take a hold again.
const MAX_PAUSE: Duration = Duration::from_secs(1);

/// How a backend holds a worker's liveness: a connection of its own that holds it while open.
pub trait Hold: Send + 'static {
    /// The connection that holds it; dropping it lets the hold go.
    type Conn: Send;

    /// Makes a connection that holds the worker's liveness.
    fn take(&mut self) -> impl Future<Output = Result<Self::Conn, Error>> + Send;

    /// Resolves when `conn` no longer holds it (it stopped answering).
    fn broken(conn: &mut Self::Conn) -> impl Future<Output = ()> + Send;
}

/// The worker's side of a hold: whether it stands, and since when. Dropping it ends the hold.
#[derive(Debug)]
pub struct Liveness {
    since: watch::Receiver<Option<Instant>>,
}

/// The backend's side of a hold: it reports whether the hold stands, and learns when the
/// worker let it go.
#[derive(Debug)]
pub struct LivenessKeeper {
    since: watch::Sender<Option<Instant>>,
}

/// A new hold, not yet standing: the backend's task keeps the [`LivenessKeeper`], the worker
/// the [`Liveness`].
pub fn liveness() -> (LivenessKeeper, Liveness) {
    let (since, receiver) = watch::channel(None);
    (LivenessKeeper { since }, Liveness { since: receiver })
}

impl Liveness {
    /// The liveness of a backend that cannot tell a dead process from a live one: it never
    /// stands, so the worker's jobs are rescued only when their leases lapse.
    pub fn unsupported() -> Self {
        liveness().1
    }

    /// Waits until the hold stands, up to `within`; returns at once when it never can (the
    /// backend's side is gone). False when it does not stand.
    pub async fn stands_within(&self, within: Duration) -> bool {
        let mut since = self.since.clone();
        let stood = tokio::time::timeout(within, since.wait_for(Option::is_some)).await;
        matches!(stood, Ok(Ok(_)))
    }

    /// Whether the hold can still stand: false once the backend's side is gone (or never was,
    /// [`Liveness::unsupported`]).
    pub fn can_stand(&self) -> bool {
        self.since.has_changed().is_ok()
    }

    /// How long the hold has stood without a break; `None` while it does not.
    pub fn held_for(&self) -> Option<Duration> {
        self.since.borrow().map(|since| since.elapsed())
    }
}

impl LivenessKeeper {
    /// The hold stands (again): counts from now unless it already stood.
    pub fn held(&self) {
        self.since.send_if_modified(|since| {
            let was = since.is_some();
            since.get_or_insert_with(Instant::now);
            !was
        });
    }

    /// The hold was lost (its connection broke); the backend is taking it again.
    pub fn lost(&self) {
        self.since.send_replace(None);
    }

    /// Resolves when the worker has let the hold go (dropped its [`Liveness`]).
    pub async fn released(&self) {
        self.since.closed().await;
    }

    /// Holds `worker`'s liveness through `hold` until the worker lets go: takes the hold,
    /// reports it standing, and when its connection breaks reports it lost and takes it again,
    /// pausing 50 ms, then twice as long after each failure, up to a second.
    pub async fn keep<H: Hold>(self, worker: String, mut hold: H) {
        let mut pause = FIRST_PAUSE;
        loop {
            let taken = tokio::select! {
                _ = self.released() => return,
                taken = hold.take() => taken,
            };
            match taken {
                Ok(mut conn) => {
                    self.held();
                    pause = FIRST_PAUSE;
                    tokio::select! {
                        _ = self.released() => return,
                        _ = H::broken(&mut conn) => {}
                    }
                    self.lost();
                    tracing::warn!(
                        worker,
                        "lost the worker's liveness connection; taking it again"
                    );
                }
                Err(e) => {
                    tracing::debug!(worker, error = %e, "could not hold the worker's liveness")
                }
            }
            tokio::select! {
                _ = self.released() => return,
                _ = tokio::time::sleep(pause) => {}
            }
            pause = (pause * 2).min(MAX_PAUSE);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_hold_counts_from_when_it_last_stood() {
        let (keeper, liveness) = liveness();
        keeper.held();
        tokio::time::sleep(Duration::from_millis(20)).await;
        keeper.held();
        let first = liveness.held_for().expect("held");
        assert!(first >= Duration::from_millis(20), "{first:?}");
        keeper.lost();
        assert_eq!(liveness.held_for(), None);
        keeper.held();
        assert!(liveness.held_for().expect("held again") < first);
        assert_eq!(Liveness::unsupported().held_for(), None);
    }

    #[tokio::test]
    async fn a_worker_can_wait_for_its_hold_to_stand() {
        let (keeper, liveness) = liveness();
        assert!(!liveness.stands_within(Duration::from_millis(20)).await);
        assert!(liveness.can_stand());
        let stand = tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(30)).await;
            keeper.held();
            keeper
        });
        assert!(liveness.stands_within(Duration::from_secs(5)).await);
        let _keeper = stand.await.unwrap();
        let begun = Instant::now();
        assert!(
            !Liveness::unsupported()
                .stands_within(Duration::from_secs(5))
                .await
        );
        assert!(
            begun.elapsed() < Duration::from_secs(1),
            "it cannot stand: no wait"
        );
        assert!(!Liveness::unsupported().can_stand());
    }
}
