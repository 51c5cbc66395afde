//! Pre-encoded request templates.
