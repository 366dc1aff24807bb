//! One description of every segmentation and stereo option: its name, value type, range,
//! default and help. The front ends are made from it: the command line's flags (`src/cli`), the
//! batch manifest's columns ([`crate::batch::manifest`]), the Python keyword arguments and the
//! keys of `eval --cv --grid`. Adding an option is one line in [`SEGMENT`] or [`STEREO`] and
//! one arm where [`Values`] are applied (`segment.rs`, `stereo.rs` here); no front end changes.
//!
//! Values arrive as text from every front end (a flag's argument, a CSV cell, a JSON value, a
//! Python object's text) and are parsed and range-checked here, once. What a user did not give
//! stays absent ("not given" is never "equal to the default"), so a value that equals the
//! default is honoured like any other and derived defaults (λ with a probability map, `auto`'s
//! GPU threshold in a batch) apply only where nothing was given.
//!
//! ```
//! use segcut::options::Values;
//! let mut v = Values::segment();
//! v.set("lambda", "50").unwrap();
//! v.set("prior_contrast", "2").unwrap(); // snake_case (manifest, Python) or kebab-case
//! assert!(v.set("lambda", "nan").unwrap_err().to_string().contains("lambda"));
//! let opts = v.segment_options(segcut::segment::SegmentOptions::default()).unwrap();
//! assert_eq!(opts.lambda, 50.0);
//! assert_eq!(opts.prior.contrast, 2.0);
//! ```

mod segment;
mod stereo;

pub use segment::{color_space_name, model_name, parse_color, SEGMENT};
pub use stereo::{parse_smoothness, stereo_base, STEREO};

use std::collections::BTreeMap;
use std::fmt;

/// What values an option takes, and its range.
#[derive(Clone, Copy, Debug)]
pub enum Kind {
    /// A finite number in a range.
    Float(Range),
    /// A whole number in `[min, max]`.
    Int {
        /// Smallest value.
        min: i64,
        /// Largest value.
        max: i64,
    },
    /// `true` or `false` (also `1`/`0`, `yes`/`no`); the command line wants the value.
    Bool,
    /// A switch: on the command line its presence means `true` (`--flag=false` also works);
    /// elsewhere a boolean value.
    Flag,
    /// One of these words.
    Choice(&'static [&'static str]),
    /// Text checked by a function (solver names, colours, `linear:T`): `what` describes it.
    Text {
        /// Checks a value; the error says what is wrong.
        check: fn(&str) -> Result<(), String>,
        /// What a value looks like, for messages.
        what: &'static str,
    },
}

/// The range of a [`Kind::Float`]: `min` and `max` with whether each end is included.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Range {
    /// Lower end.
    pub min: f64,
    /// Whether `min` itself is allowed.
    pub min_in: bool,
    /// Upper end (`f64::INFINITY`: none; the value must still be finite).
    pub max: f64,
    /// Whether `max` itself is allowed.
    pub max_in: bool,
}

impl Range {
    /// Finite and ≥ 0.
    pub const NON_NEGATIVE: Range = Range {
        min: 0.0,
        min_in: true,
        max: f64::INFINITY,
        max_in: false,
    };
    /// Finite and > 0.
    pub const POSITIVE: Range = Range {
        min: 0.0,
        min_in: false,
        max: f64::INFINITY,
        max_in: false,
    };
    /// In `[0, 1]`.
    pub const UNIT: Range = Range {
        min: 0.0,
        min_in: true,
        max: 1.0,
        max_in: true,
    };
    /// In `[0, 1)`.
    pub const UNIT_OPEN: Range = Range {
        min: 0.0,
        min_in: true,
        max: 1.0,
        max_in: false,
    };

    fn contains(&self, x: f64) -> bool {
        x.is_finite()
            && (x > self.min || (self.min_in && x == self.min))
            && (x < self.max || (self.max_in && x == self.max))
    }
}

impl fmt::Display for Range {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.max.is_finite(), self.min_in) {
            (false, true) => write!(f, "a finite number ≥ {}", self.min),
            (false, false) => write!(f, "a finite number > {}", self.min),
            (true, _) => write!(
                f,
                "a number in {}{}, {}{}",
                if self.min_in { '[' } else { '(' },
                self.min,
                self.max,
                if self.max_in { ']' } else { ')' }
            ),
        }
    }
}

/// Where an option's default comes from.
#[derive(Clone, Copy)]
pub enum DefaultValue {
    /// The library's default value, as text (read from `SegmentOptions::default()` and the
    /// like, so it is written once).
    Of(fn() -> String),
    /// A default decided from the input, in words.
    Note(&'static str),
}

impl DefaultValue {
    /// The default as the help shows it.
    pub fn text(&self) -> String {
        match self {
            DefaultValue::Of(f) => f(),
            DefaultValue::Note(s) => s.to_string(),
        }
    }
}

impl fmt::Debug for DefaultValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.text())
    }
}

/// One option.
#[derive(Clone, Copy, Debug)]
pub struct Spec {
    /// The command line's long name (kebab-case); manifest columns and Python keywords are it in
    /// snake_case ([`Spec::snake`]).
    pub name: &'static str,
    /// A one-letter command-line alias, if any.
    pub short: Option<char>,
    /// What the value is called in the help (`PIXELS`, `GAMMA`, ...).
    pub value_name: &'static str,
    /// A valid value other than the default (the tests walk the table with it; the docs show
    /// it).
    pub example: &'static str,
    /// Value type and range.
    pub kind: Kind,
    /// The default.
    pub default: DefaultValue,
    /// One or two sentences for the help.
    pub help: &'static str,
    /// Only for the colour models (refused with a probability map as the data term).
    pub colour_models_only: bool,
}

/// A parsed option value.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    /// A [`Kind::Float`].
    Float(f64),
    /// A [`Kind::Int`].
    Int(i64),
    /// A [`Kind::Bool`] or [`Kind::Flag`].
    Bool(bool),
    /// A [`Kind::Choice`] or [`Kind::Text`], as given (trimmed).
    Text(String),
}

impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Float(x) => write!(f, "{x}"),
            Value::Int(x) => write!(f, "{x}"),
            Value::Bool(x) => write!(f, "{x}"),
            Value::Text(x) => write!(f, "{x}"),
        }
    }
}

/// A bad option name or value. The message names the option (by the name it was given as) and
/// the value; front ends add where it came from (a flag, a manifest line, a keyword).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{option}: {msg}")]
pub struct OptionError {
    /// The option as named by the caller.
    pub option: String,
    /// What is wrong.
    pub msg: String,
}

impl From<OptionError> for crate::Error {
    fn from(e: OptionError) -> Self {
        crate::Error::Input {
            file: "options".into(),
            msg: e.to_string(),
        }
    }
}

impl Spec {
    /// The name in snake_case: manifest column and Python keyword.
    pub fn snake(&self) -> String {
        self.name.replace('-', "_")
    }

    /// The help text with the default.
    pub fn help_with_default(&self) -> String {
        format!("{} [default: {}]", self.help, self.default.text())
    }

    /// Parses and checks one value given as text.
    pub fn parse(&self, text: &str) -> Result<Value, OptionError> {
        let t = text.trim();
        let err = |msg: String| OptionError {
            option: self.name.to_string(),
            msg,
        };
        match self.kind {
            Kind::Float(range) => {
                let x: f64 = t
                    .parse()
                    .map_err(|_| err(format!("'{t}' is not a number ({range})")))?;
                if !range.contains(x) {
                    return Err(err(format!("must be {range}, got {t}")));
                }
                Ok(Value::Float(x))
            }
            Kind::Int { min, max } => {
                let range = if max == i64::MAX {
                    format!("a whole number ≥ {min}")
                } else {
                    format!("a whole number in [{min}, {max}]")
                };
                let x: i64 = t
                    .parse()
                    .map_err(|_| err(format!("'{t}' is not {range}")))?;
                if !(min..=max).contains(&x) {
                    return Err(err(format!("must be {range}, got {t}")));
                }
                Ok(Value::Int(x))
            }
            Kind::Bool | Kind::Flag => match t.to_ascii_lowercase().as_str() {
                "true" | "1" | "yes" | "on" => Ok(Value::Bool(true)),
                "false" | "0" | "no" | "off" => Ok(Value::Bool(false)),
                _ => Err(err(format!("'{t}' is not true or false"))),
            },
            Kind::Choice(list) => {
                if list.contains(&t) {
                    Ok(Value::Text(t.to_string()))
                } else {
                    Err(err(format!("'{t}' is not one of {}", list.join(", "))))
                }
            }
            Kind::Text { check, what } => {
                check(t).map_err(|m| err(format!("'{t}': {m} (expected {what})")))?;
                Ok(Value::Text(t.to_string()))
            }
        }
    }
}

/// Which options a [`Values`] holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Table {
    /// [`SEGMENT`].
    Segment,
    /// [`STEREO`].
    Stereo,
}

impl Table {
    /// The options.
    pub fn specs(self) -> &'static [Spec] {
        match self {
            Table::Segment => SEGMENT,
            Table::Stereo => STEREO,
        }
    }

    /// The option called `name` (kebab- or snake-case).
    pub fn find(self, name: &str) -> Option<&'static Spec> {
        let kebab = name.trim().replace('_', "-");
        self.specs().iter().find(|s| s.name == kebab)
    }
}

/// The options given, by name; what is absent was not given.
#[derive(Clone, Debug, PartialEq)]
pub struct Values {
    table: Table,
    given: BTreeMap<&'static str, Value>,
}

impl Values {
    /// No segmentation option given.
    pub fn segment() -> Self {
        Values::new(Table::Segment)
    }

    /// No stereo option given.
    pub fn stereo() -> Self {
        Values::new(Table::Stereo)
    }

    /// No option of `table` given.
    pub fn new(table: Table) -> Self {
        Values {
            table,
            given: BTreeMap::new(),
        }
    }

    /// The table.
    pub fn table(&self) -> Table {
        self.table
    }

    /// Sets option `name` (kebab- or snake-case) from text, parsed and checked.
    pub fn set(&mut self, name: &str, text: &str) -> Result<(), OptionError> {
        let spec = self.table.find(name).ok_or_else(|| OptionError {
            option: name.to_string(),
            msg: format!(
                "unknown {} option (options: {})",
                match self.table {
                    Table::Segment => "segmentation",
                    Table::Stereo => "stereo",
                },
                self.table
                    .specs()
                    .iter()
                    .map(|s| s.snake())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        })?;
        let v = spec.parse(text).map_err(|e| OptionError {
            option: name.to_string(),
            ..e
        })?;
        self.given.insert(spec.name, v);
        Ok(())
    }

    /// The value of `name` if it was given.
    pub fn get(&self, name: &str) -> Option<&Value> {
        let spec = self.table.find(name)?;
        self.given.get(spec.name)
    }

    /// Whether `name` was given.
    pub fn is_given(&self, name: &str) -> bool {
        self.get(name).is_some()
    }

    /// The names (kebab-case) of the options given.
    pub fn names(&self) -> impl Iterator<Item = &'static str> + '_ {
        self.given.keys().copied()
    }

    /// These values with `over`'s on top (a manifest row over the batch's flags). Both must be
    /// of the same table.
    pub fn with(&self, over: &Values) -> Values {
        let mut out = self.clone();
        for (k, v) in &over.given {
            out.given.insert(k, v.clone());
        }
        out
    }

    fn float(&self, name: &str) -> Option<f64> {
        match self.get(name) {
            Some(Value::Float(x)) => Some(*x),
            _ => None,
        }
    }

    fn int(&self, name: &str) -> Option<i64> {
        match self.get(name) {
            Some(Value::Int(x)) => Some(*x),
            _ => None,
        }
    }

    fn boolean(&self, name: &str) -> Option<bool> {
        match self.get(name) {
            Some(Value::Bool(x)) => Some(*x),
            _ => None,
        }
    }

    fn text(&self, name: &str) -> Option<&str> {
        match self.get(name) {
            Some(Value::Text(x)) => Some(x),
            _ => None,
        }
    }

    fn error(&self, name: &str, msg: impl Into<String>) -> OptionError {
        OptionError {
            option: name.to_string(),
            msg: msg.into(),
        }
    }
}

/// The options of `table` as a Markdown table (name, manifest / Python name, default, help):
/// what `docs/options.md` holds, checked by a test.
pub fn markdown(table: Table) -> String {
    let mut s = String::from(
        "| flag | manifest column / Python keyword | values | default | meaning |\n|---|---|---|---|---|\n",
    );
    for o in table.specs() {
        let values = match o.kind {
            Kind::Float(r) => r.to_string(),
            Kind::Int { min, max } if max == i64::MAX => format!("whole number ≥ {min}"),
            Kind::Int { min, max } => format!("whole number in [{min}, {max}]"),
            Kind::Bool | Kind::Flag => "true / false".into(),
            Kind::Choice(list) => list.join(", "),
            Kind::Text { what, .. } => what.into(),
        };
        s.push_str(&format!(
            "| `--{}` | `{}` | {} | {} | {} |\n",
            o.name,
            o.snake(),
            values,
            o.default.text().replace('|', "\\|"),
            o.help.replace('|', "\\|")
        ));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_refuse_nan_infinity_and_out_of_range() {
        let mut v = Values::segment();
        for (name, bad) in [
            ("lambda", "nan"),
            ("lambda", "-1"),
            ("lambda", "inf"),
            ("sigma", "0"),
            ("seed-weight", "1.5"),
            ("outlier", "1"),
            ("iterations", "0"),
            ("iterations", "2.5"),
            ("components", "1000000000"),
            ("connectivity", "5"),
            ("solver", "quantum"),
            ("fg-color", "1,2"),
            ("drop-unseeded", "maybe"),
        ] {
            let e = v.set(name, bad).unwrap_err();
            assert_eq!(e.option, name, "{e}");
        }
        assert!(v.names().next().is_none(), "nothing bad was kept");
        let mut s = Values::stereo();
        for (name, bad) in [
            ("lambda", "nan"),
            ("cost-scale", "0"),
            ("truncation", "nan"),
            ("disparities", "0"),
            ("smoothness", "linear:0"),
        ] {
            assert!(s.set(name, bad).is_err(), "{name}={bad}");
        }
    }

    #[test]
    fn every_option_has_help_and_a_default() {
        for t in [Table::Segment, Table::Stereo] {
            let mut seen = std::collections::HashSet::new();
            for s in t.specs() {
                assert!(seen.insert(s.name), "{} twice", s.name);
                assert!(
                    !s.help.is_empty() && !s.default.text().is_empty(),
                    "{}",
                    s.name
                );
                assert!(s.name.chars().all(|c| c.is_ascii_lowercase() || c == '-'));
            }
        }
    }
}
