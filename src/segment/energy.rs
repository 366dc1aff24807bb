//! Energy → grid graph (placeholder).
