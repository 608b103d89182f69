//! The Lua scripts, one per state change, each prefixed with the shared `lib.lua`.
//!
//! `redis::Script` calls a script by its SHA1 (`EVALSHA`) and loads it only when the server
//! answers `NOSCRIPT` (a fresh or restarted server; in a cluster, `SCRIPT LOAD` goes to every
//! primary), so each script crosses the network once per server.

use std::sync::LazyLock;

use redis::Script;

macro_rules! script {
    ($file:literal) => {
        Script::new(concat!(
            include_str!("lua/lib.lua"),
            include_str!(concat!("lua/", $file))
        ))
    };
}

/// Every script of the backend.
pub(crate) struct Scripts {
    pub enqueue: Script,
    pub cron: Script,
    pub fetch: Script,
    pub peek: Script,
    pub complete: Script,
    pub fail: Script,
    pub release: Script,
    pub renew: Script,
    pub progress: Script,
    pub retry: Script,
    pub delete: Script,
    pub cancel: Script,
    pub rescue: Script,
    pub prune: Script,
}

/// The scripts, hashed once per process.
pub(crate) static SCRIPTS: LazyLock<Scripts> = LazyLock::new(|| Scripts {
    enqueue: script!("enqueue.lua"),
    cron: script!("cron.lua"),
    fetch: script!("fetch.lua"),
    peek: script!("peek.lua"),
    complete: script!("complete.lua"),
    fail: script!("fail.lua"),
    release: script!("release.lua"),
    renew: script!("renew.lua"),
    progress: script!("progress.lua"),
    retry: script!("retry.lua"),
    delete: script!("delete.lua"),
    cancel: script!("cancel.lua"),
    rescue: script!("rescue.lua"),
    prune: script!("prune.lua"),
});
