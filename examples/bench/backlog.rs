//! W4: W2 with a million finished jobs retained, in rounds against a plain W2.

use jobs::Retention;

use crate::backends::{fresh_aside, retain_finished, settle, BackendKind};
use crate::{drain, enqueue_bulk, fresh_backend, median, print, Line};

/// W4: the bench's store gets `retained` completed jobs, settled; then each of `rounds` rounds
/// drains `n` jobs there and `n` on an empty store beside it (a plain W2), back to back, in
/// turns which first, so that each ratio compares two drains a moment apart. On the memory
/// backend a drain lasts a few dozen ms at the protocol's N, and one pair's ratio moves by
/// more than the cost measured; the line gives the median rate and the median ratio.
///
/// The retained store keeps the jobs drained there too, and is settled again after each of its
/// drains: each round starts as the first did, with `n` more finished jobs for each round
/// before it (2 % of a million per round at the protocol's N).
pub(crate) async fn w4(
    kind: BackendKind,
    n: u64,
    concurrency: usize,
    retained: u64,
    rounds: usize,
) {
    let backlog = fresh_backend(kind).await;
    retain_finished(kind, &backlog, retained).await;
    let (mut rates, mut ratios) = (Vec::new(), Vec::new());
    for round in 0..rounds {
        let drain_backlog = || async {
            enqueue_bulk(&backlog, n).await;
            let rate = drain(&backlog, n, concurrency, None, Retention::all()).await;
            settle(kind).await;
            rate
        };
        let drain_plain = || async {
            let plain = fresh_aside(kind).await;
            enqueue_bulk(&plain, n).await;
            drain(&plain, n, concurrency, None, Retention::default()).await
        };
        let (kept, plain) = if round % 2 == 0 {
            let plain = drain_plain().await;
            (drain_backlog().await, plain)
        } else {
            let kept = drain_backlog().await;
            (kept, drain_plain().await)
        };
        rates.push(kept);
        ratios.push(kept / plain);
    }
    let listed: Vec<String> = ratios.iter().map(|r| format!("{r:.3}")).collect();
    let notes = format!(
        "{retained} completed jobs retained, bulk-loaded then settled (VACUUM on postgres); \
         retention keeps all during the run; W4/W2 = {:.3}, the median of {rounds} rounds of a \
         plain W2 (on an empty store beside it) and W4 back to back ({})",
        median(&mut ratios),
        listed.join(", ")
    );
    let line = Line {
        workload: "W4",
        n,
        concurrency,
        jobs_per_s: Some(median(&mut rates)),
        latency_ms: None,
        notes,
    };
    print(kind, line);
}
