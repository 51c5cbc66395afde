//! Placeholder until its issue.
