//! What segcut promises about your files (docs/safety.md), as a careless user and a hostile file
//! would test it: inputs are never overwritten, a failed write never exits 0, outputs appear
//! whole or not at all, inputs too large for the memory are refused cleanly, and damaged or
//! nonsensical inputs are errors.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn segcut_in(dir: &Path, args: &[&str]) -> Output {
    Command::new(common::segcut_bin())
        .args(args)
        .current_dir(dir)
        .output()
        .expect("run segcut")
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// A run that must fail with status 2, no panic, and an error that contains every `want`.
fn fails(dir: &Path, args: &[&str], want: &[&str]) -> String {
    let o = segcut_in(dir, args);
    let e = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{args:?}: {e}");
    assert!(!e.contains("panicked"), "{e}");
    for w in want {
        assert!(e.contains(w), "{args:?}: missing '{w}' in: {e}");
    }
    e
}

/// A temporary folder holding the sample photo and its seeds as `in.png` and `s.png`.
fn workdir() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let root = common::repo_root();
    std::fs::copy(root.join("samples/balloon.png"), dir.path().join("in.png")).unwrap();
    std::fs::copy(
        root.join("samples/balloon-seeds.png"),
        dir.path().join("s.png"),
    )
    .unwrap();
    let p = dir.path().to_path_buf();
    (dir, p)
}

fn bytes(p: &Path) -> Vec<u8> {
    std::fs::read(p).unwrap()
}

#[test]
fn outputs_never_overwrite_inputs_or_each_other() {
    let (_t, d) = workdir();
    let (img, seeds) = (bytes(&d.join("in.png")), bytes(&d.join("s.png")));
    let cases: &[(&[&str], &[&str])] = &[
        (&["-o", "in.png"], &["mask", "image input"]),
        (&["-o", "s.png"], &["mask", "seeds input"]),
        (&["-o", "./sub/../in.png"], &["image input"]),
        (
            &["-o", "m.png", "--overlay", "in.png"],
            &["--overlay", "image"],
        ),
        (&["-o", "m.png", "--stats-json", "s.png"], &["--stats-json"]),
        (
            &["-o", "m.png", "--export-graph", "in.png"],
            &["--export-graph"],
        ),
        (&["-o", "m.png", "--overlay", "m.png"], &["also the mask"]),
        (
            &["-o", "m.png", "--stats-json", "m.png"],
            &["also the mask"],
        ),
    ];
    std::fs::create_dir(d.join("sub")).unwrap();
    for (extra, want) in cases {
        let mut args = vec!["in.png", "--seeds", "s.png"];
        args.extend_from_slice(extra);
        fails(&d, &args, want);
        assert_eq!(bytes(&d.join("in.png")), img, "{extra:?} changed the image");
        assert_eq!(
            bytes(&d.join("s.png")),
            seeds,
            "{extra:?} changed the seeds"
        );
        assert!(
            !d.join("m.png").exists(),
            "{extra:?}: an output was written"
        );
    }
    // A hard link to the input is the input too.
    std::fs::hard_link(d.join("in.png"), d.join("alias.png")).unwrap();
    fails(
        &d,
        &["in.png", "--seeds", "s.png", "-o", "alias.png"],
        &["image input"],
    );
}

#[test]
fn a_failed_write_exits_non_zero_and_keeps_the_earlier_outputs_as_they_were() {
    if !Path::new("/dev/full").exists() {
        common::skipped("no /dev/full on this system");
        return;
    }
    let (_t, d) = workdir();
    std::os::unix::fs::symlink("/dev/full", d.join("full.png")).unwrap();
    // A small PNG mask onto a full device: an error, not "-> full.png" and exit 0.
    fails(
        &d,
        &["in.png", "--seeds", "s.png", "-o", "full.png"],
        &["No space left"],
    );
    // A good mask from an earlier run, then a run whose last output fails: the mask stays the
    // earlier one (outputs are staged and put in place only together).
    std::fs::write(d.join("old-stats.json"), b"{}").unwrap();
    let ok = segcut_in(&d, &["in.png", "--seeds", "s.png", "-o", "m.png"]);
    assert!(ok.status.success(), "{}", stderr(&ok));
    let before = bytes(&d.join("m.png"));
    std::os::unix::fs::symlink("/dev/full", d.join("full.json")).unwrap();
    fails(
        &d,
        &[
            "in.png",
            "--seeds",
            "s.png",
            "-o",
            "m.png",
            "--lambda",
            "5",
            "--stats-json",
            "full.json",
        ],
        &["No space left"],
    );
    assert_eq!(bytes(&d.join("m.png")), before, "the mask was replaced");
    assert!(
        image::open(d.join("m.png")).is_ok(),
        "the mask still decodes"
    );
    let leftovers: Vec<_> = std::fs::read_dir(&d)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains("segcut-tmp"))
        .collect();
    assert!(leftovers.is_empty(), "temporary files left: {leftovers:?}");
}

#[test]
fn an_interrupted_write_leaves_the_old_file() {
    use std::io::Write;
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("mask.png");
    std::fs::write(&target, b"the good mask").unwrap();
    {
        // Half written, then the writer is dropped (an error, a panic, a killed encoder).
        let mut f = segcut::io::AtomicFile::create(&target).unwrap();
        f.write_all(b"half of a new ma").unwrap();
    }
    assert_eq!(bytes(&target), b"the good mask");
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    // A writer killed outright leaves its temporary file beside the target, never a torn target.
    let mut child = Command::new(common::segcut_bin())
        .args([
            "gen",
            "grid",
            "2d:2048x2048:n8:c100:s1",
            "-o",
            target.with_extension("max").to_str().unwrap(),
        ])
        .spawn()
        .unwrap();
    std::fs::write(target.with_extension("max"), b"c old graph\n").unwrap();
    std::thread::sleep(std::time::Duration::from_millis(300));
    let _ = child.kill();
    let _ = child.wait();
    let now = bytes(&target.with_extension("max"));
    // Either the run finished (a whole new file) or it was killed (the old one), nothing between.
    assert!(
        now == b"c old graph\n" || now.ends_with(b"\n") && now.len() > 1_000_000,
        "torn file of {} bytes",
        now.len()
    );
}

#[test]
fn output_formats_are_checked_before_any_work() {
    let (_t, d) = workdir();
    fails(
        &d,
        &["in.png", "--seeds", "s.png", "-o", "m.jpg"],
        &["lossy"],
    );
    fails(
        &d,
        &["in.png", "--seeds", "s.png", "-o", "m.xyz"],
        &["unknown output format"],
    );
    fails(
        &d,
        &["in.png", "--seeds", "s.png", "-o", "no/such/dir/m.png"],
        &["no/such/dir"],
    );
    fails(
        &d,
        &[
            "in.png",
            "--seeds",
            "s.png",
            "-o",
            "m.png",
            "--overlay",
            "o.xyz",
        ],
        &["o.xyz"],
    );
    // A volume to a 2D format: refused when the volume is known, before segmenting.
    let vol = segcut::io::Image {
        dims: [4, 4, 3],
        channels: 1,
        data: (0..48).map(|v| (v * 5) as f32).collect(),
        spacing: [1.0; 3],
        meta: Default::default(),
    };
    segcut::io::save_volume(&d.join("v.nii"), &vol).unwrap();
    fails(
        &d,
        &["v.nii", "--rect", "1,1,2,2", "-o", "v-mask.png"],
        &["volume", ".tif or .nii"],
    );
    assert!(!d.join("v-mask.png").exists());
}

#[test]
fn a_negative_rectangle_is_a_value_not_a_flag() {
    let (_t, d) = workdir();
    let e = fails(
        &d,
        &["in.png", "--rect", "-5,0,10,10", "-o", "m.png"],
        &["-5"],
    );
    assert!(!e.contains("unexpected argument"), "{e}");
}

#[test]
fn a_truncated_jpeg_is_refused() {
    let (_t, d) = workdir();
    let img = image::open(d.join("in.png")).unwrap().to_rgb8();
    img.save(d.join("whole.jpg")).unwrap();
    let whole = bytes(&d.join("whole.jpg"));
    std::fs::write(d.join("half.jpg"), &whole[..whole.len() / 2]).unwrap();
    let ok = segcut_in(&d, &["whole.jpg", "--seeds", "s.png", "-o", "m.png"]);
    assert!(ok.status.success(), "{}", stderr(&ok));
    fails(
        &d,
        &["half.jpg", "--seeds", "s.png", "-o", "m2.png"],
        &["half.jpg", "truncated"],
    );
}

/// A 4×4×2 NIfTI volume with the given voxel sizes.
fn nifti(pixdim: [f32; 3]) -> Vec<u8> {
    let mut b = vec![0u8; 352];
    let mut put = |at: usize, bytes: &[u8]| b[at..at + bytes.len()].copy_from_slice(bytes);
    put(0, &348i32.to_le_bytes());
    for (k, d) in [3i16, 4, 4, 2, 1, 1, 1, 1].iter().enumerate() {
        put(40 + 2 * k, &d.to_le_bytes());
    }
    put(70, &2i16.to_le_bytes()); // uint8
    put(72, &8i16.to_le_bytes());
    put(76, &1f32.to_le_bytes());
    for (k, p) in pixdim.iter().enumerate() {
        put(80 + 4 * k, &p.to_le_bytes());
    }
    put(108, &352f32.to_le_bytes());
    put(344, b"n+1\0");
    b.extend((0..32u8).map(|v| v * 7));
    b
}

#[test]
fn nifti_voxel_sizes_must_be_sizes() {
    let dir = tempfile::tempdir().unwrap();
    let good = dir.path().join("good.nii");
    std::fs::write(&good, nifti([0.5, 0.5, 2.0])).unwrap();
    assert_eq!(
        segcut::io::load_image(&good).unwrap().spacing,
        [0.5, 0.5, 2.0]
    );
    for (name, p) in [
        ("zero", [0.5, 0.0, 2.0]),
        ("negative", [0.5, 0.5, -2.0]),
        ("nan", [f32::NAN, 0.5, 2.0]),
        ("inf", [0.5, f32::INFINITY, 2.0]),
    ] {
        let path = dir.path().join(format!("{name}.nii"));
        std::fs::write(&path, nifti(p)).unwrap();
        let e = segcut::io::load_image(&path).unwrap_err().to_string();
        assert!(
            e.contains("pixdim") && e.contains(&path.display().to_string()),
            "{e}"
        );
    }
}

#[test]
fn an_image_too_large_for_the_memory_limit_is_refused_not_aborted() {
    let dir = tempfile::tempdir().unwrap();
    // 16000² grey: a small file (it is flat) that needs gigabytes to segment.
    let big = dir.path().join("big.png");
    image::GrayImage::new(16000, 16000).save(&big).unwrap();
    let bin = common::segcut_bin();
    let o = Command::new("sh")
        .arg("-c")
        .arg(format!(
            "ulimit -v 3000000 && exec '{}' big.png --rect 10,10,100,100 -o m.png",
            bin.display()
        ))
        .current_dir(dir.path())
        .output()
        .unwrap();
    let e = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{e}");
    assert!(e.contains("needs about") && e.contains("ulimit"), "{e}");
}

#[test]
fn a_tiff_with_an_absurd_description_length_is_read_quietly() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.tif");
    {
        use tiff::encoder::{colortype, TiffEncoder};
        let f = std::fs::File::create(&path).unwrap();
        let mut enc = TiffEncoder::new(f).unwrap();
        let mut im = enc.new_image::<colortype::Gray8>(4, 4).unwrap();
        im.encoder()
            .write_tag(tiff::tags::Tag::ImageDescription, "ImageJ=1\nspacing=2\n")
            .unwrap();
        im.write_data(&[9u8; 16]).unwrap();
    }
    // Patch the description's count in the first IFD to 2^31.
    let mut b = bytes(&path);
    let ifd = u32::from_le_bytes(b[4..8].try_into().unwrap()) as usize;
    let n = u16::from_le_bytes(b[ifd..ifd + 2].try_into().unwrap()) as usize;
    let entry = (0..n)
        .map(|i| ifd + 2 + 12 * i)
        .find(|&e| u16::from_le_bytes(b[e..e + 2].try_into().unwrap()) == 270)
        .expect("description entry");
    b[entry + 4..entry + 8].copy_from_slice(&(1u32 << 31).to_le_bytes());
    std::fs::write(&path, &b).unwrap();
    let o = Command::new(common::segcut_bin())
        .args(["t.tif", "--rect", "1,1,2,2", "-o", "m.tif"])
        .current_dir(dir.path())
        .output()
        .unwrap();
    let e = stderr(&o);
    assert!(!e.contains("ifd.rs"), "a debugging line: {e}");
    assert!(!e.contains("panicked"), "{e}");
}
