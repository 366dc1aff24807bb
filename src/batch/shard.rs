//! Cluster sharding: shard `i` of `n` takes jobs `i, i + n, i + 2n, ...` in manifest order, so
//! the shards partition the jobs exactly (every job in one shard) and stay balanced when jobs are
//! listed in groups of similar size.
//!
//! `auto` reads the array index and count that Slurm job arrays and Kubernetes Indexed Jobs set.
//!
//! ```
//! use segcut::batch::Shard;
//! let s: Shard = "1/3".parse().unwrap();
//! let picked: Vec<usize> = (0..8).filter(|&j| s.contains(j)).collect();
//! assert_eq!(picked, [1, 4, 7]);
//! assert!("3/3".parse::<Shard>().is_err());
//! ```

use std::str::FromStr;

use crate::{Error, Result};

/// Shard `index` of `count` (0-based).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shard {
    /// This shard, `0..count`.
    pub index: usize,
    /// How many shards there are.
    pub count: usize,
}

impl Default for Shard {
    /// The whole batch: shard 0 of 1.
    fn default() -> Self {
        Shard { index: 0, count: 1 }
    }
}

fn shard_error(msg: String) -> Error {
    Error::Input {
        file: "shard".into(),
        msg,
    }
}

impl FromStr for Shard {
    type Err = Error;
    /// `i/n` with `0 <= i < n`.
    fn from_str(s: &str) -> Result<Self> {
        let (i, n) = s
            .split_once('/')
            .ok_or_else(|| shard_error(format!("'{s}' is not I/N (e.g. 0/4) or auto")))?;
        let num = |t: &str| {
            t.trim()
                .parse::<usize>()
                .map_err(|_| shard_error(format!("'{t}' in '{s}' is not a whole number")))
        };
        Shard::new(num(i)?, num(n)?)
    }
}

impl Shard {
    /// Shard `index` of `count`; an error unless `index < count`.
    pub fn new(index: usize, count: usize) -> Result<Self> {
        if count == 0 || index >= count {
            return Err(shard_error(format!(
                "shard {index}/{count}: the index must be below the count (shards are 0-based)"
            )));
        }
        Ok(Shard { index, count })
    }

    /// Whether the job at position `job` (0-based, manifest order) is this shard's.
    pub fn contains(&self, job: usize) -> bool {
        job % self.count == self.index
    }

    /// The shard the environment names: a Slurm job array (`SLURM_ARRAY_TASK_ID` with
    /// `SLURM_ARRAY_TASK_MIN`/`_MAX`, else `SLURM_ARRAY_TASK_COUNT` with ids from 0), or a
    /// Kubernetes Indexed Job (`JOB_COMPLETION_INDEX` with `SEGCUT_SHARD_COUNT`, else the
    /// Job's completion count in `JOB_COMPLETIONS`, which the manifest in `docs/batch.md` sets).
    /// `env` looks a variable up (`std::env::var` in the binary, a map in tests).
    ///
    /// ```
    /// use segcut::batch::Shard;
    /// let env = |k: &str| match k {
    ///     "SLURM_ARRAY_TASK_ID" => Some("5".to_string()),
    ///     "SLURM_ARRAY_TASK_MIN" => Some("1".to_string()),
    ///     "SLURM_ARRAY_TASK_MAX" => Some("8".to_string()),
    ///     _ => None,
    /// };
    /// assert_eq!(Shard::from_env(env).unwrap(), Shard { index: 4, count: 8 });
    /// ```
    pub fn from_env(env: impl Fn(&str) -> Option<String>) -> Result<Self> {
        let num =
            |k: &str| -> Result<Option<usize>> {
                match env(k) {
                    None => Ok(None),
                    Some(v) if v.trim().is_empty() => Ok(None),
                    Some(v) => v.trim().parse().map(Some).map_err(|_| {
                        shard_error(format!("shard auto: {k}={v} is not a whole number"))
                    }),
                }
            };
        if let Some(id) = num("SLURM_ARRAY_TASK_ID")? {
            let (min, max) = (num("SLURM_ARRAY_TASK_MIN")?, num("SLURM_ARRAY_TASK_MAX")?);
            if let (Some(min), Some(max)) = (min, max) {
                if id < min || max < min {
                    return Err(shard_error(format!(
                        "shard auto: SLURM_ARRAY_TASK_ID={id} is outside \
                         SLURM_ARRAY_TASK_MIN..=MAX ({min}..={max})"
                    )));
                }
                // A stepped array (--array=0-15:2) has fewer tasks than MAX-MIN+1 and would
                // leave shards unrun: Slurm's task count says how many there are.
                let count = num("SLURM_ARRAY_TASK_COUNT")?.unwrap_or(max - min + 1);
                if count != max - min + 1 {
                    return Err(shard_error(format!(
                        "shard auto: the Slurm array {min}-{max} has {count} tasks, not \
                         {}; use a contiguous array (--array={min}-{max}) or name the shard as I/N",
                        max - min + 1
                    )));
                }
                return Shard::new(id - min, count);
            }
            let count = num("SLURM_ARRAY_TASK_COUNT")?.ok_or_else(|| {
                shard_error(
                    "shard auto: SLURM_ARRAY_TASK_ID is set but neither \
                             SLURM_ARRAY_TASK_COUNT nor SLURM_ARRAY_TASK_MIN/MAX are"
                        .into(),
                )
            })?;
            return Shard::new(id, count);
        }
        if let Some(index) = num("JOB_COMPLETION_INDEX")? {
            let count = match num("SEGCUT_SHARD_COUNT")? {
                Some(c) => c,
                None => num("JOB_COMPLETIONS")?.ok_or_else(|| {
                    shard_error(
                        "shard auto: JOB_COMPLETION_INDEX is set but not the shard count: \
                         set SEGCUT_SHARD_COUNT (or JOB_COMPLETIONS) to the Job's completions"
                            .into(),
                    )
                })?,
            };
            return Shard::new(index, count);
        }
        Err(shard_error(
            "shard auto: no Slurm array (SLURM_ARRAY_TASK_ID) or Kubernetes Indexed Job \
             (JOB_COMPLETION_INDEX) in the environment"
                .into(),
        ))
    }

    /// `i-of-n`, for per-shard file names (`summary.2-of-8.csv`); empty for the whole batch.
    pub fn suffix(&self) -> String {
        if self.count == 1 {
            String::new()
        } else {
            format!(".{}-of-{}", self.index, self.count)
        }
    }
}
