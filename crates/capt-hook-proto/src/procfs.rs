//! What `/proc` says about a process (Linux): its parent, start time, command line and memory.
//! One reader, so the host's worker records, the engine's `claude` ancestor walk and the bench
//! agree on the format. Everything is `None` where `/proc` is absent (macOS).

/// The fields of `/proc/<pid>/stat` we use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stat {
    /// The parent's pid.
    pub ppid: u32,
    /// Start time in clock ticks since boot: with the pid, identifies a process across reuse.
    pub start_ticks: u64,
    /// True for a zombie (exited, not yet reaped).
    pub zombie: bool,
}

/// Parses `/proc/<pid>/stat`.
pub fn stat(pid: u32) -> Option<Stat> {
    parse_stat(&std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?)
}

fn parse_stat(text: &str) -> Option<Stat> {
    // The command name is parenthesised and may hold spaces and ')': fields resume after the
    // last ')', starting with the state (field 3).
    let fields: Vec<&str> = text[text.rfind(')')? + 1..].split_whitespace().collect();
    Some(Stat {
        zombie: *fields.first()? == "Z",
        ppid: fields.get(1)?.parse().ok()?,
        start_ticks: fields.get(19)?.parse().ok()?,
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
        let line = "42 (a) b (c)) S 7 42 42 0 -1 4194560 1 0 0 0 0 0 0 0 20 0 1 0 123456 0 0";
        assert_eq!(
            parse_stat(line),
            Some(Stat {
                ppid: 7,
                start_ticks: 123456,
                zombie: false
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
    }
}
