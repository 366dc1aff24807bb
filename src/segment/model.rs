//! Colour models (placeholder).
