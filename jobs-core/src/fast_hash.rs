//! The hash maps on every job's path (the memory store's; the worker's leases, hand-offs, job
//! types by name and state by type): foldhash, not SipHash, for the ids and names that each
//! step of each job looks up. SipHash costs about a hundred instructions per id, foldhash a
//! handful; both are seeded per map.

/// A hash map with foldhash's fast hasher.
pub(crate) type HashMap<K, V> = std::collections::HashMap<K, V, foldhash::fast::RandomState>;
/// A hash set with foldhash's fast hasher.
pub(crate) type HashSet<T> = std::collections::HashSet<T, foldhash::fast::RandomState>;
