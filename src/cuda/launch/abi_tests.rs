//! The contract between the Rust launchers and the CUDA sources, checked without a GPU: every
//! launcher's declared parameters against its kernel's `extern "C" __global__` signature (names,
//! order, types, constness), every kernel of a file against a launcher, and the shared header's
//! tables and struct against their Rust mirrors.

use super::csr_pr::CsrPr;
use super::grid_pr::GridPr;
use super::seg_energy::SegEnergy;
use super::seg_model::SegModel;
use super::seg_prior::SegPrior;
use super::stereo::StereoKernels;
use super::{KernelSignature, BLOCK};
use crate::cuda::{GridShape, COMMON_HEADER, KERNELS};
use crate::graph::Connectivity;

/// Every launcher struct: its kernel file and declared signatures.
const LAUNCHERS: &[(&str, &[KernelSignature])] = &[
    (GridPr::FILE, GridPr::SIGNATURES),
    (CsrPr::FILE, CsrPr::SIGNATURES),
    (SegEnergy::FILE, SegEnergy::SIGNATURES),
    (SegPrior::FILE, SegPrior::SIGNATURES),
    (SegModel::FILE, SegModel::SIGNATURES),
    (StereoKernels::FILE, StereoKernels::SIGNATURES),
];

/// The source with comments removed and `\`-continued lines joined.
fn strip(src: &str) -> String {
    let mut out = String::with_capacity(src.len());
    let mut rest = src;
    while !rest.is_empty() {
        if let Some(r) = rest.strip_prefix("//") {
            rest = r.find('\n').map_or("", |i| &r[i..]);
        } else if let Some(r) = rest.strip_prefix("/*") {
            rest = r.find("*/").map_or("", |i| &r[i + 2..]);
            out.push(' ');
        } else {
            let c = rest.chars().next().unwrap();
            out.push(c);
            rest = &rest[c.len_utf8()..];
        }
    }
    out.replace("\\\n", " ")
}

/// Expands the one-parameter function-like macros that a line of their own invokes
/// (`TILE_KERNELS(4)`), the way the kernel files generate per-degree kernels.
fn expand_macros(src: &str) -> String {
    let mut macros = Vec::new();
    let mut out = String::new();
    for line in src.lines() {
        let t = line.trim();
        if let Some(def) = t.strip_prefix("#define ") {
            if let Some((head, body)) = def.split_once(')') {
                if let Some((name, param)) = head.split_once('(') {
                    if !name.contains(' ') {
                        macros.push((name.to_string(), param.trim().to_string(), body.to_string()));
                        continue;
                    }
                }
            }
        }
        let call = macros.iter().find_map(|(name, param, body)| {
            let arg = t.strip_prefix(name.as_str())?.strip_prefix('(')?;
            let arg = arg.strip_suffix(')')?.trim();
            Some(substitute(body, param, arg))
        });
        out.push_str(call.as_deref().unwrap_or(line));
        out.push('\n');
    }
    out
}

/// `body` with `##param` and the identifier `param` replaced by `arg`.
fn substitute(body: &str, param: &str, arg: &str) -> String {
    let body = body.replace(&format!("##{param}"), arg);
    let mut out = String::new();
    let mut word = String::new();
    for c in body.chars().chain(std::iter::once(' ')) {
        if c.is_ascii_alphanumeric() || c == '_' {
            word.push(c);
            continue;
        }
        out.push_str(if word == param { arg } else { &word });
        word.clear();
        out.push(c);
    }
    out.pop();
    out
}

/// A parameter as `(name, type)`, the type normalised: `unsigned`, `const int*`, `Grid`, ...
type Param = (String, String);

/// Every `extern "C" __global__` function of a kernel file: its name and parameters.
fn kernels_of(src: &str) -> Vec<(String, Vec<Param>)> {
    let text = expand_macros(&strip(src));
    let mut found = Vec::new();
    let mut rest = text.as_str();
    while let Some(i) = rest.find("extern \"C\"") {
        rest = &rest[i + 10..];
        let open = rest.find('(').expect("a parameter list");
        let words: Vec<&str> = rest[..open].split_whitespace().collect();
        let (name, after) = if words.last() == Some(&"__launch_bounds__") {
            // Skip the bounds' own parentheses, then read the name and the real list.
            let close = rest[open..].find(')').unwrap() + open + 1;
            let open2 = rest[close..].find('(').unwrap() + close;
            let name = rest[close..open2].split_whitespace().last().unwrap();
            (name.to_string(), &rest[open2 + 1..])
        } else {
            (words.last().unwrap().to_string(), &rest[open + 1..])
        };
        if !words.contains(&"__global__") {
            rest = after;
            continue;
        }
        let close = after.find(')').expect("a closed parameter list");
        let params = after[..close]
            .split(',')
            .filter(|p| !p.trim().is_empty())
            .map(c_param)
            .collect();
        found.push((name, params));
        rest = &after[close..];
    }
    found
}

/// A C parameter declaration as `(name, normalised type)`.
fn c_param(decl: &str) -> Param {
    let spaced = decl.replace('*', " * ");
    let mut tokens: Vec<&str> = spaced.split_whitespace().collect();
    let name = tokens.pop().expect("a parameter name").to_string();
    let pointer = tokens.contains(&"*");
    let konst = tokens.contains(&"const");
    let base: Vec<&str> = tokens
        .iter()
        .copied()
        .filter(|t| *t != "*" && *t != "const")
        .collect();
    let base = match base.join(" ").as_str() {
        "i64" => "long long".to_string(),
        "u64" => "unsigned long long".to_string(),
        "unsigned int" => "unsigned".to_string(),
        other => other.to_string(),
    };
    // A by-value parameter's `const` is the kernel's own business, not the caller's.
    let ty = match (pointer, konst) {
        (true, true) => format!("const {base}*"),
        (true, false) => format!("{base}*"),
        (false, _) => base,
    };
    (name, ty)
}

/// The C type a launcher's Rust parameter type stands for.
fn rust_to_c(ty: &str) -> String {
    let t: String = ty.chars().filter(|c| !c.is_whitespace()).collect();
    let scalar = |s: &str| -> String {
        match s {
            "u8" => "unsigned char",
            "i32" => "int",
            "u32" => "unsigned",
            "i64" => "long long",
            "u64" => "unsigned long long",
            "f32" => "float",
            "f64" => "double",
            "GridShape" => "Grid",
            other => panic!("no C type for Rust type {other}"),
        }
        .to_string()
    };
    let inner = |rest: &str| {
        let elem = rest.trim_end_matches('>');
        scalar(elem.rsplit(',').next().unwrap())
    };
    if let Some(r) = t.strip_prefix("&mutCudaSlice<") {
        format!("{}*", inner(r))
    } else if let Some(r) = t.strip_prefix("&mutCudaViewMut<") {
        format!("{}*", inner(r))
    } else if let Some(r) = t.strip_prefix("Option<&CudaSlice<") {
        format!("const {}*", inner(r.trim_end_matches('>')))
    } else if let Some(r) = t.strip_prefix("&CudaSlice<") {
        format!("const {}*", inner(r))
    } else if let Some(r) = t.strip_prefix("&CudaView<") {
        format!("const {}*", inner(r))
    } else {
        scalar(&t)
    }
}

/// The names a declared kernel name stands for (per-degree kernels once per connectivity).
fn instances(name: &str) -> Vec<String> {
    if name.contains("{deg}") {
        [4, 8, 6, 26]
            .iter()
            .map(|d| name.replace("{deg}", &d.to_string()))
            .collect()
    } else {
        vec![name.to_string()]
    }
}

fn source_of(file: &str) -> &'static str {
    KERNELS
        .iter()
        .find(|(n, _)| *n == file)
        .unwrap_or_else(|| panic!("kernels/{file}.cu is not in KERNELS"))
        .1
}

#[test]
fn every_launcher_matches_its_kernels_signature() {
    for &(file, sigs) in LAUNCHERS {
        let kernels = kernels_of(source_of(file));
        for sig in sigs {
            for name in instances(sig.name) {
                let (_, params) = kernels
                    .iter()
                    .find(|(k, _)| *k == name)
                    .unwrap_or_else(|| panic!("kernels/{file}.cu has no kernel {name}"));
                let declared: Vec<Param> = sig
                    .params
                    .iter()
                    .map(|(n, t)| (n.to_string(), rust_to_c(t)))
                    .collect();
                assert_eq!(
                    &declared, params,
                    "kernels/{file}.cu {name}: the launcher's parameters (left) differ from \
                     the kernel's (right)"
                );
            }
        }
    }
}

#[test]
fn every_kernel_has_a_launcher() {
    for &(file, sigs) in LAUNCHERS {
        let declared: Vec<String> = sigs.iter().flat_map(|s| instances(s.name)).collect();
        for (name, _) in kernels_of(source_of(file)) {
            assert!(
                declared.contains(&name),
                "kernels/{file}.cu: kernel {name} has no launcher in src/cuda/launch/"
            );
        }
    }
    // And every kernel file has its launchers.
    for (file, _) in KERNELS {
        assert!(
            LAUNCHERS.iter().any(|(f, _)| f == file),
            "kernels/{file}.cu has no launcher struct"
        );
    }
}

#[test]
fn every_kernel_file_includes_the_shared_header() {
    for (file, src) in KERNELS {
        assert!(
            src.contains(&format!("#include \"{}\"", COMMON_HEADER.0)),
            "kernels/{file}.cu does not include {}",
            COMMON_HEADER.0
        );
        // The header's definitions live there only.
        for def in [
            "struct Grid {",
            "OFFSETS_2D[8][3] =",
            "typedef long long i64;",
        ] {
            assert!(!src.contains(def), "kernels/{file}.cu defines {def} again");
        }
    }
}

/// The integer rows of the `__constant__` table `name` in the header.
fn offset_table(name: &str) -> Vec<[i32; 3]> {
    let text = strip(COMMON_HEADER.1);
    let start = text
        .find(&format!("{name}["))
        .unwrap_or_else(|| panic!("{name} not in the header"));
    let body = &text[start..];
    let body = &body[body.find('=').unwrap() + 1..body.find(';').unwrap()];
    let numbers: Vec<i32> = body
        .split(|c: char| !(c.is_ascii_digit() || c == '-'))
        .filter(|t| !t.is_empty())
        .map(|t| t.parse().unwrap())
        .collect();
    assert_eq!(numbers.len() % 3, 0, "{name}: rows of three");
    numbers.chunks(3).map(|r| [r[0], r[1], r[2]]).collect()
}

#[test]
fn header_offsets_are_connectivitys() {
    let two = offset_table("OFFSETS_2D");
    let three = offset_table("OFFSETS_3D");
    assert_eq!(two.len(), 8);
    assert_eq!(three.len(), 26);
    for conn in [
        Connectivity::N4,
        Connectivity::N8,
        Connectivity::N6,
        Connectivity::N26,
    ] {
        let table = if conn.is_3d() { &three } else { &two };
        assert_eq!(
            &table[..conn.degree()],
            conn.offsets(),
            "{conn}: kernels/common.cuh's offsets differ from Connectivity::offsets"
        );
    }
}

#[test]
fn header_grid_struct_is_grid_shape() {
    let text = strip(COMMON_HEADER.1);
    let start = text
        .find("struct Grid {")
        .expect("struct Grid in the header");
    let body = &text[start + 13..];
    let body = &body[..body.find('}').unwrap()];
    let mut fields = Vec::new();
    for decl in body.split(';').filter(|d| !d.trim().is_empty()) {
        let decl = decl.trim();
        let names = decl
            .strip_prefix("unsigned ")
            .unwrap_or_else(|| panic!("struct Grid: field '{decl}' is not unsigned (u32)"));
        fields.extend(names.split(',').map(|f| f.trim().to_string()));
    }
    assert_eq!(fields, GridShape::FIELDS);
    // The Rust struct lays the fields out in that order.
    let s = GridShape {
        w: 1,
        h: 2,
        d: 3,
        n: 4,
        deg: 5,
        is3d: 6,
    };
    // SAFETY: GridShape is repr(C) of six u32.
    let words: [u32; 6] = unsafe { std::mem::transmute(s) };
    assert_eq!(words, [1, 2, 3, 4, 5, 6]);
}

#[test]
fn header_block_is_blocks() {
    let text = strip(COMMON_HEADER.1);
    let line = text
        .lines()
        .find_map(|l| l.trim().strip_prefix("#define BLOCK "))
        .expect("#define BLOCK in the header");
    assert_eq!(line.trim().parse::<u32>().unwrap(), BLOCK);
}

#[test]
fn prior_strip_sizes_are_the_launchers() {
    // The launcher sizes the grid of prior_strips by them; the kernel its shared tiles.
    let text = strip(source_of(SegPrior::FILE));
    let define = |name: &str| -> u32 {
        let prefix = format!("#define {name} ");
        text.lines()
            .find_map(|l| l.trim().strip_prefix(prefix.as_str()))
            .unwrap_or_else(|| panic!("#define {name} in seg_prior.cu"))
            .trim()
            .parse()
            .unwrap()
    };
    assert_eq!(define("STRIP"), super::seg_prior::STRIP);
    assert_eq!(define("STRIP_WARPS"), super::seg_prior::STRIP_WARPS);
}

#[test]
fn the_parser_reads_what_the_kernels_write() {
    // The parser itself must be able to see a mismatch: a macro-made kernel, a launch bound,
    // typedefs, by-value const, and a swapped pair.
    let src = "#define K(D) \\\n extern \"C\" __global__ void __launch_bounds__(256) f_n##D(const Grid g, const i64 *a /* x */, u64 *b) { }\nK(4)\n// extern \"C\" void fake();\nextern \"C\" __global__ void h(unsigned n, int *x) {}\n";
    let k = kernels_of(src);
    let p = |n: &str, t: &str| (n.to_string(), t.to_string());
    assert_eq!(
        k,
        vec![
            (
                "f_n4".to_string(),
                vec![
                    p("g", "Grid"),
                    p("a", "const long long*"),
                    p("b", "unsigned long long*")
                ]
            ),
            ("h".to_string(), vec![p("n", "unsigned"), p("x", "int*")]),
        ]
    );
    assert_eq!(rust_to_c("&mut CudaSlice < i64 >"), "long long*");
    assert_eq!(rust_to_c("& CudaSlice<u8>"), "const unsigned char*");
    assert_eq!(rust_to_c("&mut CudaViewMut<'_, u32>"), "unsigned*");
    assert_eq!(rust_to_c("GridShape"), "Grid");
    assert_eq!(rust_to_c("Option<&CudaSlice<f32>>"), "const float*");
    assert_ne!(
        rust_to_c("&CudaSlice<i32>"),
        rust_to_c("&mut CudaSlice<i32>")
    );
}

/// The device filter's histogram bound is the one the host checks before it launches.
#[test]
fn the_median_label_bound_is_the_hosts() {
    let (_, src) = KERNELS.iter().find(|(n, _)| *n == "stereo").unwrap();
    let line = format!(
        "#define MEDIAN_MAX_LABELS {}\n",
        crate::stereo::median::DEVICE_MAX_LABELS
    );
    assert!(src.contains(&line), "kernels/stereo.cu lacks {line:?}");
}
