//! Key names. Every key of one queue starts with the hash tag `{<prefix>:<queue>}`, so the
//! scripts of a queue touch one cluster slot; the keys of the prefix itself (the registry of
//! queues, the workers, the schedules) share the hash tag `{<prefix>}`.

use jobs_core::{Error, JobStatus};

/// The key prefix used when none is set.
pub(crate) const DEFAULT_PREFIX: &str = "jobs";

/// The names of a prefix's keys and wake-up channel.
#[derive(Clone, Debug)]
pub(crate) struct Keys {
    prefix: String,
}

impl Keys {
    /// Keys under `prefix`, which must be non-empty and free of `{` and `}` (a brace would
    /// change which part of each key Redis Cluster hashes, scattering a queue over slots).
    pub(crate) fn new(prefix: &str) -> Result<Self, Error> {
        if prefix.is_empty() {
            return Err(Error::Invalid(
                "the Redis key prefix must not be empty".into(),
            ));
        }
        if prefix.contains(['{', '}']) {
            return Err(Error::Invalid(format!(
                "the Redis key prefix `{prefix}` contains a brace: `{{` and `}}` are reserved for \
                 the hash tags that keep each queue's keys in one cluster slot"
            )));
        }
        Ok(Keys {
            prefix: prefix.to_string(),
        })
    }

    /// The prefix.
    pub(crate) fn prefix(&self) -> &str {
        &self.prefix
    }

    /// The base of every key of `queue`: `{prefix:queue}:`. Scripts get it as `KEYS[1]`.
    pub(crate) fn queue(&self, queue: &str) -> String {
        format!("{{{}:{queue}}}:", self.prefix)
    }

    /// The base of the prefix's own keys: `{prefix}:`. The presence scripts get it as `KEYS[1]`.
    pub(crate) fn global(&self) -> String {
        format!("{{{}}}:", self.prefix)
    }

    /// The hash of one job.
    pub(crate) fn job(&self, queue: &str, id: &str) -> String {
        format!("{}j:{id}", self.queue(queue))
    }

    /// A side key of one job: its payload (`p`), long result (`r`) or errors (`e`).
    pub(crate) fn side(&self, queue: &str, kind: char, id: &str) -> String {
        format!("{}{kind}:{id}", self.queue(queue))
    }

    /// The hash of a queue's job counts by status code.
    pub(crate) fn counts(&self, queue: &str) -> String {
        format!("{}counts", self.queue(queue))
    }

    /// The hash of a queue's last stored cron tick per schedule.
    pub(crate) fn cron(&self, queue: &str) -> String {
        format!("{}cron", self.queue(queue))
    }

    /// The set of every queue that has held jobs, for the operations that take only a job id.
    pub(crate) fn registry(&self) -> String {
        format!("{}queues", self.global())
    }

    /// The hash of the workers holding their liveness: worker id -> its connection's name.
    pub(crate) fn liveness(&self) -> String {
        format!("{}liveness", self.global())
    }

    /// The set of paused queues.
    pub(crate) fn paused(&self) -> String {
        format!("{}paused", self.global())
    }

    /// The hash of every limited queue's limits (queue -> `QueueLimits` as JSON), which
    /// `flow` reads.
    pub(crate) fn flow_limits(&self) -> String {
        format!("{}limits", self.global())
    }

    /// The set of queues into which jobs with key limits were enqueued.
    pub(crate) fn keyed(&self) -> String {
        format!("{}keyed", self.global())
    }

    /// The hash of a queue's limits that its scripts read (`md`: the max depth).
    pub(crate) fn limits(&self, queue: &str) -> String {
        format!("{}limits", self.queue(queue))
    }

    /// The hash of the recorded cron schedules: name -> schedule and when it was recorded.
    pub(crate) fn schedules(&self) -> String {
        format!("{}schedules", self.global())
    }

    /// The hash of the catalog of job types: `name|version` -> the published type as JSON.
    pub(crate) fn types(&self) -> String {
        format!("{}types", self.global())
    }

    /// The pub/sub channel on which scripts announce that a queue has ready jobs.
    pub(crate) fn channel(&self) -> String {
        format!("{}:wake", self.prefix)
    }

    /// A pub/sub channel on which scripts deliver jobs to the idle workers of one backend
    /// instance, `id` naming the instance.
    pub(crate) fn deliveries(&self, id: &str) -> String {
        format!("{}:deliver:{id}", self.prefix)
    }

    /// The pub/sub channel of job events.
    pub(crate) fn events(&self) -> String {
        format!("{}:events", self.prefix)
    }
}

/// The one-letter code a status is stored as.
pub(crate) fn status_code(status: JobStatus) -> char {
    match status {
        JobStatus::Waiting => 'w',
        JobStatus::Scheduled => 's',
        JobStatus::Pending => 'p',
        JobStatus::Running => 'r',
        JobStatus::Completed => 'c',
        JobStatus::Dead => 'd',
        JobStatus::Cancelled => 'x',
    }
}

/// The status a one-letter code stands for.
pub(crate) fn status_from_code(code: &str) -> Option<JobStatus> {
    JobStatus::ALL
        .into_iter()
        .find(|s| code.len() == 1 && code.starts_with(status_code(*s)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_of_a_queue_share_its_hash_tag() {
        let keys = Keys::new("app").unwrap();
        assert_eq!(keys.queue("email"), "{app:email}:");
        assert_eq!(keys.job("email", "abc"), "{app:email}:j:abc");
        assert_eq!(keys.cron("email"), "{app:email}:cron");
        assert_eq!(keys.limits("email"), "{app:email}:limits");
    }

    #[test]
    fn keys_of_the_prefix_share_its_hash_tag() {
        let keys = Keys::new("app").unwrap();
        assert_eq!(keys.global(), "{app}:");
        assert_eq!(keys.registry(), "{app}:queues");
        assert_eq!(keys.schedules(), "{app}:schedules");
        assert_eq!(keys.flow_limits(), "{app}:limits");
        assert_eq!(keys.keyed(), "{app}:keyed");
        assert_eq!(keys.types(), "{app}:types");
    }

    #[test]
    fn braces_and_empty_prefixes_are_refused() {
        for bad in ["", "a{b", "}", "x}y{"] {
            assert!(matches!(Keys::new(bad), Err(Error::Invalid(_))), "{bad:?}");
        }
    }

    #[test]
    fn status_codes_round_trip() {
        for status in JobStatus::ALL {
            let code = status_code(status).to_string();
            assert_eq!(status_from_code(&code), Some(status));
        }
        assert_eq!(status_from_code("q"), None);
    }
}
