//! Mask quality scores (placeholder).
