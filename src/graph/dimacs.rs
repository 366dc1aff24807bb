//! DIMACS `.max` reading and writing (placeholder).
