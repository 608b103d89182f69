//! Rounds of one of the bench's workloads beside its references (a peer's run of it, the store's
//! ceiling), in turns which runs first, so that a drift of the machine within a round favours
//! neither; the ratio of each round, and their median, are what the bench reports.

use std::future::Future;

use futures_util::future::LocalBoxFuture;

use crate::median;

/// A run that a workload's figure is read against, once per round: a peer's run of the
/// workload, or the store's ceiling; its figure.
pub(crate) type Reference = Box<dyn FnMut() -> LocalBoxFuture<'static, f64>>;

/// Runs `rounds` rounds of `ours` (its first run measured already: `first`) beside each of
/// `references`, in the order given: after ours in even rounds (so the first round's come right
/// after `first`), before it in odd ones. Returns, for each reference, each round's (ours, its
/// figure); nothing, and runs nothing, without references.
pub(crate) async fn beside<F, Fut>(
    first: f64,
    rounds: usize,
    mut ours: F,
    mut references: Vec<Reference>,
) -> Vec<Vec<(f64, f64)>>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = f64>,
{
    let mut pairs = vec![Vec::with_capacity(rounds); references.len()];
    if references.is_empty() {
        return pairs;
    }
    for round in 0..rounds {
        let references_first = round % 2 == 1;
        let mut theirs = Vec::with_capacity(references.len());
        if references_first {
            for reference in &mut references {
                theirs.push(reference().await);
            }
        }
        let mine = if round == 0 { first } else { ours().await };
        if !references_first {
            for reference in &mut references {
                theirs.push(reference().await);
            }
        }
        for (reference, figure) in pairs.iter_mut().zip(theirs) {
            reference.push((mine, figure));
        }
    }
    pairs
}

/// [`beside`] with one reference: each round's (ours, its figure).
pub(crate) async fn beside_one<F, Fut>(
    first: f64,
    rounds: usize,
    ours: F,
    reference: Reference,
) -> Vec<(f64, f64)>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = f64>,
{
    let mut pairs = beside(first, rounds, ours, vec![reference]).await;
    pairs.pop().expect("one reference's rounds")
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
