//! A maze for the stroke prior's tests, the schedule's worst case: the shortest paths turn at
//! every cell and cross the device's strip and segment edges in every direction. One generator
//! for the CPU emulation (`prior_emulation.rs`, `cfg(test)`) and the GPU tests
//! (`tests/gpu_prior.rs`, which includes this file by path), so it names nothing of the crate.

/// A maze of `cells = [cw, ch]` cells: a random spanning tree of the cells (depth first) carved
/// out of a `(2·cw + 1) × (2·ch + 1)` grid of walls a pixel thick, cell `(x, y)` at pixel
/// `(2x + 1, 2y + 1)`. `pick(k)` chooses one of `k > 0` ways (a random number below `k`).
/// Returns the width, the height and whether each pixel (row-major) is open.
pub fn maze_open(
    cells: [usize; 2],
    mut pick: impl FnMut(usize) -> usize,
) -> (usize, usize, Vec<bool>) {
    let [cw, chh] = cells;
    let (w, h) = (2 * cw + 1, 2 * chh + 1);
    let mut open = vec![false; w * h];
    let mut seen = vec![false; cw * chh];
    let mut stack = vec![0usize];
    seen[0] = true;
    open[w + 1] = true;
    while let Some(&c) = stack.last() {
        let (x, y) = (c % cw, c / cw);
        let mut next = Vec::new();
        if x > 0 && !seen[c - 1] {
            next.push(c - 1);
        }
        if x + 1 < cw && !seen[c + 1] {
            next.push(c + 1);
        }
        if y > 0 && !seen[c - cw] {
            next.push(c - cw);
        }
        if y + 1 < chh && !seen[c + cw] {
            next.push(c + cw);
        }
        if next.is_empty() {
            stack.pop();
            continue;
        }
        let n = next[pick(next.len())];
        seen[n] = true;
        let (nx, ny) = (n % cw, n / cw);
        open[(2 * nx + 1) + w * (2 * ny + 1)] = true;
        open[(x + nx + 1) + w * (y + ny + 1)] = true;
        stack.push(n);
    }
    (w, h, open)
}
