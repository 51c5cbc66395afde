//! RESP2/RESP3 reply parsing and encoding.
