//! The Lua scripts, one per state change, each prefixed with `head.lua` (keys, counts, helpers) and
//! the shared parts it uses: `idle.lua`, `coalesce.lua`, `store.lua`, `lease.lua`, `effects.lua`,
//! `promote.lua`, `known.lua`, `flow.lua`, `states.lua`, `filter.lua`, `presence.lua`. Redis runs a
//! script's whole text on every call, so the hot scripts (enqueue, fetch, complete) carry only what
//! they use: each local function defined costs a little on every call.
//!
//! `redis::Script` calls a script by its SHA1 (`EVALSHA`) and loads it only when the server
//! answers `NOSCRIPT` (a fresh or restarted server; in a cluster, `SCRIPT LOAD` goes to every
//! primary), so each script crosses the network once per server.

use std::sync::LazyLock;

use redis::Script;

/// The text of a script: the head, the parts it uses, then its own file.
macro_rules! source {
    ($($part:literal),* ; $file:literal) => {
        concat!(
            include_str!("lua/head.lua"),
            $(include_str!(concat!("lua/", $part)),)*
            include_str!(concat!("lua/", $file))
        )
    };
}

/// Declares every script: its name, the parts it uses and its file.
macro_rules! scripts {
    ($($name:ident: $($part:literal),* ; $file:literal,)*) => {
        /// Every script of the backend.
        pub(crate) struct Scripts {
            $(pub $name: Script,)*
        }

        /// The scripts, hashed once per process.
        pub(crate) static SCRIPTS: LazyLock<Scripts> = LazyLock::new(|| Scripts {
            $($name: Script::new(source!($($part),*; $file)),)*
        });

        /// Every script's name and text.
        #[cfg(test)]
        const SOURCES: &[(&str, &str)] = &[$((stringify!($name), source!($($part),*; $file)),)*];
    };
}

scripts! {
    enqueue: "idle.lua", "coalesce.lua", "store.lua"; "enqueue.lua",
    cron: "idle.lua", "coalesce.lua", "store.lua"; "cron.lua",
    fetch: "idle.lua", "promote.lua", "known.lua", "flow.lua"; "fetch.lua",
    withdraw: "idle.lua"; "withdraw.lua",
    peek: "idle.lua", "promote.lua", "known.lua", "flow.lua"; "peek.lua",
    enqueue_all: "idle.lua", "coalesce.lua", "store.lua"; "enqueue_all.lua",
    complete: "lease.lua", "effects.lua"; "complete.lua",
    fail: "lease.lua", "effects.lua", "states.lua"; "fail.lua",
    release: "lease.lua"; "release.lua",
    renew: "lease.lua"; "renew.lua",
    places: ; "places.lua",
    progress: "lease.lua"; "progress.lua",
    scan: "filter.lua"; "scan.lua",
    manage: "lease.lua", "effects.lua", "states.lua", "filter.lua"; "manage.lua",
    rescue: "idle.lua", "lease.lua", "effects.lua", "states.lua"; "rescue.lua",
    prune: "lease.lua", "effects.lua", "states.lua"; "prune.lua",
    heartbeat: "presence.lua"; "heartbeat.lua",
    deregister: "presence.lua"; "deregister.lua",
    workers: "presence.lua"; "workers.lua",
    versions: ; "versions.lua",
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    /// The parts a script may include, in the order `script!` puts them.
    const PARTS: [(&str, &str); 12] = [
        ("head.lua", include_str!("lua/head.lua")),
        ("idle.lua", include_str!("lua/idle.lua")),
        ("coalesce.lua", include_str!("lua/coalesce.lua")),
        ("store.lua", include_str!("lua/store.lua")),
        ("lease.lua", include_str!("lua/lease.lua")),
        ("effects.lua", include_str!("lua/effects.lua")),
        ("promote.lua", include_str!("lua/promote.lua")),
        ("known.lua", include_str!("lua/known.lua")),
        ("flow.lua", include_str!("lua/flow.lua")),
        ("states.lua", include_str!("lua/states.lua")),
        ("filter.lua", include_str!("lua/filter.lua")),
        ("presence.lua", include_str!("lua/presence.lua")),
    ];

    /// The local functions `text` defines.
    fn defined(text: &str) -> BTreeSet<&str> {
        text.split("local function ")
            .skip(1)
            .filter_map(|rest| rest.split('(').next())
            .collect()
    }

    /// Every script, once assembled, defines each shared function it calls before calling it.
    #[test]
    fn scripts_define_what_they_call() {
        let shared: BTreeSet<&str> = PARTS.iter().flat_map(|(_, t)| defined(t)).collect();
        for (name, code) in super::SOURCES {
            let mut seen = BTreeSet::new();
            for line in code.lines().filter(|l| !l.trim_start().starts_with("--")) {
                for f in &shared {
                    let called = line.match_indices(&format!("{f}(")).any(|(at, _)| {
                        !line[..at].ends_with(|c: char| c.is_alphanumeric() || c == '_')
                            && !line[..at].ends_with("function ")
                    });
                    assert!(
                        !called || seen.contains(f),
                        "{name}: calls `{f}` before or without defining it: {line}"
                    );
                }
                seen.extend(defined(line));
            }
        }
    }
}
