//! Deterministic instance generators (placeholder).
