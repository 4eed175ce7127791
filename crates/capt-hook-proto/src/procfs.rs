//! What `/proc` says about a process (Linux): its parent, start time, command line, CPU time and
//! memory.
//! One reader, so the host's worker records, the engine's `claude` ancestor walk and the bench
//! agree on the format. Everything is `None` where `/proc` is absent (macOS).

/// The fields of `/proc/<pid>/stat` we use.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stat {
    /// The parent's pid.
    pub ppid: u32,
    /// Start time in clock ticks since boot: with the pid, identifies a process across reuse.
    pub start_ticks: u64,
    /// True for a zombie (exited, not yet reaped).
    pub zombie: bool,
    /// The process group.
    pub pgid: u32,
    /// CPU time used, user plus system, in clock ticks.
    pub cpu_ticks: u64,
    /// Resident memory in pages.
    pub rss_pages: u64,
    /// The command name (`comm`, at most 15 bytes).
    pub comm: String,
}

/// Parses `/proc/<pid>/stat`.
pub fn stat(pid: u32) -> Option<Stat> {
    parse_stat(&std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?)
}

fn parse_stat(text: &str) -> Option<Stat> {
    // The command name is parenthesised and may hold spaces and ')': fields resume after the
    // last ')', starting with the state (field 3).
    let close = text.rfind(')')?;
    let comm = text[..close].split_once('(').map(|(_, c)| c)?.to_owned();
    let fields: Vec<&str> = text[close + 1..].split_whitespace().collect();
    let num = |i: usize| fields.get(i)?.parse::<u64>().ok();
    Some(Stat {
        zombie: *fields.first()? == "Z",
        ppid: fields.get(1)?.parse().ok()?,
        pgid: fields.get(2)?.parse().ok()?,
        cpu_ticks: num(11)? + num(12)?,
        start_ticks: num(19)?,
        rss_pages: num(21)?,
        comm,
    })
}

/// The process's argv from `/proc/<pid>/cmdline` (lossy UTF-8, empty arguments dropped).
pub fn cmdline(pid: u32) -> Option<Vec<String>> {
    let raw = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
    Some(
        raw.split(|b| *b == 0)
            .filter(|s| !s.is_empty())
            .map(|s| String::from_utf8_lossy(s).into_owned())
            .collect(),
    )
}

/// Every pid in `/proc`.
pub fn pids() -> Option<Vec<u32>> {
    Some(
        std::fs::read_dir("/proc")
            .ok()?
            .filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
            .collect(),
    )
}

/// The process's working directory.
pub fn cwd(pid: u32) -> Option<std::path::PathBuf> {
    std::fs::read_link(format!("/proc/{pid}/cwd")).ok()
}

/// When the system booted, in Unix seconds (`btime` of `/proc/stat`): with a start time in
/// ticks, when a process started.
pub fn boot_time_unix() -> Option<u64> {
    std::fs::read_to_string("/proc/stat")
        .ok()?
        .lines()
        .find_map(|l| l.strip_prefix("btime "))?
        .trim()
        .parse()
        .ok()
}

/// Resident memory in KiB (`VmRSS` of `/proc/<pid>/status`).
pub fn rss_kib(pid: u32) -> Option<u64> {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()?
        .lines()
        .find(|l| l.starts_with("VmRSS:"))?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_survives_odd_command_names() {
        let line = "42 (a) b (c)) S 7 40 42 0 -1 4194560 1 0 0 0 250 30 0 0 20 0 1 0 123456 \
                    9000 77 18446744073709551615";
        assert_eq!(
            parse_stat(line),
            Some(Stat {
                ppid: 7,
                start_ticks: 123456,
                zombie: false,
                pgid: 40,
                cpu_ticks: 280,
                rss_pages: 77,
                comm: "a) b (c)".into(),
            })
        );
        assert_eq!(parse_stat("garbage"), None);
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn reads_this_process() {
        let me = std::process::id();
        assert!(stat(me).is_some_and(|s| s.ppid > 0 && !s.zombie));
        assert!(cmdline(me).is_some_and(|a| !a.is_empty()));
        assert!(rss_kib(me).is_some_and(|k| k > 0));
        assert!(stat(me).is_some_and(|s| s.rss_pages > 0 && !s.comm.is_empty()));
        assert!(pids().is_some_and(|p| p.contains(&me)));
        assert!(boot_time_unix().is_some_and(|b| b > 1_000_000_000));
        assert_eq!(cwd(me), std::env::current_dir().ok());
    }
}
