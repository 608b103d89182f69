//! The redis backend of `jobs` (in progress).
