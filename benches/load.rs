//! Loading speed of a large generated graph in each format segcut reads, against a raw read of
//! the same bytes: `cargo bench --bench load` (a 2048×2048 4-connected grid, about 390 MB of
//! text), or `SEGCUT_LOAD_SPEC=2d:4096x4096:n4:c10:s1 cargo bench --bench load` for a larger
//! one. Each row is the median of `SEGCUT_LOAD_RUNS` (default 3) loads into a `MaxInstance`
//! (grid inference included), as MB/s of the file read and of the DIMACS text it stands for.
//! Files go to `SEGCUT_LOAD_DIR` (default: a temporary folder), so the page cache is warm after
//! the first run: this measures the reader, not the disk.

use std::io::Read;
use std::path::Path;
use std::time::Instant;

use segcut::gen::{generate, InstanceSpec};
use segcut::io::dimacs::{read_instances, write_max_file, write_sgb, ReadOptions};

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn time(runs: usize, mut f: impl FnMut()) -> f64 {
    median(
        (0..runs)
            .map(|_| {
                let t = Instant::now();
                f();
                t.elapsed().as_secs_f64()
            })
            .collect(),
    )
}

fn load(path: &Path) {
    let mut n = 0;
    read_instances(path, &ReadOptions::default(), |_| {
        n += 1;
        Ok(())
    })
    .unwrap();
    assert_eq!(n, 1);
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    let spec = std::env::var("SEGCUT_LOAD_SPEC").unwrap_or("2d:2048x2048:n4:c10:s1".into());
    let runs: usize = std::env::var("SEGCUT_LOAD_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(3);
    let tmp = tempfile::tempdir().unwrap();
    let dir = std::env::var_os("SEGCUT_LOAD_DIR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| tmp.path().to_path_buf());
    std::fs::create_dir_all(&dir).unwrap();
    let net = generate(&spec.parse::<InstanceSpec>().unwrap()).unwrap();
    let plain = dir.join("g.max");
    let t = Instant::now();
    write_max_file(&plain, &net, &[]).unwrap();
    eprintln!("wrote {} in {:.1?}", plain.display(), t.elapsed());
    let text_mb = std::fs::metadata(&plain).unwrap().len() as f64 / 1e6;
    for ext in ["max.gz", "max.bz2"] {
        let p = dir.join(format!("g.{ext}"));
        let t = Instant::now();
        write_max_file(&p, &net, &[]).unwrap();
        eprintln!("wrote {} in {:.1?}", p.display(), t.elapsed());
    }
    let sgb = dir.join("g.sgb");
    let mut inst = None;
    read_instances(&plain, &ReadOptions::default(), |i| {
        inst = Some(i);
        Ok(())
    })
    .unwrap();
    let mut f = segcut::io::AtomicFile::create(&sgb).unwrap();
    write_sgb(&mut f, &inst.unwrap()).unwrap();
    f.commit().unwrap();

    println!("graph {spec}: {text_mb:.0} MB of DIMACS text; median of {runs} runs");
    println!("| input | file MB | s | file MB/s | text MB/s |");
    println!("|---|---:|---:|---:|---:|");
    let row = |what: &str, path: &Path, secs: f64| {
        let mb = std::fs::metadata(path).unwrap().len() as f64 / 1e6;
        println!(
            "| {what} | {mb:.0} | {secs:.2} | {:.0} | {:.0} |",
            mb / secs,
            text_mb / secs
        );
    };
    let raw = |p: &Path| {
        let mut buf = vec![0u8; 1 << 20];
        let mut f = std::fs::File::open(p).unwrap();
        while f.read(&mut buf).unwrap() > 0 {}
    };
    row(
        "raw read of g.max (1 MiB reads)",
        &plain,
        time(runs, || raw(&plain)),
    );
    row(
        "raw read of g.sgb (1 MiB reads)",
        &sgb,
        time(runs, || raw(&sgb)),
    );
    row("`.max` plain", &plain, time(runs, || load(&plain)));
    row("`.sgb`", &sgb, time(runs, || load(&sgb)));
    let gz = dir.join("g.max.gz");
    let decode_gz = || {
        let f = std::fs::File::open(&gz).unwrap();
        std::io::copy(
            &mut flate2::read::MultiGzDecoder::new(f),
            &mut std::io::sink(),
        )
        .unwrap();
    };
    row("gzip: decompress only", &gz, time(runs, decode_gz));
    row("`.max.gz`", &gz, time(runs, || load(&gz)));
    let bz = dir.join("g.max.bz2");
    let decode_bz = || {
        let f = std::fs::File::open(&bz).unwrap();
        std::io::copy(
            &mut bzip2::read::MultiBzDecoder::new(f),
            &mut std::io::sink(),
        )
        .unwrap();
    };
    // bzip2 last: by far the slowest.
    row("bzip2: decompress only", &bz, time(runs, decode_bz));
    row("`.max.bz2`", &bz, time(runs, || load(&bz)));
}
