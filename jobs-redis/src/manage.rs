//! Retrying, cancelling and deleting jobs, by id or by filter, in bounded batches: the jobs are
//! found first (by filter, with the scan script of [`read`](crate::read)), then changed by one
//! manage script call per queue, which checks each job against the filter again.

use std::collections::{BTreeMap, HashMap};

use futures_util::future::try_join_all;
use jobs_core::{Action, Error, HeldKey, JobFilter, ManageParams, Managed, Target};

use crate::ids::id_text;
use crate::read::{push_filter, Found};
use crate::record::parse_id;
use crate::scripts::SCRIPTS;
use crate::RedisBackend;

/// Ids per manage script call.
const CHUNK: usize = 500;

/// The name the manage script knows an action by.
fn action_name(action: Action) -> &'static str {
    match action {
        Action::Retry => "retry",
        Action::Cancel => "cancel",
        Action::Delete => "delete",
    }
}

impl RedisBackend {
    pub(crate) async fn manage_jobs(&self, p: ManageParams) -> Result<Managed, Error> {
        let (filter, ids_by_queue, order, last) = match p.target {
            Target::Ids(ids) => {
                // The ids name no queue: each queue's call skips the ids it does not hold.
                let ids: Vec<String> = ids.into_iter().map(id_text).collect();
                let by_queue: Vec<(String, Vec<String>)> = self
                    .all_queues()
                    .await?
                    .into_iter()
                    .map(|queue| (queue, ids.clone()))
                    .collect();
                (JobFilter::default(), by_queue, ids, None)
            }
            Target::Matching { filter, after } => {
                let found = self.find(&filter, after, p.limit).await?;
                let last = match found.last() {
                    Some((id, _)) if found.len() >= p.limit => Some(parse_id(id)?),
                    _ => None,
                };
                let order = found.iter().map(|(id, _)| id.clone()).collect();
                (filter, by_queue(found), order, last)
            }
        };
        let calls = ids_by_queue.iter().flat_map(|(queue, ids)| {
            let filter = &filter;
            ids.chunks(CHUNK).map(move |chunk| async move {
                let script = self.script(&SCRIPTS.manage, &SCRIPTS.xmanage);
                let mut inv = self.invocation(script, queue, p.now);
                inv.arg(action_name(p.action));
                push_filter(&mut inv, filter, true, true);
                inv.arg(chunk);
                self.run::<(Vec<String>, Vec<(String, String, String)>)>(&inv)
                    .await
            })
        });
        let answers = try_join_all(calls).await?;
        // Back to the order of the ids asked for.
        let position: HashMap<&str, usize> = order
            .iter()
            .enumerate()
            .map(|(i, id)| (id.as_str(), i))
            .collect();
        let rank = |id: &str| position.get(id).copied().unwrap_or(usize::MAX);
        let mut changed = Vec::new();
        let mut held = Vec::new();
        for (ids, keys) in answers {
            changed.extend(ids);
            held.extend(keys);
        }
        changed.sort_by_key(|id| rank(id));
        held.sort_by_key(|(id, _, _)| rank(id));
        Ok(Managed {
            changed: changed
                .iter()
                .map(|id| parse_id(id))
                .collect::<Result<_, _>>()?,
            held: held
                .into_iter()
                .map(|(job, key, holder)| {
                    Ok(HeldKey {
                        job: parse_id(&job)?,
                        key,
                        holder: parse_id(&holder)?,
                    })
                })
                .collect::<Result<_, Error>>()?,
            last,
        })
    }
}

/// The ids of `found` grouped by queue, each group in id order.
fn by_queue(found: Vec<Found>) -> Vec<(String, Vec<String>)> {
    let mut groups: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (id, queue) in found {
        groups.entry(queue).or_default().push(id);
    }
    groups.into_iter().collect()
}
