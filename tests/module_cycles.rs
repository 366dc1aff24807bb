//! No import circles between the library's files: the file-level module graph of `src/` has no
//! cycle. A file imports another when it names an item through a `crate::`, `super::` or
//! `self::` path (in a `use` or in code), or `use`s one of its own child modules; the path leads
//! to the deepest file it names (`crate::io::nifti::save_nifti` → `src/io/nifti.rs`,
//! `crate::maxflow::Cut` → `src/maxflow/mod.rs`). Re-exports (`pub use`) hand names on and are
//! not imports, as `farm-studio look` draws them.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// A source file as a module: its path from the crate root (`["io", "nifti"]`; a folder's
/// `mod.rs` is the folder's module, `lib.rs` the crate's).
struct Module {
    path: Vec<String>,
}

/// The checkout whose sources are read: the nearest folder at or above the current directory
/// that holds `Cargo.toml` and `src/lib.rs` (a packed test binary run from the repository root
/// on another machine finds its sources there), else the folder the test was built in.
fn root() -> PathBuf {
    let is_root = |d: &Path| d.join("Cargo.toml").is_file() && d.join("src/lib.rs").is_file();
    std::env::current_dir()
        .ok()
        .and_then(|cwd| cwd.ancestors().find(|d| is_root(d)).map(Path::to_path_buf))
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")))
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let p = entry.unwrap().path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|e| e == "rs") {
            out.push(p);
        }
    }
}

/// Every library file (not the binary's `main.rs` and `cli/`), by its path from the repo root.
fn modules() -> BTreeMap<String, Module> {
    let src = root().join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let mut out = BTreeMap::new();
    for f in files {
        let rel = f
            .strip_prefix(&src)
            .unwrap()
            .to_string_lossy()
            .replace('\\', "/");
        if rel == "main.rs" || rel.starts_with("cli/") {
            continue;
        }
        let mut parts: Vec<String> = rel
            .trim_end_matches(".rs")
            .split('/')
            .map(String::from)
            .collect();
        if matches!(parts.last().map(String::as_str), Some("mod" | "lib")) {
            parts.pop();
        }
        out.insert(format!("src/{rel}"), Module { path: parts });
    }
    out
}

/// The text without comments, string and char literals (so that a path in a doc example or a
/// message is not an import).
fn code_only(src: &str) -> String {
    let b = src.as_bytes();
    let mut out = String::with_capacity(src.len());
    let mut i = 0;
    while i < b.len() {
        if b[i..].starts_with(b"//") {
            while i < b.len() && b[i] != b'\n' {
                i += 1;
            }
        } else if b[i..].starts_with(b"/*") {
            let end = src[i + 2..].find("*/").map_or(b.len(), |j| i + 4 + j);
            i = end;
        } else if b[i] == b'"' {
            i += 1;
            while i < b.len() && b[i] != b'"' {
                i += if b[i] == b'\\' { 2 } else { 1 };
            }
            i += 1;
            out.push_str("\"\"");
        } else if b[i] == b'\'' && i + 2 < b.len() && (b[i + 2] == b'\'' || b[i + 1] == b'\\') {
            // A char literal ('x', '\n'); lifetimes ('a) are left alone.
            let end = src[i + 1..].find('\'').map_or(b.len(), |j| i + 2 + j);
            i = end;
        } else {
            let c = src[i..].chars().next().unwrap();
            out.push(c);
            i += c.len_utf8();
        }
    }
    out
}

/// Splits `code` into statements' tails: for each `;`-ended piece, the text before its last
/// statement, and that statement (a `use` declaration's own braces do not start one).
fn statements(code: &str) -> impl Iterator<Item = (&str, &str)> {
    let is_ident = |c: char| c.is_ascii_alphanumeric() || c == '_';
    code.split_inclusive(';').map(move |piece| {
        let use_start = piece.match_indices("use ").find_map(|(p, _)| {
            if piece[..p].chars().next_back().is_some_and(is_ident) {
                return None;
            }
            let boundary = piece[..p].rfind(['{', '}', ']']).map_or(0, |i| i + 1);
            let between = piece[boundary..p].trim();
            let re_export =
                between == "pub" || (between.starts_with("pub(") && between.ends_with(')'));
            (between.is_empty() || re_export).then_some(boundary)
        });
        let start = use_start.unwrap_or_else(|| piece.rfind(['{', '}', ']']).map_or(0, |i| i + 1));
        (&piece[..start], &piece[start..])
    })
}

/// Whether a statement is a `use` declaration, and whether it is a re-export (`pub use`,
/// `pub(crate) use`).
fn use_decl(stmt: &str) -> Option<(bool, &str)> {
    let t = stmt.trim_start();
    if let Some(rest) = t.strip_prefix("use ") {
        return Some((false, rest));
    }
    let rest = t.strip_prefix("pub")?;
    let rest = match rest.strip_prefix('(') {
        Some(r) => &r[r.find(')')? + 1..],
        None => rest,
    };
    Some((true, rest.trim_start().strip_prefix("use ")?))
}

/// The `use` declarations of `code` that are imports (not `pub` re-exports), each expanded
/// into its full paths (`a::{b, c::d}` → `a::b`, `a::c::d`).
fn use_paths(code: &str) -> Vec<Vec<String>> {
    let mut paths = Vec::new();
    for (_, stmt) in statements(code) {
        let Some((false, tree)) = use_decl(stmt) else {
            continue;
        };
        let tree = tree.trim_end_matches(';').replace(" as ", "@as@");
        expand(
            &tree.replace(char::is_whitespace, ""),
            &mut Vec::new(),
            &mut paths,
        );
    }
    paths
}

fn expand(tree: &str, prefix: &mut Vec<String>, out: &mut Vec<Vec<String>>) {
    if let Some(open) = tree.find('{') {
        let head: Vec<String> = tree[..open]
            .split("::")
            .filter(|s| !s.is_empty())
            .map(String::from)
            .collect();
        let inner = &tree[open + 1..tree.rfind('}').unwrap_or(tree.len())];
        let n = prefix.len();
        prefix.extend(head);
        let mut depth = 0;
        let mut start = 0;
        for (i, c) in inner.char_indices() {
            match c {
                '{' => depth += 1,
                '}' => depth -= 1,
                ',' if depth == 0 => {
                    expand(&inner[start..i], prefix, out);
                    start = i + 1;
                }
                _ => {}
            }
        }
        expand(&inner[start..], prefix, out);
        prefix.truncate(n);
    } else if !tree.is_empty() {
        let mut p = prefix.clone();
        let last = tree.split("@as@").next().unwrap_or(tree);
        p.extend(last.split("::").filter(|s| !s.is_empty()).map(String::from));
        out.push(p);
    }
}

/// Paths written in code that start at the crate or a parent module (`crate::a::b`,
/// `super::x`).
fn inline_paths(code: &str) -> Vec<Vec<String>> {
    // `use` declarations are read by `use_paths` (and re-exports are not imports).
    let code: String = statements(code)
        .map(|(before, stmt)| {
            if use_decl(stmt).is_some() {
                before.to_string()
            } else {
                format!("{before}{stmt}")
            }
        })
        .collect();
    let code = code.as_str();
    let mut out = Vec::new();
    let is_ident = |c: char| c.is_ascii_alphanumeric() || c == '_';
    for start in ["crate::", "super::", "self::"] {
        let mut from = 0;
        while let Some(i) = code[from..].find(start) {
            let at = from + i;
            from = at + start.len();
            if code[..at]
                .chars()
                .next_back()
                .is_some_and(|c| is_ident(c) || c == ':')
            {
                continue;
            }
            let end = code[at..]
                .find(|c: char| !(is_ident(c) || c == ':'))
                .map_or(code.len(), |j| at + j);
            out.push(
                code[at..end]
                    .split("::")
                    .filter(|s| !s.is_empty())
                    .map(String::from)
                    .collect(),
            );
        }
    }
    out
}

/// The file a path written in module `m` leads to, if it names one inside the crate.
fn resolve(
    m: &Module,
    path: &[String],
    files: &BTreeMap<Vec<String>, String>,
    children: &BTreeSet<String>,
) -> Option<String> {
    let mut abs: Vec<String> = match path.first().map(String::as_str) {
        Some("crate") => Vec::new(),
        Some("self") => m.path.clone(),
        Some("super") => {
            // A file's `super` is its folder's module; a mod.rs's is the folder above.
            let mut base = m.path.clone();
            let ups = path.iter().take_while(|s| *s == "super").count();
            base.truncate(base.len().checked_sub(ups)?);
            base.extend(path[ups..].iter().cloned());
            return deepest(&base, files);
        }
        Some(first) if children.contains(first) => m.path.clone(),
        _ => return None,
    };
    let skip = usize::from(matches!(path[0].as_str(), "crate" | "self"));
    abs.extend(path[skip..].iter().cloned());
    deepest(&abs, files)
}

fn deepest(abs: &[String], files: &BTreeMap<Vec<String>, String>) -> Option<String> {
    (0..=abs.len())
        .rev()
        .find_map(|k| files.get(&abs[..k].to_vec()).cloned())
}

/// The import graph: file → the files it imports.
fn graph() -> BTreeMap<String, BTreeSet<String>> {
    let mods = modules();
    let files: BTreeMap<Vec<String>, String> = mods
        .iter()
        .map(|(f, m)| (m.path.clone(), f.clone()))
        .collect();
    let mut g = BTreeMap::new();
    for (file, m) in &mods {
        let code = code_only(&std::fs::read_to_string(root().join(file)).unwrap());
        // Child modules declared here (`mod x;`): a bare `use x::...` reaches into them.
        let children: BTreeSet<String> = code
            .split(';')
            .filter_map(|s| {
                let w: Vec<&str> = s.split_whitespace().collect();
                let i = w.iter().position(|t| *t == "mod")?;
                (w.len() == i + 2).then(|| w[i + 1].to_string())
            })
            .collect();
        let mut to = BTreeSet::new();
        for p in use_paths(&code).into_iter().chain(inline_paths(&code)) {
            if let Some(target) = resolve(m, &p, &files, &children) {
                if &target != file {
                    to.insert(target);
                }
            }
        }
        g.insert(file.clone(), to);
    }
    g
}

/// The strongly connected components of more than one file (Tarjan).
fn circles(g: &BTreeMap<String, BTreeSet<String>>) -> Vec<BTreeSet<String>> {
    struct T<'a> {
        g: &'a BTreeMap<String, BTreeSet<String>>,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        on: BTreeSet<&'a str>,
        out: Vec<BTreeSet<String>>,
    }
    fn visit<'a>(t: &mut T<'a>, v: &'a str) {
        let i = t.index.len();
        t.index.insert(v, i);
        t.low.insert(v, i);
        t.stack.push(v);
        t.on.insert(v);
        for w in &t.g[v] {
            if !t.index.contains_key(w.as_str()) {
                visit(t, w);
                let lw = t.low[w.as_str()];
                let lv = t.low.get_mut(v).unwrap();
                *lv = (*lv).min(lw);
            } else if t.on.contains(w.as_str()) {
                let iw = t.index[w.as_str()];
                let lv = t.low.get_mut(v).unwrap();
                *lv = (*lv).min(iw);
            }
        }
        if t.low[v] == t.index[v] {
            let mut comp = BTreeSet::new();
            while let Some(w) = t.stack.pop() {
                t.on.remove(w);
                comp.insert(w.to_string());
                if w == v {
                    break;
                }
            }
            if comp.len() > 1 {
                t.out.push(comp);
            }
        }
    }
    let mut t = T {
        g,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on: BTreeSet::new(),
        out: Vec::new(),
    };
    for v in g.keys() {
        if !t.index.contains_key(v.as_str()) {
            visit(&mut t, v);
        }
    }
    t.out
}

#[test]
fn src_has_no_import_circles() {
    let g = graph();
    // The reader must see the imports it claims to: a few arrows that exist.
    for (from, to) in [
        ("src/segment/gpu.rs", "src/segment/color.rs"),
        ("src/maxflow/cuda/grid.rs", "src/cuda/launch/grid_pr.rs"),
        ("src/io/mask.rs", "src/io/nifti.rs"),
        ("src/io/nifti.rs", "src/io/mod.rs"),
    ] {
        assert!(
            g[from].contains(to),
            "{from} -> {to} not seen: {:?}",
            g[from]
        );
    }
    let found: Vec<String> = circles(&g)
        .iter()
        .map(|c| {
            let edges: Vec<String> = c
                .iter()
                .flat_map(|a| {
                    g[a].iter()
                        .filter(|b| c.contains(*b))
                        .map(move |b| format!("{a} -> {b}"))
                })
                .collect();
            edges.join(", ")
        })
        .collect();
    assert!(found.is_empty(), "import circles: {}", found.join("; "));
}

#[test]
fn the_reader_finds_a_circle_it_is_shown() {
    // Two modules that use each other, written as the library writes imports.
    let a = code_only("use super::b::{One, two as Two};\n// use crate::x::Y;\nfn f() { let s = \"crate::z::W\"; }");
    let b = code_only("pub(crate) fn two() { crate::m::a::f(); }\npub use super::a::Z;");
    assert_eq!(
        use_paths(&a),
        vec![vec!["super", "b", "One"], vec!["super", "b", "two"]]
    );
    assert!(
        inline_paths(&a).iter().all(|p| p[0] == "super"),
        "{:?}",
        inline_paths(&a)
    );
    assert!(use_paths(&b).is_empty(), "a re-export is not an import");
    assert_eq!(inline_paths(&b), vec![vec!["crate", "m", "a", "f"]]);
    let mut g = BTreeMap::new();
    g.insert("a".to_string(), BTreeSet::from(["b".to_string()]));
    g.insert(
        "b".to_string(),
        BTreeSet::from(["a".to_string(), "c".to_string()]),
    );
    g.insert("c".to_string(), BTreeSet::new());
    assert_eq!(
        circles(&g),
        vec![BTreeSet::from(["a".to_string(), "b".to_string()])]
    );
}
