//! [`run_otlp_faults`]: the chain's request latency when the OTLP collector is down or
//! black-holing, against the same exporter with a healthy collector, measured in the same run,
//! the arms alternated in short rounds.
//!
//! The reference is the healthy collector, not a provider without exporter: a fault must not
//! slow requests, and what exporting costs at all (building every span's data, the processor's
//! thread, encoding) is paid with a healthy collector too. A provider without exporter is still
//! run, and the slow-down against it reported, as that cost.

mod arm;
mod collectors;
mod exporter;
mod latency;
mod mode;
mod options;
mod report;
mod round;
mod run;

pub use mode::Mode;
pub use options::OtlpOptions;
pub use report::{ArmStats, OtlpReport, RoundStats, Statistic};
pub use run::run_otlp_faults;
