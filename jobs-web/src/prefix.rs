//! The path the dashboard is served under, and URL pieces relative to it.
//!
//! Pages carry `<base href="{prefix}/">` and only relative links, so the dashboard works nested
//! under any path; the prefix is what the original request path has before the path the
//! dashboard's router saw.

/// The prefix (no trailing slash; `""` at the root) of a request whose path was `original`
/// before nesting and `nested` inside the dashboard.
pub(crate) fn prefix(original: &str, nested: &str) -> String {
    let before = original
        .strip_suffix(nested)
        .or_else(|| (nested == "/").then_some(original))
        .unwrap_or("");
    before.trim_end_matches('/').to_string()
}

/// `value` percent-encoded for one path segment (a queue's name, say).
pub(crate) fn segment(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for byte in value.bytes() {
        if byte.is_ascii_alphanumeric() || b"-._~".contains(&byte) {
            out.push(byte as char);
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

/// `path` with the query `pairs` whose value is not empty, URL-encoded.
pub(crate) fn with_query<'a>(
    path: &str,
    pairs: impl IntoIterator<Item = (&'a str, &'a str)>,
) -> String {
    let pairs: Vec<(&str, &str)> = pairs.into_iter().filter(|(_, v)| !v.is_empty()).collect();
    if pairs.is_empty() {
        return path.to_string();
    }
    let query = serde_urlencoded::to_string(pairs).unwrap_or_default();
    format!("{path}?{query}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_prefix_is_what_precedes_the_nested_path() {
        assert_eq!(prefix("/ops/jobs/jobs/1", "/jobs/1"), "/ops/jobs");
        assert_eq!(prefix("/ops/jobs", "/"), "/ops/jobs");
        assert_eq!(prefix("/ops/jobs/", "/"), "/ops/jobs");
        assert_eq!(prefix("/dead", "/dead"), "");
        assert_eq!(prefix("/", "/"), "");
    }

    #[test]
    fn segments_and_queries_are_encoded() {
        assert_eq!(segment("a b/c"), "a%20b%2Fc");
        assert_eq!(
            with_query("jobs", [("queue", "a&b"), ("status", "")]),
            "jobs?queue=a%26b"
        );
        assert_eq!(with_query("dead", [("queue", "")]), "dead");
    }
}
