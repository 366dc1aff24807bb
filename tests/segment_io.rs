//! Image, volume, seed and mask I/O of `segcut segment`.
//!
//! Test inputs are made here with the `png`, `image` and `tiff` crates, or byte by byte from the
//! NIfTI-1 layout, so that a reader bug is not hidden by the same bug in our own writer.

use segcut::io::{
    load_image, load_image_with, load_seeds, memory_needed, rect_seeds, rect_with_seeds, save_mask,
    save_nifti, save_tiff, save_volume, LoadOptions, NiftiOptions, NiftiType, Rect, SeedFormat,
    SeedOptions,
};
use segcut::segment::{Image, Seed, Seeds};
use std::path::{Path, PathBuf};

mod common;

fn tmp() -> tempfile::TempDir {
    tempfile::tempdir().expect("tempdir")
}

fn err_text<T: std::fmt::Debug>(r: segcut::Result<T>) -> String {
    match r {
        Ok(v) => panic!("expected an error, got {v:?}"),
        Err(e) => e.to_string(),
    }
}

fn assert_has(msg: &str, parts: &[&str]) {
    for p in parts {
        assert!(msg.contains(p), "message {msg:?} lacks {p:?}");
    }
}

// ---------- PNG writers (png crate) ----------

fn write_png(
    path: &Path,
    w: u32,
    h: u32,
    color: png::ColorType,
    depth: png::BitDepth,
    palette: Option<&[u8]>,
    data: &[u8],
) {
    let f = std::fs::File::create(path).unwrap();
    let mut enc = png::Encoder::new(std::io::BufWriter::new(f), w, h);
    enc.set_color(color);
    enc.set_depth(depth);
    if let Some(p) = palette {
        enc.set_palette(p.to_vec());
    }
    let mut wr = enc.write_header().unwrap();
    wr.write_image_data(data).unwrap();
}

fn grey8(path: &Path, w: u32, h: u32, data: &[u8]) {
    write_png(
        path,
        w,
        h,
        png::ColorType::Grayscale,
        png::BitDepth::Eight,
        None,
        data,
    );
}

fn rgb8(path: &Path, w: u32, h: u32, px: &[[u8; 3]]) {
    let data: Vec<u8> = px.iter().flatten().copied().collect();
    write_png(
        path,
        w,
        h,
        png::ColorType::Rgb,
        png::BitDepth::Eight,
        None,
        &data,
    );
}

/// Packs indices of `bits` each, rows padded to whole bytes, most significant bits first.
fn pack(idx: &[u8], w: usize, bits: usize) -> Vec<u8> {
    let per_byte = 8 / bits;
    let mut out = Vec::new();
    for row in idx.chunks(w) {
        let mut bytes = vec![0u8; w.div_ceil(per_byte)];
        for (x, &v) in row.iter().enumerate() {
            bytes[x / per_byte] |= v << (8 - bits * (x % per_byte + 1));
        }
        out.extend(bytes);
    }
    out
}

/// A palette whose colours say nothing about the index: 0 = green, 1 = blue, 2 = red, 3 = white.
const PLTE: [u8; 12] = [0, 255, 0, 0, 0, 255, 255, 0, 0, 255, 255, 255];

fn indexed(path: &Path, w: u32, h: u32, bits: png::BitDepth, idx: &[u8]) {
    let data = pack(idx, w as usize, bits as usize);
    write_png(
        path,
        w,
        h,
        png::ColorType::Indexed,
        bits,
        Some(&PLTE),
        &data,
    );
}

fn seeds_of(path: &Path, dims: [usize; 3], format: SeedFormat) -> segcut::Result<Seeds> {
    let opts = SeedOptions {
        format,
        ..SeedOptions::default()
    };
    load_seeds(path, dims, &opts)
}

use Seed::{
    Background as B, Foreground as F, ProbablyBackground as PB, ProbablyForeground as PF,
    Unknown as U,
};

// ---------- seed conventions ----------

#[test]
fn palette_seeds_read_indices_not_colours() {
    let dir = tmp();
    let idx = [0u8, 1, 2, 0, 2, 1, 1, 0, 0, 0, 2, 2];
    let expect = [U, F, B, U, B, F, F, U, U, U, B, B];
    for bits in [
        png::BitDepth::Eight,
        png::BitDepth::Four,
        png::BitDepth::Two,
    ] {
        let p = dir.path().join(format!("pal{}.png", bits as u8));
        indexed(&p, 6, 2, bits, &idx);
        for fmt in [SeedFormat::Palette, SeedFormat::Labels] {
            let s = seeds_of(&p, [6, 2, 1], fmt).unwrap();
            assert_eq!(s.labels, expect, "{bits:?} {fmt}");
            assert_eq!(s.dims, [6, 2, 1]);
        }
        // Index 1 is drawn blue and index 2 red, the default background and foreground scribble
        // colours: as coloured scribbles the file means the opposite, so auto-detection refuses
        // it and names both readings (issue 21 D1).
        let msg = err_text(seeds_of(&p, [6, 2, 1], SeedFormat::Auto));
        assert_has(
            &msg,
            &["ambiguous", "palette seed format", "rgb seed format"],
        );
    }
}

/// One-bit palette PNGs (eight pixels a byte), with a width that leaves a partial last byte and
/// rows long enough that they are unpacked on several threads.
#[test]
fn one_bit_palette_seeds_unpack_every_row() {
    let dir = tmp();
    let (w, h) = (1003usize, 37usize);
    let idx: Vec<u8> = (0..w * h)
        .map(|i| ((i * 7 + i / w) % 3 == 0) as u8)
        .collect();
    let p = dir.path().join("pal1.png");
    indexed(&p, w as u32, h as u32, png::BitDepth::One, &idx);
    let s = seeds_of(&p, [w, h, 1], SeedFormat::Palette).unwrap();
    let expect: Vec<Seed> = idx.iter().map(|&i| if i == 1 { F } else { U }).collect();
    assert_eq!(s.labels, expect);
}

#[test]
fn palette_index_above_two_errors_and_rgb_reads_palette_colours() {
    let dir = tmp();
    let p = dir.path().join("pal.png");
    // Index 3 (white) at (1, 1).
    indexed(&p, 3, 2, png::BitDepth::Eight, &[1, 2, 0, 0, 3, 0]);
    let msg = err_text(seeds_of(&p, [3, 2, 1], SeedFormat::Auto));
    assert_has(&msg, &["pal.png", "(1, 1)", "index 3", "rgb seed format"]);
    // By colour: index 2 is red (fg by default), index 1 is blue (bg), green/white unknown.
    let s = seeds_of(&p, [3, 2, 1], SeedFormat::Rgb).unwrap();
    assert_eq!(s.labels, [B, F, U, U, U, U]);
}

#[test]
fn palette_format_on_a_grey_png_is_an_error() {
    let dir = tmp();
    let p = dir.path().join("g.png");
    grey8(&p, 2, 1, &[0, 1]);
    let msg = err_text(seeds_of(&p, [2, 1, 1], SeedFormat::Palette));
    assert_has(&msg, &["g.png", "palette"]);
}

#[test]
fn trimap_values() {
    let dir = tmp();
    let p = dir.path().join("trimap.png");
    grey8(&p, 5, 1, &[0, 64, 128, 255, 128]);
    for fmt in [SeedFormat::Auto, SeedFormat::Trimap] {
        let s = seeds_of(&p, [5, 1, 1], fmt).unwrap();
        assert_eq!(s.labels, [B, B, U, F, U]);
    }
    // A binary {0, 255} file is a trimap without unknowns only when named so: auto-detection
    // refuses it, as it also reads as white strokes on an unmarked background (issue 21 D1).
    let q = dir.path().join("binary.png");
    grey8(&q, 2, 1, &[255, 0]);
    let msg = err_text(seeds_of(&q, [2, 1, 1], SeedFormat::Auto));
    assert_has(&msg, &["ambiguous", "trimap", "rgb seed format", "128"]);
    assert_eq!(
        seeds_of(&q, [2, 1, 1], SeedFormat::Trimap).unwrap().labels,
        [F, B]
    );
}

#[test]
fn opencv_values_are_soft_for_probably() {
    let dir = tmp();
    let p = dir.path().join("cv.png");
    grey8(&p, 4, 2, &[0, 1, 2, 3, 3, 2, 1, 0]);
    for fmt in [SeedFormat::Auto, SeedFormat::OpenCv] {
        let s = seeds_of(&p, [4, 2, 1], fmt).unwrap();
        assert_eq!(s.labels, [B, F, PB, PF, PF, PB, F, B]);
    }
}

#[test]
fn labels_zero_one_two_are_ambiguous_without_a_format() {
    let dir = tmp();
    let p = dir.path().join("lab.png");
    grey8(&p, 3, 1, &[0, 1, 2]);
    let msg = err_text(seeds_of(&p, [3, 1, 1], SeedFormat::Auto));
    assert_has(
        &msg,
        &["lab.png", "ambiguous", "labels", "opencv", "seed format"],
    );
    assert_eq!(
        seeds_of(&p, [3, 1, 1], SeedFormat::Labels).unwrap().labels,
        [U, F, B]
    );
    assert_eq!(
        seeds_of(&p, [3, 1, 1], SeedFormat::OpenCv).unwrap().labels,
        [B, F, PB]
    );
    // Only 1s: every convention agrees (foreground), so no ambiguity.
    let q = dir.path().join("ones.png");
    grey8(&q, 2, 1, &[1, 1]);
    assert_eq!(
        seeds_of(&q, [2, 1, 1], SeedFormat::Auto).unwrap().labels,
        [F, F]
    );
}

#[test]
fn value_outside_every_convention_names_the_pixel() {
    let dir = tmp();
    let p = dir.path().join("odd.png");
    grey8(&p, 3, 2, &[0, 0, 0, 128, 0, 77]);
    let msg = err_text(seeds_of(&p, [3, 2, 1], SeedFormat::Auto));
    assert_has(&msg, &["odd.png", "(2, 1)", "77"]);
    let msg = err_text(seeds_of(&p, [3, 2, 1], SeedFormat::Trimap));
    assert_has(&msg, &["(2, 1)", "77", "trimap"]);
    let msg = err_text(seeds_of(&p, [3, 2, 1], SeedFormat::Labels));
    assert_has(&msg, &["(0, 1)", "128", "labels"]);
}

#[test]
fn rgb_scribbles_default_and_custom_colours() {
    let dir = tmp();
    let p = dir.path().join("rgb.png");
    let px = [
        [255, 0, 0],
        [0, 0, 255],
        [10, 20, 30],
        [0, 255, 0],
        [255, 0, 0],
        [254, 0, 0],
    ];
    rgb8(&p, 3, 2, &px);
    for fmt in [SeedFormat::Auto, SeedFormat::Rgb] {
        let s = seeds_of(&p, [3, 2, 1], fmt).unwrap();
        assert_eq!(s.labels, [F, B, U, U, F, U]);
    }
    let opts = SeedOptions {
        fg_color: [0, 255, 0],
        bg_color: [10, 20, 30],
        ..SeedOptions::default()
    };
    let s = load_seeds(&p, [3, 2, 1], &opts).unwrap();
    assert_eq!(s.labels, [U, U, B, F, U, U]);
    // No pixel of either colour: say which colours are there.
    let opts = SeedOptions {
        fg_color: [1, 2, 3],
        bg_color: [4, 5, 6],
        ..SeedOptions::default()
    };
    let msg = err_text(load_seeds(&p, [3, 2, 1], &opts));
    assert_has(&msg, &["rgb.png", "(255, 0, 0) ×2", "scribble colours"]);
    let same = SeedOptions {
        fg_color: [9, 9, 9],
        bg_color: [9, 9, 9],
        ..SeedOptions::default()
    };
    assert!(load_seeds(&p, [3, 2, 1], &same).is_err());
}

#[test]
fn rgba_scribbles_transparent_is_unknown() {
    let dir = tmp();
    let p = dir.path().join("rgba.png");
    let data = [255u8, 0, 0, 255, 255, 0, 0, 0, 0, 0, 255, 128];
    write_png(
        &p,
        3,
        1,
        png::ColorType::Rgba,
        png::BitDepth::Eight,
        None,
        &data,
    );
    let s = seeds_of(&p, [3, 1, 1], SeedFormat::Auto).unwrap();
    assert_eq!(s.labels, [F, U, B]);
}

#[test]
fn grey_stored_as_rgb_is_read_as_grey() {
    let dir = tmp();
    let p = dir.path().join("greyrgb.png");
    rgb8(&p, 3, 1, &[[0, 0, 0], [128, 128, 128], [255, 255, 255]]);
    let s = seeds_of(&p, [3, 1, 1], SeedFormat::Auto).unwrap();
    assert_eq!(s.labels, [B, U, F]);
    let s = seeds_of(&p, [3, 1, 1], SeedFormat::Trimap).unwrap();
    assert_eq!(s.labels, [B, U, F]);
    // A true colour image cannot be a trimap.
    let q = dir.path().join("colour.png");
    rgb8(&q, 2, 1, &[[0, 0, 0], [255, 0, 0]]);
    let msg = err_text(seeds_of(&q, [2, 1, 1], SeedFormat::Trimap));
    assert_has(&msg, &["(1, 0)", "rgb seed format"]);
}

#[test]
fn seed_size_mismatch_names_both_sizes_and_files() {
    let dir = tmp();
    let p = dir.path().join("small.png");
    indexed(&p, 4, 3, png::BitDepth::Eight, &[0; 12]);
    let opts = SeedOptions {
        image_file: Some(PathBuf::from("photo.jpg")),
        ..SeedOptions::default()
    };
    let msg = err_text(load_seeds(&p, [5, 3, 1], &opts));
    assert_has(&msg, &["small.png", "4×3", "5×3", "photo.jpg"]);
    let q = dir.path().join("grey.png");
    grey8(&q, 2, 2, &[0, 0, 0, 0]);
    let msg = err_text(load_seeds(&q, [2, 2, 2], &opts));
    assert_has(&msg, &["grey.png", "2×2", "2×2×2", "photo.jpg"]);
}

#[test]
fn seed_format_parses_every_name() {
    for (s, f) in [
        ("auto", SeedFormat::Auto),
        ("palette", SeedFormat::Palette),
        ("TRIMAP", SeedFormat::Trimap),
        ("opencv", SeedFormat::OpenCv),
        ("rgb", SeedFormat::Rgb),
        ("labels", SeedFormat::Labels),
    ] {
        let parsed: SeedFormat = s.parse().unwrap();
        assert_eq!(parsed, f);
        assert_eq!(parsed.to_string(), s.to_ascii_lowercase());
    }
    let msg = err_text("scribble".parse::<SeedFormat>());
    assert_has(&msg, &["scribble", "seed format", "trimap"]);
}

#[test]
fn seeds_from_missing_or_garbage_files_are_errors() {
    let dir = tmp();
    let missing = dir.path().join("nope.png");
    assert_has(
        &err_text(seeds_of(&missing, [2, 2, 1], SeedFormat::Auto)),
        &["nope.png"],
    );
    let junk = dir.path().join("junk.png");
    std::fs::write(&junk, b"\x89PNG\r\n\x1a\nthis is not really a png").unwrap();
    assert_has(
        &err_text(seeds_of(&junk, [2, 2, 1], SeedFormat::Auto)),
        &["junk.png"],
    );
}

#[test]
fn dev_scribbles_have_both_labels_and_the_image_size() {
    let Some(data) = common::shared_data() else {
        return;
    };
    let dev = data.join("segmentation/grabcut-bsds-dev");
    let mut files = 0;
    for entry in std::fs::read_dir(dev.join("images")).unwrap() {
        let img_path = entry.unwrap().path();
        let id = img_path.file_stem().unwrap().to_string_lossy().into_owned();
        let img = load_image(&img_path).unwrap();
        assert_eq!(img.channels, 3, "{id}");
        assert!(
            img.dims == [481, 321, 1] || img.dims == [321, 481, 1],
            "{id}: {:?}",
            img.dims
        );
        for set in ["scribbles-1", "scribbles-2"] {
            let p = dev.join(set).join(format!("{id}-anno.png"));
            let opts = SeedOptions {
                image_file: Some(img_path.clone()),
                ..SeedOptions::default()
            };
            let s = load_seeds(&p, img.dims, &opts).unwrap();
            assert_eq!(s.labels.len(), img.num_pixels());
            let c = s.counts();
            assert!(c[1] > 0 && c[2] > 0, "{set}/{id}: counts {c:?}");
            assert_eq!(c[3] + c[4], 0, "palette scribbles are hard");
            files += 1;
        }
    }
    assert_eq!(files, 18);
}

// ---------- rectangles ----------

#[test]
fn rect_parses_and_rejects() {
    let r: Rect = " 3,4 , 5,6".parse().unwrap();
    assert_eq!(
        r,
        Rect {
            x: 3,
            y: 4,
            w: 5,
            h: 6
        }
    );
    assert_eq!(r.to_string(), "3,4,5,6");
    for bad in ["1,2,3", "1,2,3,4,5", "a,2,3,4", "-1,2,3,4", "", "1,2,3,"] {
        let msg = err_text(bad.parse::<Rect>());
        assert_has(&msg, &["rectangle"]);
    }
}

#[test]
fn rect_seeds_inside_probably_foreground_outside_background() {
    let r = Rect {
        x: 1,
        y: 1,
        w: 2,
        h: 2,
    };
    let s = rect_seeds([4, 3, 1], &r).unwrap();
    #[rustfmt::skip]
    let expect = [
        B, B, B, B,
        B, PF, PF, B,
        B, PF, PF, B,
    ];
    assert_eq!(s.labels, expect);
    // Volumes: the rectangle spans every slice.
    let v = rect_seeds([4, 3, 2], &r).unwrap();
    assert_eq!(&v.labels[..12], &expect);
    assert_eq!(&v.labels[12..], &expect);
}

#[test]
fn rect_validation() {
    let dims = [10, 8, 1];
    let cases = [
        (
            Rect {
                x: 0,
                y: 0,
                w: 0,
                h: 3,
            },
            "empty",
        ),
        (
            Rect {
                x: 0,
                y: 0,
                w: 3,
                h: 0,
            },
            "empty",
        ),
        (
            Rect {
                x: 8,
                y: 0,
                w: 3,
                h: 3,
            },
            "does not fit",
        ),
        (
            Rect {
                x: 0,
                y: 6,
                w: 3,
                h: 3,
            },
            "does not fit",
        ),
        (
            Rect {
                x: usize::MAX,
                y: 0,
                w: 2,
                h: 2,
            },
            "does not fit",
        ),
        (
            Rect {
                x: 0,
                y: 0,
                w: 10,
                h: 8,
            },
            "whole",
        ),
    ];
    for (r, what) in cases {
        let msg = err_text(rect_seeds(dims, &r));
        assert_has(&msg, &["rectangle", what, "10×8"]);
    }
    assert!(rect_seeds(
        dims,
        &Rect {
            x: 9,
            y: 7,
            w: 1,
            h: 1
        }
    )
    .is_ok());
}

#[test]
fn rect_with_seeds_lets_file_hard_seeds_win() {
    let mut file = Seeds::unknown([4, 1, 1]);
    file.labels = vec![F, B, PB, PF];
    let r = Rect {
        x: 1,
        y: 0,
        w: 2,
        h: 1,
    };
    let s = rect_with_seeds(&r, &file).unwrap();
    // 0: outside, hard fg wins; 1: inside, hard bg wins; 2: inside, soft replaces soft;
    // 3: outside, soft cannot undo hard background.
    assert_eq!(s.labels, [F, B, PB, B]);
    // Labels that do not match their dims are refused, not indexed out of bounds.
    let mut wrong = Seeds::unknown([4, 2, 1]);
    wrong.labels.truncate(5);
    let r = Rect {
        x: 0,
        y: 0,
        w: 1,
        h: 1,
    };
    assert_has(&err_text(rect_with_seeds(&r, &wrong)), &["5 labels", "4×2"]);
}

// ---------- 2D images ----------

#[test]
fn png_16bit_grey_keeps_its_range() {
    let dir = tmp();
    let p = dir.path().join("g16.png");
    let vals: [u16; 3] = [0, 40000, 65535];
    let data: Vec<u8> = vals.iter().flat_map(|v| v.to_be_bytes()).collect();
    write_png(
        &p,
        3,
        1,
        png::ColorType::Grayscale,
        png::BitDepth::Sixteen,
        None,
        &data,
    );
    let img = load_image(&p).unwrap();
    assert_eq!(img.channels, 1);
    assert_eq!(img.dims, [3, 1, 1]);
    assert_eq!(img.data, [0.0, 40000.0, 65535.0]);
    // 16-bit RGB too.
    let q = dir.path().join("rgb16.png");
    let data: Vec<u8> = [1000u16, 2000, 3000]
        .iter()
        .flat_map(|v| v.to_be_bytes())
        .collect();
    write_png(
        &q,
        1,
        1,
        png::ColorType::Rgb,
        png::BitDepth::Sixteen,
        None,
        &data,
    );
    assert_eq!(load_image(&q).unwrap().data, [1000.0, 2000.0, 3000.0]);
}

#[test]
fn rgba_grey_alpha_and_palette_images() {
    let dir = tmp();
    let p = dir.path().join("rgba.png");
    write_png(
        &p,
        2,
        1,
        png::ColorType::Rgba,
        png::BitDepth::Eight,
        None,
        &[1, 2, 3, 0, 4, 5, 6, 255],
    );
    let img = load_image(&p).unwrap();
    assert_eq!(
        (img.channels, img.data.clone()),
        (3, vec![1., 2., 3., 4., 5., 6.])
    );
    let q = dir.path().join("ga.png");
    write_png(
        &q,
        2,
        1,
        png::ColorType::GrayscaleAlpha,
        png::BitDepth::Eight,
        None,
        &[7, 0, 9, 255],
    );
    let img = load_image(&q).unwrap();
    assert_eq!((img.channels, img.data.clone()), (1, vec![7., 9.]));
    // Palette images are expanded to their colours.
    let r = dir.path().join("pal.png");
    indexed(&r, 2, 1, png::BitDepth::Eight, &[2, 0]);
    let img = load_image(&r).unwrap();
    assert_eq!(img.channels, 3);
    assert_eq!(img.data, [255., 0., 0., 0., 255., 0.]);
    assert_eq!(img.spacing, [1.0; 3]);
}

#[test]
fn broken_images_are_errors_naming_the_file() {
    let dir = tmp();
    for (name, bytes) in [
        ("empty.png", &b""[..]),
        ("junk.jpg", &b"\xff\xd8\xff\xe0 not a jpeg at all"[..]),
        ("junk.tif", &b"II*\0\x08\0\0\0\xff\xff"[..]),
        ("short.nii", &b"\x5c\x01\0\0 too short"[..]),
        ("junk.nii.gz", &b"\x1f\x8b\x08\0garbage"[..]),
        ("text.png", &b"hello"[..]),
    ] {
        let p = dir.path().join(name);
        std::fs::write(&p, bytes).unwrap();
        let msg = err_text(load_image(&p));
        assert_has(&msg, &[name]);
    }
    assert_has(
        &err_text(load_image(&dir.path().join("missing.png"))),
        &["missing.png"],
    );
}

#[test]
fn memory_limit_is_checked_before_loading() {
    let dir = tmp();
    let p = dir.path().join("img.png");
    rgb8(&p, 100, 50, &vec![[1, 2, 3]; 5000]);
    let conn = segcut::graph::Connectivity::N8;
    // 5000 pixels, 3 channels, 8 neighbours; the decoder adds 3 bytes per pixel.
    use segcut::io::{BYTES_PER_CHANNEL, BYTES_PER_DIRECTION, BYTES_PER_NODE};
    let need = 5000 * (3 * BYTES_PER_CHANNEL + BYTES_PER_NODE + 8 * BYTES_PER_DIRECTION);
    assert_eq!(memory_needed([100, 50, 1], 3, 8), need);
    let opts = |limit| LoadOptions {
        memory_limit: Some(limit),
        connectivity: Some(conn),
    };
    let msg = err_text(load_image_with(&p, &opts(need)));
    assert_has(&msg, &["img.png", "100×50", "memory limit", "needs about"]);
    let img = load_image_with(&p, &opts(need + 5000 * 3)).unwrap();
    assert_eq!(img.dims, [100, 50, 1]);
    // Volumes: the same check for NIfTI (6-connected by default in 3D).
    let v = dir.path().join("v.nii");
    let vol = Image {
        dims: [10, 10, 10],
        channels: 1,
        data: vec![1.0; 1000],
        spacing: [1.0; 3],
        meta: Default::default(),
    };
    save_volume(&v, &vol).unwrap();
    let small = LoadOptions {
        memory_limit: Some(memory_needed([10, 10, 10], 1, 6) - 1),
        connectivity: None,
    };
    assert_has(
        &err_text(load_image_with(&v, &small)),
        &["v.nii", "10×10×10"],
    );
    let fits = LoadOptions {
        memory_limit: Some(memory_needed([10, 10, 10], 1, 6)),
        connectivity: None,
    };
    assert!(load_image_with(&v, &fits).is_ok());
}

// ---------- TIFF volumes ----------

/// A 3-page 16-bit TIFF with an ImageJ description, written with the tiff crate directly.
fn imagej_tiff(path: &Path, w: u32, h: u32, pages: &[Vec<u16>], xres: (u32, u32), z: f64) {
    use tiff::encoder::{colortype, Rational, TiffEncoder};
    use tiff::tags::Tag;
    let f = std::fs::File::create(path).unwrap();
    let mut enc = TiffEncoder::new(f).unwrap();
    let desc = format!(
        "ImageJ=1.53t\nimages={n}\nslices={n}\nunit=micron\nspacing={z}\nloop=false\n",
        n = pages.len()
    );
    for (k, page) in pages.iter().enumerate() {
        let mut im = enc.new_image::<colortype::Gray16>(w, h).unwrap();
        im.x_resolution(Rational {
            n: xres.0,
            d: xres.1,
        });
        im.y_resolution(Rational {
            n: xres.0,
            d: xres.1,
        });
        if k == 0 {
            im.encoder()
                .write_tag(Tag::ImageDescription, desc.as_str())
                .unwrap();
        }
        im.write_data(page).unwrap();
    }
}

#[test]
fn tiff_stack_with_imagej_spacing() {
    let dir = tmp();
    let p = dir.path().join("stack.tif");
    let pages: Vec<Vec<u16>> = (0..3)
        .map(|z| (0..6).map(|i| (z * 1000 + i * 7) as u16).collect())
        .collect();
    imagej_tiff(&p, 3, 2, &pages, (4, 1), 2.5);
    let img = load_image(&p).unwrap();
    assert_eq!(img.dims, [3, 2, 3]);
    assert_eq!(img.channels, 1);
    assert_eq!(img.spacing, [0.25, 0.25, 2.5]);
    let flat: Vec<f32> = pages.iter().flatten().map(|&v| v as f32).collect();
    assert_eq!(img.data, flat);
    // Seeds as a labels volume of the same shape, and a trimap volume.
    let s = dir.path().join("seeds.tif");
    let lab: Vec<Vec<u16>> = (0..3).map(|z| vec![z as u16 % 3; 6]).collect();
    imagej_tiff(&s, 3, 2, &lab, (1, 1), 1.0);
    let seeds = seeds_of(&s, [3, 2, 3], SeedFormat::Labels).unwrap();
    assert_eq!(seeds.counts(), [6, 6, 6, 0, 0]);
    let t = dir.path().join("trimap.tif");
    let tri: Vec<Vec<u16>> = vec![vec![0, 128, 255, 128, 128, 128]; 3];
    imagej_tiff(&t, 3, 2, &tri, (1, 1), 1.0);
    let seeds = seeds_of(&t, [3, 2, 3], SeedFormat::Auto).unwrap();
    assert_eq!(seeds.counts(), [12, 3, 3, 0, 0]);
    let msg = err_text(seeds_of(&t, [3, 2, 2], SeedFormat::Auto));
    assert_has(&msg, &["trimap.tif", "3×2×3", "3×2×2"]);
    // A value no convention has, in a volume: named with its z.
    let o = dir.path().join("odd.tif");
    let mut odd = tri.clone();
    odd[2][4] = 9;
    imagej_tiff(&o, 3, 2, &odd, (1, 1), 1.0);
    assert_has(
        &err_text(seeds_of(&o, [3, 2, 3], SeedFormat::Trimap)),
        &["(1, 1, 2)", "9"],
    );
}

#[test]
fn tiff_pages_of_different_size_name_the_page() {
    use tiff::encoder::{colortype, TiffEncoder};
    let dir = tmp();
    let p = dir.path().join("ragged.tif");
    let f = std::fs::File::create(&p).unwrap();
    let mut enc = TiffEncoder::new(f).unwrap();
    enc.write_image::<colortype::Gray8>(2, 2, &[1, 2, 3, 4])
        .unwrap();
    enc.write_image::<colortype::Gray8>(2, 2, &[1, 2, 3, 4])
        .unwrap();
    enc.write_image::<colortype::Gray8>(3, 1, &[1, 2, 3])
        .unwrap();
    let msg = err_text(load_image(&p));
    assert_has(&msg, &["ragged.tif", "page 3", "3×1", "2×2"]);
}

#[test]
fn tiff_float_and_round_trips() {
    let dir = tmp();
    let cases = [
        Image {
            dims: [4, 3, 2],
            channels: 1,
            data: (0..24).map(|v| v as f32 * 0.5 - 3.0).collect(),
            spacing: [0.3, 0.7, 4.0],
            meta: Default::default(),
        },
        Image {
            dims: [2, 2, 3],
            channels: 1,
            data: (0..12).map(|v| v as f32 * 5000.0).collect(),
            spacing: [1.0, 1.0, 1.0],
            meta: Default::default(),
        },
        Image {
            dims: [3, 2, 1],
            channels: 3,
            data: (0..18).map(|v| v as f32 * 10.0).collect(),
            spacing: [1.0, 1.0, 1.0],
            meta: Default::default(),
        },
    ];
    for (k, img) in cases.iter().enumerate() {
        let p = dir.path().join(format!("rt{k}.tiff"));
        save_tiff(&p, img, Some("mm")).unwrap();
        let back = load_image(&p).unwrap();
        assert_eq!(back.dims, img.dims);
        assert_eq!(back.channels, img.channels);
        assert_eq!(back.data, img.data);
        for a in 0..3 {
            let rel = (back.spacing[a] - img.spacing[a]).abs() / img.spacing[a];
            assert!(
                rel < 1e-6,
                "{k}: spacing {:?} vs {:?}",
                back.spacing,
                img.spacing
            );
        }
    }
}

// ---------- NIfTI ----------

/// A NIfTI-1 file built byte by byte from the standard's layout (not from our writer).
#[allow(clippy::too_many_arguments)]
fn nifti_bytes(
    be: bool,
    dim: [i16; 8],
    datatype: i16,
    bitpix: i16,
    pixdim: [f32; 4],
    slope: f32,
    inter: f32,
    data: &[u8],
) -> Vec<u8> {
    let mut b = vec![0u8; 352];
    let mut put = |at: usize, bytes: &[u8]| b[at..at + bytes.len()].copy_from_slice(bytes);
    let i32b = |v: i32| if be { v.to_be_bytes() } else { v.to_le_bytes() };
    let i16b = |v: i16| if be { v.to_be_bytes() } else { v.to_le_bytes() };
    let f32b = |v: f32| if be { v.to_be_bytes() } else { v.to_le_bytes() };
    put(0, &i32b(348));
    for (k, d) in dim.iter().enumerate() {
        put(40 + 2 * k, &i16b(*d));
    }
    put(70, &i16b(datatype));
    put(72, &i16b(bitpix));
    for (k, p) in pixdim.iter().enumerate() {
        put(76 + 4 * k, &f32b(*p));
    }
    put(108, &f32b(352.0));
    put(112, &f32b(slope));
    put(116, &f32b(inter));
    put(344, b"n+1\0");
    b.extend_from_slice(data);
    b
}

fn gzip(bytes: &[u8]) -> Vec<u8> {
    use std::io::Write;
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    e.write_all(bytes).unwrap();
    e.finish().unwrap()
}

#[test]
fn nifti_hand_made_both_endiannesses_with_scaling() {
    let dir = tmp();
    let vals: Vec<i16> = vec![-3, 0, 7, 100, -200, 32767];
    for be in [false, true] {
        let data: Vec<u8> = vals
            .iter()
            .flat_map(|v| if be { v.to_be_bytes() } else { v.to_le_bytes() })
            .collect();
        let bytes = nifti_bytes(
            be,
            [3, 3, 1, 2, 1, 1, 1, 1],
            4,
            16,
            [1.0, 0.5, 0.75, 3.0],
            2.0,
            1.0,
            &data,
        );
        for gz in [false, true] {
            let name = format!("h{}.nii{}", be as u8, if gz { ".gz" } else { "" });
            let p = dir.path().join(&name);
            std::fs::write(&p, if gz { gzip(&bytes) } else { bytes.clone() }).unwrap();
            let img = load_image(&p).unwrap();
            assert_eq!(img.dims, [3, 1, 2], "{name}");
            assert_eq!(img.spacing, [0.5, 0.75, 3.0]);
            let expect: Vec<f32> = vals.iter().map(|&v| v as f32 * 2.0 + 1.0).collect();
            assert_eq!(img.data, expect, "{name}");
        }
    }
    // slope 0: no scaling; uint8 and float64 datatypes.
    let p = dir.path().join("u8.nii");
    let bytes = nifti_bytes(
        false,
        [3, 2, 1, 1, 1, 1, 1, 1],
        2,
        8,
        [1.0; 4],
        0.0,
        5.0,
        &[9, 250],
    );
    std::fs::write(&p, &bytes).unwrap();
    assert_eq!(load_image(&p).unwrap().data, [9.0, 250.0]);
    // Extension bytes between the header and vox_offset are skipped.
    let mut ext = bytes[..352].to_vec();
    ext[108..112].copy_from_slice(&368f32.to_le_bytes());
    ext.extend_from_slice(&[0xee; 16]);
    ext.extend_from_slice(&[9, 250]);
    let e = dir.path().join("ext.nii");
    std::fs::write(&e, &ext).unwrap();
    assert_eq!(load_image(&e).unwrap().data, [9.0, 250.0]);
    let q = dir.path().join("f64.nii");
    let data: Vec<u8> = [1.25f64, -1e6]
        .iter()
        .flat_map(|v| v.to_be_bytes())
        .collect();
    let bytes = nifti_bytes(
        true,
        [2, 1, 2, 1, 1, 1, 1, 1],
        64,
        64,
        [1.0; 4],
        0.0,
        0.0,
        &data,
    );
    std::fs::write(&q, bytes).unwrap();
    let img = load_image(&q).unwrap();
    assert_eq!((img.dims, img.data), ([1, 2, 1], vec![1.25, -1e6]));
}

#[test]
fn nifti_errors() {
    let dir = tmp();
    let ok = |dim: [i16; 8], datatype: i16, data: &[u8]| {
        nifti_bytes(false, dim, datatype, 8, [1.0; 4], 0.0, 0.0, data)
    };
    let cases: Vec<(&str, Vec<u8>, Vec<&str>)> = vec![
        (
            "4d.nii",
            ok([4, 2, 1, 1, 3, 1, 1, 1], 2, &[0; 6]),
            vec!["dim[4] is 3", "one 3D volume"],
        ),
        (
            "dtype.nii",
            ok([3, 1, 1, 1, 1, 1, 1, 1], 1, &[0]),
            vec!["datatype 1"],
        ),
        (
            "trunc.nii",
            ok([3, 4, 4, 4, 1, 1, 1, 1], 2, &[0; 10]),
            vec!["truncated", "4×4×4", "found 10"],
        ),
        (
            "dim0.nii",
            ok([3, 0, 1, 1, 1, 1, 1, 1], 2, &[]),
            vec!["dim[1] is 0"],
        ),
        (
            "sizeof.nii",
            {
                let mut b = ok([3, 1, 1, 1, 1, 1, 1, 1], 2, &[0]);
                b[0..4].copy_from_slice(&100i32.to_le_bytes());
                b
            },
            vec!["sizeof_hdr is 100"],
        ),
        (
            "nifti2.nii",
            {
                let mut b = ok([3, 1, 1, 1, 1, 1, 1, 1], 2, &[0]);
                b[0..4].copy_from_slice(&540i32.to_le_bytes());
                b
            },
            vec!["NIfTI-2"],
        ),
        (
            "pair.nii",
            {
                let mut b = ok([3, 1, 1, 1, 1, 1, 1, 1], 2, &[0]);
                b[344..348].copy_from_slice(b"ni1\0");
                b
            },
            vec![".hdr/.img"],
        ),
        (
            "offset.nii",
            {
                let mut b = ok([3, 1, 1, 1, 1, 1, 1, 1], 2, &[0]);
                b[108..112].copy_from_slice(&10f32.to_le_bytes());
                b
            },
            vec!["vox_offset"],
        ),
    ];
    for (name, bytes, parts) in cases {
        let p = dir.path().join(name);
        std::fs::write(&p, bytes).unwrap();
        let msg = err_text(load_image(&p));
        assert_has(&msg, &[name]);
        assert_has(&msg, &parts);
    }
}

#[test]
fn nifti_round_trips_every_type_both_orders() {
    let dir = tmp();
    let types = [
        (NiftiType::U8, vec![0.0, 1.0, 200.0, 255.0]),
        (NiftiType::I8, vec![-128.0, -1.0, 0.0, 127.0]),
        (NiftiType::I16, vec![-32768.0, -5.0, 12.0, 32767.0]),
        (NiftiType::U16, vec![0.0, 1.0, 40000.0, 65535.0]),
        (NiftiType::I32, vec![-70000.0, 0.0, 3.0, 1e6]),
        (NiftiType::U32, vec![0.0, 5.0, 70000.0, 1e7]),
        (NiftiType::F32, vec![-1.5, 0.25, 3e10, 7.0]),
        (NiftiType::F64, vec![-1.5, 0.125, 1e-3, 7.0]),
    ];
    for (t, vals) in types {
        for be in [false, true] {
            for ext in ["nii", "nii.gz"] {
                let data: Vec<f32> = (0..12).map(|i| vals[i % 4]).collect();
                let img = Image {
                    dims: [2, 3, 2],
                    channels: 1,
                    data,
                    spacing: [0.5, 1.25, 3.0],
                    meta: Default::default(),
                };
                let p = dir.path().join(format!("{t:?}{be}.{ext}"));
                let opts = NiftiOptions {
                    datatype: t,
                    big_endian: be,
                    ..NiftiOptions::default()
                };
                save_nifti(&p, &img, &opts).unwrap();
                let back = load_image(&p).unwrap();
                assert_eq!(back, img, "{t:?} be={be} {ext}");
                // The byte order on disk is the one asked for: sizeof_hdr reads as 348 in it.
                let raw = std::fs::read(&p).unwrap();
                let raw = if ext == "nii.gz" {
                    use std::io::Read;
                    let mut out = Vec::new();
                    flate2::read::GzDecoder::new(&raw[..])
                        .read_to_end(&mut out)
                        .unwrap();
                    out
                } else {
                    raw
                };
                let first = [raw[0], raw[1], raw[2], raw[3]];
                let v = if be {
                    i32::from_be_bytes(first)
                } else {
                    i32::from_le_bytes(first)
                };
                assert_eq!(v, 348);
            }
        }
    }
    // RGB24 volumes come back with 3 channels.
    let rgb = Image {
        dims: [2, 1, 2],
        channels: 3,
        data: (0..12).map(|v| v as f32 * 20.0).collect(),
        spacing: [1.0; 3],
        meta: Default::default(),
    };
    let p = dir.path().join("rgb.nii");
    save_volume(&p, &rgb).unwrap();
    assert_eq!(load_image(&p).unwrap(), rgb);
}

#[test]
fn nifti_scl_slope_round_trip_and_range_errors() {
    let dir = tmp();
    let img = Image {
        dims: [2, 2, 2],
        channels: 1,
        data: vec![-10.0, 0.0, 0.5, 1.5, 100.0, -99.5, 2.0, 3.0],
        spacing: [1.0, 1.0, 2.0],
        meta: Default::default(),
    };
    let opts = NiftiOptions {
        datatype: NiftiType::I16,
        scl_slope: 0.5,
        scl_inter: -0.5,
        ..NiftiOptions::default()
    };
    let p = dir.path().join("scaled.nii.gz");
    save_nifti(&p, &img, &opts).unwrap();
    assert_eq!(load_image(&p).unwrap(), img);
    // Out of range for uint8: the voxel is named.
    let bad = Image {
        data: vec![0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 300.0],
        ..img
    };
    let q = dir.path().join("bad.nii");
    let msg = err_text(save_nifti(
        &q,
        &bad,
        &NiftiOptions {
            datatype: NiftiType::U8,
            ..NiftiOptions::default()
        },
    ));
    assert_has(&msg, &["bad.nii", "(1, 1, 1)", "300"]);
}

#[test]
fn nifti_seeds_labels_volume() {
    let dir = tmp();
    let p = dir.path().join("seeds.nii.gz");
    let img = Image {
        dims: [3, 2, 2],
        channels: 1,
        data: vec![0., 1., 2., 0., 0., 0., 2., 2., 1., 0., 0., 0.],
        spacing: [1.0; 3],
        meta: Default::default(),
    };
    save_volume(&p, &img).unwrap();
    let s = seeds_of(&p, [3, 2, 2], SeedFormat::Labels).unwrap();
    assert_eq!(s.counts(), [7, 2, 3, 0, 0]);
    assert_eq!(s.labels[6], B);
    assert_has(
        &err_text(seeds_of(&p, [3, 2, 2], SeedFormat::Auto)),
        &["ambiguous"],
    );
}

// ---------- masks ----------

#[test]
fn mask_2d_png_and_tiff() {
    let dir = tmp();
    let mask = [true, false, false, true, true, false];
    let p = dir.path().join("m.png");
    save_mask(&p, &mask, [3, 2, 1], None).unwrap();
    let g = image::open(&p).unwrap();
    assert_eq!(g.color(), image::ColorType::L8);
    assert_eq!(g.to_luma8().into_raw(), [255, 0, 0, 255, 255, 0]);
    let t = dir.path().join("m.tif");
    save_mask(&t, &mask, [3, 2, 1], None).unwrap();
    let back = load_image(&t).unwrap();
    assert_eq!(back.data, [255., 0., 0., 255., 255., 0.]);
    // Wrong length; a volume to PNG.
    assert_has(
        &err_text(save_mask(&p, &mask, [2, 2, 1], None)),
        &["m.png", "6 values", "2×2"],
    );
    assert_has(
        &err_text(save_mask(&p, &mask, [1, 3, 2], None)),
        &[".tif or .nii"],
    );
    assert_has(
        &err_text(save_mask(&dir.path().join("m.jpg"), &mask, [3, 2, 1], None)),
        &["m.jpg", "lossy"],
    );
    // Other lossless formats of the image crate work too.
    let b = dir.path().join("m.bmp");
    save_mask(&b, &mask, [3, 2, 1], None).unwrap();
    assert_eq!(
        image::open(&b).unwrap().to_luma8().into_raw(),
        [255, 0, 0, 255, 255, 0]
    );
}

#[test]
fn mask_3d_tiff_and_nifti_like_input() {
    let dir = tmp();
    let dims = [3, 2, 2];
    let mask: Vec<bool> = (0..12).map(|i| i % 3 == 0).collect();
    // TIFF volume: pages of 0/255, spacing copied from a TIFF input.
    let input_tif = dir.path().join("in.tif");
    let pages: Vec<Vec<u16>> = vec![vec![0; 6]; 2];
    imagej_tiff(&input_tif, 3, 2, &pages, (2, 1), 4.0);
    let t = dir.path().join("mask.tif");
    save_mask(&t, &mask, dims, Some(&load_image(&input_tif).unwrap())).unwrap();
    let back = load_image(&t).unwrap();
    assert_eq!(back.dims, dims);
    let expect: Vec<f32> = mask.iter().map(|&m| if m { 255.0 } else { 0.0 }).collect();
    assert_eq!(back.data, expect);
    assert_eq!(back.spacing, [0.5, 0.5, 4.0]);

    // NIfTI: uint8 0/1, pixdim and orientation (sform) copied from a NIfTI input.
    let mut input = nifti_bytes(
        true,
        [3, 3, 2, 2, 1, 1, 1, 1],
        2,
        8,
        [-1.0, 0.9, 0.8, 2.2],
        0.0,
        0.0,
        &[0; 12],
    );
    input[254..256].copy_from_slice(&2i16.to_be_bytes()); // sform_code
    for (k, v) in [0.9f32, 0.0, 0.0, -10.0].iter().enumerate() {
        input[280 + 4 * k..284 + 4 * k].copy_from_slice(&v.to_be_bytes());
    }
    let input_nii = dir.path().join("in.nii");
    std::fs::write(&input_nii, &input).unwrap();
    let m = dir.path().join("mask.nii.gz");
    let input_vol = load_image(&input_nii).unwrap();
    save_mask(&m, &mask, dims, Some(&input_vol)).unwrap();
    let back = load_image(&m).unwrap();
    assert_eq!(back.dims, dims);
    let expect: Vec<f32> = mask.iter().map(|&m| m as u8 as f32).collect();
    assert_eq!(back.data, expect);
    let sp = back.spacing;
    assert!((sp[0] - 0.9).abs() < 1e-6 && (sp[1] - 0.8).abs() < 1e-6 && (sp[2] - 2.2).abs() < 1e-6);
    let raw = {
        use std::io::Read;
        let mut out = Vec::new();
        flate2::read::GzDecoder::new(&std::fs::read(&m).unwrap()[..])
            .read_to_end(&mut out)
            .unwrap();
        out
    };
    let le_i16 = |at: usize| i16::from_le_bytes([raw[at], raw[at + 1]]);
    let le_f32 = |at: usize| f32::from_le_bytes([raw[at], raw[at + 1], raw[at + 2], raw[at + 3]]);
    assert_eq!(le_i16(70), 2, "datatype uint8");
    assert_eq!(le_i16(254), 2, "sform_code copied");
    assert_eq!(le_f32(280), 0.9);
    assert_eq!(le_f32(292), -10.0);
    assert_eq!(le_f32(76), -1.0, "qfac copied");
    // A `like` of another size is refused.
    assert_has(
        &err_text(save_mask(&m, &mask[..6], [3, 2, 1], Some(&input_vol))),
        &["mask.nii.gz", "3×2×2", "3×2"],
    );
}

// ---------- robustness ----------

/// Flips bytes of valid files all over: every read must return, never panic.
#[test]
fn corrupted_files_never_panic() {
    let dir = tmp();
    let vol = Image {
        dims: [4, 3, 2],
        channels: 1,
        data: (0..24).map(|v| v as f32).collect(),
        spacing: [1.0; 3],
        meta: Default::default(),
    };
    let nii = dir.path().join("v.nii");
    save_volume(&nii, &vol).unwrap();
    let tif = dir.path().join("v.tif");
    save_volume(&tif, &vol).unwrap();
    let png = dir.path().join("p.png");
    indexed(
        &png,
        6,
        2,
        png::BitDepth::Eight,
        &[0, 1, 2, 0, 1, 2, 0, 1, 2, 0, 1, 2],
    );
    let mut rng = 0x9e3779b97f4a7c15u64;
    let mut next = move || {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng
    };
    for src in [&nii, &tif, &png] {
        let good = std::fs::read(src).unwrap();
        let ext = src.extension().unwrap().to_string_lossy().into_owned();
        for k in 0..60 {
            let mut bytes = good.clone();
            match k % 3 {
                0 => bytes.truncate(next() as usize % bytes.len()),
                _ => {
                    for _ in 0..4 {
                        let i = next() as usize % bytes.len();
                        bytes[i] = next() as u8;
                    }
                }
            }
            let p = dir.path().join(format!("c{k}.{ext}"));
            std::fs::write(&p, &bytes).unwrap();
            let small = LoadOptions {
                memory_limit: Some(64 << 20),
                connectivity: None,
            };
            let _ = load_image_with(&p, &small);
            let _ = load_seeds(&p, [6, 2, 1], &SeedOptions::default());
        }
    }
}

/// The decoders keep the `image` crate's pixels exactly: a JPEG (the dev photos), an RGB PNG,
/// a 16-bit grey PNG and an RGBA PNG made here, each against `image::open`.
#[test]
fn decoded_pixels_match_the_image_crate() {
    let dir = tmp();
    let mut files: Vec<PathBuf> = vec![common::repo_root().join("samples/balloon.png")];
    if let Some(data) = common::shared_data() {
        let photos = data.join("segmentation/grabcut-bsds-dev/images");
        let mut jpegs: Vec<PathBuf> = std::fs::read_dir(&photos)
            .map(|d| d.filter_map(|e| e.ok().map(|e| e.path())).collect())
            .unwrap_or_default();
        jpegs.sort();
        files.extend(jpegs.into_iter().take(3));
    }
    let grey16 = dir.path().join("g16.png");
    image::ImageBuffer::<image::Luma<u16>, _>::from_fn(37, 11, |x, y| {
        image::Luma([(x * 1000 + y * 7) as u16])
    })
    .save(&grey16)
    .unwrap();
    let rgba = dir.path().join("rgba.png");
    image::RgbaImage::from_fn(13, 9, |x, y| {
        image::Rgba([x as u8, y as u8, 200, 17 * x as u8])
    })
    .save(&rgba)
    .unwrap();
    files.extend([grey16, rgba]);
    for f in &files {
        let ours = load_image(f).unwrap();
        let theirs = image::open(f).unwrap();
        let want: Vec<f32> = if ours.channels == 1 {
            theirs
                .to_luma16()
                .as_raw()
                .iter()
                .map(|&v| v as f32)
                .collect()
        } else if matches!(
            theirs.color(),
            image::ColorType::Rgb16 | image::ColorType::Rgba16
        ) {
            theirs
                .to_rgb16()
                .as_raw()
                .iter()
                .map(|&v| v as f32)
                .collect()
        } else {
            theirs
                .to_rgb8()
                .as_raw()
                .iter()
                .map(|&v| v as f32)
                .collect()
        };
        let want = match (ours.channels, theirs.color()) {
            // 8-bit grey through luma16 is scaled by 257: compare in the file's range.
            (1, image::ColorType::L8 | image::ColorType::La8) => {
                want.iter().map(|v| v / 257.0).collect()
            }
            _ => want,
        };
        assert_eq!(
            ours.dims[..2],
            [theirs.width() as usize, theirs.height() as usize]
        );
        assert!(ours.data == want, "{}: pixels differ", f.display());
    }
    assert!(files.len() >= 3);
}
