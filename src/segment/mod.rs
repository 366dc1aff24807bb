//! Segmentation: an image or volume plus seeds → a Boykov–Jolly / GrabCut energy on a
//! [`GridGraph`](crate::graph::GridGraph) → minimum cut → foreground mask.
//!
//! The data path: [`crate::io`] loads an [`Image`] (2D image or 3D volume) and [`Seeds`]; [`model`]
//! fits colour models on the seeds; [`energy`] builds the grid graph; a solver cuts it; the mask goes
//! back out through [`crate::io`]. [`eval`] scores masks against ground truth. With a GPU solver and a
//! usable GPU, [`gpu`] builds the graph where it is solved.

pub mod budget;
pub mod color;
pub mod cv;
pub mod energy;
pub mod eval;
pub mod gpu;
pub mod gpu_model;
pub mod gpu_prior;
pub mod interactive;
pub mod model;
pub mod pipeline;
pub mod post;
pub mod prior;
#[cfg(test)]
mod prior_emulation;
pub mod report;
pub mod session;
pub mod strokes;
#[cfg(test)]
mod test_maze;
pub mod unary;

pub use crate::io::{Image, Seed, Seeds};
pub use color::ColorSpace;
pub use pipeline::{segment, SegmentOptions, SegmentStats, Segmentation};
