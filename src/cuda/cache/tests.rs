use super::*;
use crate::cuda::compile_options;

fn env<'a>(vars: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<OsString> + 'a {
    move |k| {
        vars.iter()
            .find(|(n, _)| *n == k)
            .map(|(_, v)| OsString::from(v))
    }
}

#[test]
fn the_setting_follows_the_environment() {
    let from = |vars: &[(&str, &str)]| KernelCache::from_env_with(env(vars));
    assert_eq!(from(&[]), KernelCache::Default);
    assert_eq!(
        from(&[("SEGCUT_CACHE_DIR", "/s")]),
        KernelCache::Dir("/s".into())
    );
    // Empty values count as unset; 0 disables whatever else is set, other values do not.
    assert_eq!(from(&[("SEGCUT_CACHE_DIR", "")]), KernelCache::Default);
    assert_eq!(
        from(&[("SEGCUT_CACHE_DIR", "/s"), ("SEGCUT_KERNEL_CACHE", "0")]),
        KernelCache::Off
    );
    assert_eq!(
        from(&[("SEGCUT_CACHE_DIR", "/s"), ("SEGCUT_KERNEL_CACHE", "1")]),
        KernelCache::Dir("/s".into())
    );
}

#[test]
fn the_default_folder_is_the_users_cache() {
    let dir = |vars: &[(&str, &str)]| KernelCache::Default.dir_with(env(vars));
    assert_eq!(dir(&[("HOME", "/h")]), Some("/h/.cache/segcut".into()));
    assert_eq!(
        dir(&[("HOME", "/h"), ("XDG_CACHE_HOME", "/x")]),
        Some("/x/segcut".into())
    );
    assert_eq!(
        dir(&[("HOME", "/h"), ("XDG_CACHE_HOME", "")]),
        Some("/h/.cache/segcut".into())
    );
    assert_eq!(dir(&[]), None);
    let h = [("HOME", "/h")];
    assert_eq!(
        KernelCache::Dir("/d".into()).dir_with(env(&h)),
        Some("/d".into())
    );
    assert_eq!(KernelCache::Off.dir_with(env(&h)), None);
}

#[test]
fn cache_key_changes_with_every_input() {
    let opts = compile_options("grid_pr", "sm_90");
    let other_opts = compile_options("seg_energy", "sm_90");
    let base = CacheInputs {
        source: "src",
        header: "hdr",
        arch: "sm_90",
        nvrtc: (13, 0),
        driver: 13000,
        options: &opts,
    };
    assert_eq!(cache_key(&base), cache_key(&base.clone()), "deterministic");
    let others = [
        CacheInputs {
            source: "src ",
            ..base
        },
        CacheInputs {
            header: "hdr2",
            ..base
        },
        CacheInputs {
            arch: "sm_80",
            ..base
        },
        CacheInputs {
            nvrtc: (13, 1),
            ..base
        },
        CacheInputs {
            nvrtc: (12, 0),
            ..base
        },
        CacheInputs {
            driver: 13010,
            ..base
        },
        CacheInputs {
            options: &other_opts,
            ..base
        },
        CacheInputs {
            options: &[],
            ..base
        },
        // Fields do not run together.
        CacheInputs {
            source: "srchdr",
            header: "",
            ..base
        },
    ];
    for (i, k) in others.iter().enumerate() {
        assert_ne!(cache_key(k), cache_key(&base), "variant {i}");
    }
    // A pinned value: the hash must not drift between builds, or every cache goes stale.
    assert_eq!(fnv1a(FNV_OFFSET, b"a"), 0xaf63_dc4c_8601_ec8c);
}

#[test]
fn entries_round_trip_and_damage_is_a_miss() {
    let dir = tempfile::tempdir().unwrap();
    let path = entry_path(&dir.path().join("sub"), "grid_pr", "sm_90", 42);
    assert_eq!(read_entry(&path, 42), None, "missing file");
    let payload: Vec<u8> = (0..5000u32).map(|i| (i * 7 % 251) as u8).collect();
    write_entry(&path, 42, &payload).unwrap();
    assert_eq!(read_entry(&path, 42).as_deref(), Some(&payload[..]));
    assert_eq!(read_entry(&path, 43), None, "other key");
    // No temporary file is left behind.
    let names: Vec<_> = std::fs::read_dir(path.parent().unwrap())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names.len(), 1, "{names:?}");

    let good = std::fs::read(&path).unwrap();
    let mut flipped = good.clone();
    *flipped.last_mut().unwrap() ^= 1;
    let mut bad_magic = good.clone();
    bad_magic[0] = b'X';
    for (what, bytes) in [
        ("flipped payload bit", flipped),
        ("truncated", good[..good.len() - 1].to_vec()),
        ("header only", good[..ENTRY_HEADER - 3].to_vec()),
        ("empty", Vec::new()),
        ("bad magic", bad_magic),
    ] {
        std::fs::write(&path, &bytes).unwrap();
        assert_eq!(read_entry(&path, 42), None, "{what}");
    }
    // Rewriting over a damaged entry restores it.
    write_entry(&path, 42, &payload).unwrap();
    assert_eq!(read_entry(&path, 42).as_deref(), Some(&payload[..]));
    // A file in the way of the folder is a failed write, not a panic.
    let blocked = entry_path(&path, "grid_pr", "sm_90", 1);
    assert!(write_entry(&blocked, 1, &payload).is_err());
}
