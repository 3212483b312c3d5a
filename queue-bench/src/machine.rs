//! The hardware a run happened on, read from the operating system.

/// Cores, memory and CPU model.
#[derive(Clone, Debug, serde::Serialize)]
pub(crate) struct Machine {
    pub(crate) cores: usize,
    pub(crate) memory_gib: Option<f64>,
    pub(crate) cpu_model: Option<String>,
    pub(crate) os: String,
    /// `/proc/loadavg` when the run started: other work on the machine skews the numbers.
    pub(crate) load_at_start: Option<String>,
}

impl Machine {
    pub(crate) fn detect() -> Self {
        let cores = std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1);
        let memory_gib = std::fs::read_to_string("/proc/meminfo").ok().and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("MemTotal:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|kb| kb.parse::<f64>().ok())
                .map(|kb| kb / (1024.0 * 1024.0))
        });
        let cpu_model = std::fs::read_to_string("/proc/cpuinfo").ok().and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split_once(':'))
                .map(|(_, v)| v.trim().to_owned())
        });
        Machine {
            cores,
            memory_gib,
            cpu_model,
            os: format!("{} {}", std::env::consts::OS, std::env::consts::ARCH),
            load_at_start: load_average(),
        }
    }

    pub(crate) fn describe(&self) -> String {
        format!(
            "{} cores ({}), {} memory, {}; load average at start {}, now {}",
            self.cores,
            self.cpu_model.as_deref().unwrap_or("unknown CPU"),
            self.memory_gib
                .map(|g| format!("{g:.1} GiB"))
                .unwrap_or_else(|| "unknown".into()),
            self.os,
            self.load_at_start.as_deref().unwrap_or("unknown"),
            load_average().as_deref().unwrap_or("unknown")
        )
    }
}

/// The 1, 5 and 15 minute load averages.
pub(crate) fn load_average() -> Option<String> {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
}
