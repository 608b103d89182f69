//! The Lua scripts, one per state change, loaded into Redis as one library of functions
//! (`FUNCTION LOAD`, Redis 7.0 or newer) and called with `FCALL`. The library's text is
//! `head.lua` (keys, counts, helpers, the call's state), the shared parts (`idle.lua`,
//! `coalesce.lua`, `store.lua`, `lease.lua`, `effects.lua`, `promote.lua`, `known.lua`,
//! `flow.lua`, `states.lua`, `filter.lua`, `presence.lua`, and the streams layout's
//! `streams/keys.lua`), then one function per script whose
//! body is the script's own file. Redis runs that text once, when it loads the library, so a
//! call runs only its own script: the shared functions are not defined again on every call, as
//! they would be in a script sent with `EVALSHA`.
//!
//! The library's name holds the SHA1 of its text, so processes of different releases sharing a
//! server each call their own functions. A call of a function the server lacks (a fresh or
//! restarted server, one that lost its functions, a failover to a replica that never had them)
//! loads the library and is sent again; in a cluster, `FUNCTION LOAD` goes to every primary.

use std::sync::LazyLock;

/// The shared parts, in the order their functions are defined.
const PARTS: &str = concat!(
    include_str!("lua/head.lua"),
    include_str!("lua/idle.lua"),
    include_str!("lua/coalesce.lua"),
    include_str!("lua/store.lua"),
    include_str!("lua/lease.lua"),
    include_str!("lua/effects.lua"),
    include_str!("lua/promote.lua"),
    include_str!("lua/known.lua"),
    include_str!("lua/flow.lua"),
    include_str!("lua/states.lua"),
    include_str!("lua/filter.lua"),
    include_str!("lua/presence.lua"),
    include_str!("lua/streams/keys.lua"),
);

/// One function of the library, called by its name.
pub(crate) struct Function {
    /// The name the library registers it under: the library's name, then the script's.
    pub name: String,
}

/// The library: its name and its text, as `FUNCTION LOAD` takes it.
pub(crate) struct Library {
    pub name: String,
    pub text: String,
}

/// Declares every script: its name and its file.
macro_rules! scripts {
    ($($name:ident: $file:literal,)*) => {
        /// Every script of the backend, as a function of the library.
        pub(crate) struct Scripts {
            $(pub $name: Function,)*
        }

        /// Every script's name and text.
        const SOURCES: &[(&str, &str)] = &[$((stringify!($name), include_str!(concat!("lua/", $file))),)*];

        /// The scripts, named once per process.
        pub(crate) static SCRIPTS: LazyLock<Scripts> = LazyLock::new(|| Scripts {
            $($name: Function { name: function_name(stringify!($name)) },)*
        });
    };
}

scripts! {
    enqueue: "enqueue.lua",
    cron: "cron.lua",
    fetch: "fetch.lua",
    withdraw: "withdraw.lua",
    peek: "peek.lua",
    enqueue_all: "enqueue_all.lua",
    complete: "complete.lua",
    fail: "fail.lua",
    release: "release.lua",
    renew: "renew.lua",
    places: "places.lua",
    progress: "progress.lua",
    scan: "scan.lua",
    manage: "manage.lua",
    rescue: "rescue.lua",
    prune: "prune.lua",
    finished: "finished.lua",
    heartbeat: "heartbeat.lua",
    deregister: "deregister.lua",
    workers: "workers.lua",
    versions: "versions.lua",
    marker: "marker.lua",
    xenqueue: "streams/enqueue.lua",
    xfetch: "streams/fetch.lua",
    xfetched: "streams/fetched.lua",
    xcomplete: "streams/complete.lua",
    xfail: "streams/fail.lua",
    xrelease: "streams/release.lua",
    xrenew: "streams/renew.lua",
    xrescue: "streams/rescue.lua",
    xprogress: "streams/progress.lua",
    xprune: "streams/prune.lua",
    xread: "streams/read.lua",
    xwait: "streams/wait.lua",
    xadopt: "streams/adopt.lua",
    xaside: "streams/aside.lua",
    xpause: "streams/pause.lua",
    xcron: "streams/cron.lua",
    xversions: "streams/versions.lua",
    xmanage: "streams/manage.lua",
    xscan: "streams/scan.lua",
}

/// The library, built once per process.
pub(crate) static LIBRARY: LazyLock<Library> = LazyLock::new(|| {
    let body = |name: &str| {
        let mut text = String::from(PARTS);
        for (script, source) in SOURCES {
            text.push_str(&format!(
                "redis.register_function('{name}_{script}', function(keys, args)\n\
                 begin(keys, args)\n{source}\nend)\n"
            ));
        }
        text
    };
    // The SHA1 of the text with a placeholder name: what names the library.
    let sha = redis::Script::new(&body("jobs")).get_hash().to_string();
    let name = format!("jobs_{}", &sha[..16]);
    let text = format!("#!lua name={name}\n{}", body(&name));
    Library { name, text }
});

/// The name `script` is registered under.
fn function_name(script: &str) -> String {
    format!("{}_{script}", LIBRARY.name)
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::{LIBRARY, PARTS, SCRIPTS, SOURCES};

    /// The local functions `text` defines.
    fn defined(text: &str) -> BTreeSet<&str> {
        text.split("local function ")
            .skip(1)
            .filter_map(|rest| rest.split('(').next())
            .collect()
    }

    /// The library defines each shared function before any line that calls it: Lua resolves a
    /// name where it is written, so a call written earlier would find no such local.
    #[test]
    fn the_library_defines_each_shared_function_before_calling_it() {
        let shared = defined(PARTS);
        let mut seen = BTreeSet::new();
        for line in LIBRARY
            .text
            .lines()
            .filter(|l| !l.trim_start().starts_with("--"))
        {
            for f in &shared {
                let called = line.match_indices(&format!("{f}(")).any(|(at, _)| {
                    !line[..at].ends_with(|c: char| c.is_alphanumeric() || c == '_')
                        && !line[..at].ends_with("function ")
                });
                assert!(
                    !called || seen.contains(f),
                    "calls `{f}` before defining it: {line}"
                );
            }
            seen.extend(defined(line));
        }
    }

    /// No shared function is defined twice (a second one would hide the first from the parts
    /// after it).
    #[test]
    fn shared_functions_have_one_definition_each() {
        let mut names: Vec<&str> = PARTS
            .split("local function ")
            .skip(1)
            .filter_map(|rest| rest.split('(').next())
            .collect();
        let all = names.len();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), all);
    }

    /// The library is named by its text's SHA1, and registers every script once under a name
    /// that starts with the library's.
    #[test]
    fn the_library_names_its_functions() {
        let hex = LIBRARY.name.strip_prefix("jobs_").expect("jobs_<sha>");
        assert!(hex.len() == 16 && hex.chars().all(|c| c.is_ascii_hexdigit()));
        assert!(LIBRARY
            .text
            .starts_with(&format!("#!lua name={}\n", LIBRARY.name)));
        assert_eq!(
            LIBRARY.text.matches("redis.register_function(").count(),
            SOURCES.len()
        );
        for (script, _) in SOURCES {
            let name = format!("{}_{script}", LIBRARY.name);
            assert!(LIBRARY
                .text
                .contains(&format!("register_function('{name}',")));
        }
        assert_eq!(SCRIPTS.fetch.name, format!("{}_fetch", LIBRARY.name));
    }
}
