//! Untrusted text (file names, archive member names, tokens of a file) made safe to print: a
//! file name or a line holding terminal escape sequences must not reach the user's terminal raw.

/// `s` with control characters (C0, DEL, C1) and the Unicode direction overrides written as
/// `\u{..}` escapes (and `\` as `\\`, so that the escaping is unambiguous); everything else as it
/// is.
///
/// ```
/// use segcut::io::escape_text;
/// assert_eq!(escape_text("a\u{1b}[31mred"), "a\\u{1b}[31mred");
/// assert_eq!(escape_text("dir/naïve.max"), "dir/naïve.max");
/// assert_eq!(escape_text("x\u{202e}y"), "x\\u{202e}y");
/// ```
pub fn escape_text(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        let bidi = matches!(c, '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}');
        if c == '\\' {
            out.push_str("\\\\");
        } else if c.is_control() || bidi {
            out.push_str(&format!("\\u{{{:x}}}", c as u32));
        } else {
            out.push(c);
        }
    }
    out
}
