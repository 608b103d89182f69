//! Rounds of one of the bench's workloads beside a reference (a peer's run of it, or the store's
//! ceiling), in turns which runs first, so that a drift of the machine within a round favours
//! neither; the ratio of each round, and their median, are what the bench reports.

use std::future::Future;

use crate::median;

/// Runs `rounds` rounds of `ours` beside `reference`, the first given (`first`: ours, then the
/// reference's, measured already): ours first in even rounds, the reference first in odd ones.
/// Returns each round's (ours, the reference's).
pub(crate) async fn beside<F, Fut, G, Gut>(
    first: (f64, f64),
    rounds: usize,
    mut ours: F,
    mut reference: G,
) -> Vec<(f64, f64)>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = f64>,
    G: FnMut() -> Gut,
    Gut: Future<Output = f64>,
{
    let mut pairs = vec![first];
    for round in 1..rounds {
        let pair = if round % 2 == 1 {
            let theirs = reference().await;
            (ours().await, theirs)
        } else {
            let mine = ours().await;
            (mine, reference().await)
        };
        pairs.push(pair);
    }
    pairs
}

/// The median of the rounds' ratios (ours over the reference's), and the ratios as listed in a
/// line's notes: `the median of 3 rounds (0.52, 0.43, 0.53)`.
pub(crate) fn median_ratio(pairs: &[(f64, f64)], digits: usize) -> (f64, String) {
    let mut ratios: Vec<f64> = pairs.iter().map(|(ours, theirs)| ours / theirs).collect();
    let listed: Vec<String> = ratios.iter().map(|r| format!("{r:.digits$}")).collect();
    let listed = format!(
        "the median of {} rounds ({})",
        pairs.len(),
        listed.join(", ")
    );
    (median(&mut ratios), listed)
}
