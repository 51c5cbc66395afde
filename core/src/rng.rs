//! Small seeded PRNG and key generators.
