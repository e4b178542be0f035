//! The /proc fallback (next commit).
