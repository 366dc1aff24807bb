//! The segmentation and stereo flags, made from the library's table of options
//! (`segcut::options`): one flag per option, its help with the default, its value checked by the
//! library's parser. Nothing here names a single option.

use clap::builder::PossibleValuesParser;
use clap::{Arg, ArgAction, ArgMatches, Command};
use segcut::options::{Kind, Spec, Table, Values};

/// Adds one flag per option of `table` to `cmd`, except those in `skip` (flags a command keeps
/// for itself).
pub fn add_flags(mut cmd: Command, table: Table, skip: &[&str]) -> Command {
    for spec in table.specs().iter().filter(|s| !skip.contains(&s.name)) {
        cmd = cmd.arg(flag(spec));
    }
    cmd
}

fn flag(spec: &'static Spec) -> Arg {
    let mut a = Arg::new(spec.name)
        .long(spec.name)
        .value_name(spec.value_name)
        .help(spec.help_with_default())
        .action(ArgAction::Set);
    if let Some(c) = spec.short {
        a = a.short(c);
    }
    match spec.kind {
        // `--cpu-build` alone means true; `--cpu-build=false` is also taken. The `=` keeps a
        // following positional argument from being read as the value.
        Kind::Flag => {
            a = a
                .num_args(0..=1)
                .require_equals(true)
                .default_missing_value("true")
        }
        Kind::Choice(list) => a = a.value_parser(PossibleValuesParser::new(list)),
        _ => {}
    }
    if !matches!(spec.kind, Kind::Choice(_)) {
        a = a.value_parser(SpecParser(spec));
    }
    if allows_negative(spec) {
        a = a.allow_hyphen_values(true);
    }
    a
}

/// Checks a flag's value with the library's parser while clap reads the command line, so that
/// a bad value is reported as clap reports any other (with the usage).
#[derive(Clone)]
struct SpecParser(&'static Spec);

impl clap::builder::TypedValueParser for SpecParser {
    type Value = String;

    fn parse_ref(
        &self,
        cmd: &Command,
        _arg: Option<&Arg>,
        value: &std::ffi::OsStr,
    ) -> Result<String, clap::Error> {
        let bad = |msg: String| {
            clap::Error::raw(
                clap::error::ErrorKind::ValueValidation,
                format!("--{}: {msg}\n", self.0.name),
            )
            .with_cmd(cmd)
        };
        let text = value
            .to_str()
            .ok_or_else(|| bad("the value is not UTF-8".into()))?;
        self.0.parse(text).map_err(|e| bad(e.msg))?;
        Ok(text.to_string())
    }
}

fn allows_negative(spec: &Spec) -> bool {
    match spec.kind {
        Kind::Int { min, .. } => min < 0,
        Kind::Float(r) => r.min < 0.0,
        _ => false,
    }
}

/// The options given on the command line, parsed and checked by the library.
pub fn values(m: &ArgMatches, table: Table, skip: &[&str]) -> Result<Values, clap::Error> {
    let mut v = Values::new(table);
    for spec in table.specs().iter().filter(|s| !skip.contains(&s.name)) {
        if let Some(text) = m.get_one::<String>(spec.name) {
            v.set(spec.name, text).map_err(|e| {
                clap::Error::raw(
                    clap::error::ErrorKind::ValueValidation,
                    format!("--{}: {}\n", spec.name, e.msg),
                )
            })?;
        }
    }
    Ok(v)
}

/// Declares a clap-flattenable type holding the [`Values`] of a table.
macro_rules! option_args {
    ($(#[$doc:meta])* $name:ident, $table:expr, $skip:expr) => {
        $(#[$doc])*
        #[derive(Clone, Debug)]
        pub struct $name(pub Values);

        impl clap::FromArgMatches for $name {
            fn from_arg_matches(m: &ArgMatches) -> Result<Self, clap::Error> {
                values(m, $table, $skip).map($name)
            }
            fn update_from_arg_matches(&mut self, m: &ArgMatches) -> Result<(), clap::Error> {
                self.0 = self.0.with(&values(m, $table, $skip)?);
                Ok(())
            }
        }

        impl clap::Args for $name {
            fn augment_args(cmd: Command) -> Command {
                add_flags(cmd, $table, $skip)
            }
            fn augment_args_for_update(cmd: Command) -> Command {
                add_flags(cmd, $table, $skip)
            }
        }
    };
}

option_args!(
    /// Every segmentation option as a flag.
    SegmentFlags,
    Table::Segment,
    &[]
);
option_args!(
    /// Every stereo option as a flag.
    StereoFlags,
    Table::Stereo,
    &[]
);
option_args!(
    /// The stereo options but the disparity range, for commands whose inputs decide it.
    StereoEnergyFlags,
    Table::Stereo,
    &["disparities", "min-disparity", "max-disparity"]
);
