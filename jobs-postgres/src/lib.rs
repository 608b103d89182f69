//! The postgres backend of `jobs` (in progress).
