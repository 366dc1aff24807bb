//! Left–right consistency and occlusion filling: the disparity map of the right view (the same
//! energy with the right view as the reference) checks the left one, and left pixels whose match
//! in the right view does not point back are treated as occluded and filled from their row's
//! nearest consistent pixels, with the farther (smaller) of the two disparities: an occluded point
//! is hidden by something in front, so it belongs to the background beside it.
//!
//! The right view's map comes from the same engine on the mirrored pair: mirrored, the right view
//! becomes a left view whose matches lie at `x − d` in the mirrored left view, and BT, census and
//! the contrast weights are all symmetric under the mirror.

use crate::io::Image;

/// The image mirrored left to right.
///
/// ```
/// use segcut::io::Image;
/// use segcut::stereo::occlusion::mirror;
/// let img = Image::new([3, 1, 1], 1, vec![1.0, 2.0, 3.0]);
/// assert_eq!(mirror(&img).data, [3.0, 2.0, 1.0]);
/// ```
pub fn mirror(img: &Image) -> Image {
    let [w, h, d] = img.dims;
    let c = img.channels.max(1);
    let mut data = Vec::with_capacity(img.data.len());
    for row in img.data.chunks(w * c).take(h * d) {
        for px in row.chunks(c).rev() {
            data.extend_from_slice(px);
        }
    }
    Image {
        data,
        ..img.clone()
    }
}

/// A label map mirrored left to right (rows of `width`).
pub fn mirror_labels(labels: &[u16], width: usize) -> Vec<u16> {
    labels
        .chunks(width)
        .flat_map(|r| r.iter().rev().copied())
        .collect()
}

/// What [`left_right_fill`] did.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Occlusions {
    /// The left labels after filling.
    #[serde(skip)]
    pub labels: Vec<u16>,
    /// Pixels found to fill (and filled where their row had a consistent pixel).
    pub inconsistent: usize,
}

/// Checks the left map against the right one and fills the pixels found occluded (and, with
/// `mismatches`, also those found mismatched). Labels are disparities less `min_disparity` in both
/// maps; left pixel `x` with disparity `d` matches right pixel `x − d`, whose disparity `d'` says:
/// consistent when `|d' − d| ≤ tolerance`; **occluded** when `x − d` lies outside the image or
/// `d' > d + tolerance` (something nearer covers the match: the point is hidden in the right
/// view); **mismatched** when `d' < d − tolerance` (a wrong match, not explained by occlusion).
/// A pixel to fill takes the smaller label of the nearest consistent pixels to its left and right
/// in its row (the one there is, if only one; unchanged if none).
///
/// ```
/// use segcut::stereo::occlusion::left_right_fill;
/// // A row of 6: a foreground (disparity 3) at x = 4, 5 over a background of disparity 1, seen
/// // at x = 1, 2 in the right view. The left map fattened the foreground to x = 3.
/// let left = [1, 1, 1, 3, 3, 3];
/// let right = [1, 3, 3, 1, 1, 1];
/// let r = left_right_fill(&left, &right, 6, 0, 0, false);
/// // x = 0 (its match is outside the view) and x = 2 (hidden in the right view) are occluded;
/// // x = 3 is a mismatch, filled only when asked.
/// assert_eq!(r.labels, [1, 1, 1, 3, 3, 3]);
/// assert_eq!(r.inconsistent, 2);
/// let r = left_right_fill(&left, &right, 6, 0, 0, true);
/// assert_eq!(r.labels, [1, 1, 1, 1, 3, 3]);
/// assert_eq!(r.inconsistent, 3);
/// ```
pub fn left_right_fill(
    left: &[u16],
    right: &[u16],
    width: usize,
    min_disparity: i32,
    tolerance: u32,
    mismatches: bool,
) -> Occlusions {
    let mut labels = left.to_vec();
    let mut inconsistent = 0;
    // Per pixel of a row: consistent (a fill source), to fill, or kept as it is.
    #[derive(Clone, Copy, PartialEq)]
    enum State {
        Good,
        Fill,
        Keep,
    }
    let mut st = vec![State::Good; width];
    let tol = tolerance as i64;
    for (lrow, rrow) in labels.chunks_mut(width).zip(right.chunks(width)) {
        for x in 0..width {
            let l = lrow[x] as i64;
            let xr = x as i64 - (min_disparity as i64 + l);
            st[x] = if !(0..width as i64).contains(&xr) {
                State::Fill
            } else {
                let r = rrow[xr as usize] as i64;
                if (r - l).abs() <= tol {
                    State::Good
                } else if r > l || mismatches {
                    State::Fill
                } else {
                    State::Keep
                }
            };
        }
        inconsistent += st.iter().filter(|&&s| s == State::Fill).count();
        let src = lrow.to_vec();
        let mut last: Option<u16> = None;
        let mut before = vec![None; width];
        for x in 0..width {
            if st[x] == State::Good {
                last = Some(src[x]);
            }
            before[x] = last;
        }
        let mut next: Option<u16> = None;
        for x in (0..width).rev() {
            match st[x] {
                State::Good => next = Some(src[x]),
                State::Keep => {}
                State::Fill => {
                    lrow[x] = match (before[x], next) {
                        (Some(a), Some(b)) => a.min(b),
                        (Some(a), None) | (None, Some(a)) => a,
                        (None, None) => src[x],
                    }
                }
            }
        }
    }
    Occlusions {
        labels,
        inconsistent,
    }
}
