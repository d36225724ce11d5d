//! Which CPUs a supervised program's threads run on: read for one thread,
//! set for every thread of the process at once (each thread has its own
//! mask; threads created later inherit their creator's).

use std::path::Path;

use nix::sched::{CpuSet, sched_getaffinity, sched_setaffinity};
use nix::unistd::Pid;

/// The CPUs thread (or process) `tid` may run on now, lowest first; empty
/// if it is gone. `0`: the calling thread.
pub fn cpus_of(tid: i32) -> Vec<usize> {
    let Ok(set) = sched_getaffinity(Pid::from_raw(tid)) else {
        return Vec::new();
    };
    (0..CpuSet::count())
        .filter(|&cpu| set.is_set(cpu).unwrap_or(false))
        .collect()
}

/// Sets the mask of every thread of process `pid` (its `/proc/PID/task`
/// entries) to `cpus`. Returns how many threads took it: a thread that
/// ended meanwhile is skipped, and a thread created while this runs may
/// keep its creator's old mask (callers that care apply it again later).
/// Nothing is set if `cpus` is empty or names a CPU out of range.
pub fn set_process_cpus(pid: i32, cpus: &[usize]) -> usize {
    let mut set = CpuSet::new();
    if cpus.is_empty() || cpus.iter().any(|&cpu| set.set(cpu).is_err()) {
        return 0;
    }
    let Ok(tasks) = std::fs::read_dir(Path::new("/proc").join(pid.to_string()).join("task")) else {
        return 0;
    };
    tasks
        .filter_map(|entry| entry.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .filter(|&tid| sched_setaffinity(Pid::from_raw(tid), &set).is_ok())
        .count()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_calling_thread_has_some_cpu() {
        assert!(!cpus_of(0).is_empty());
    }

    #[test]
    fn setting_a_gone_process_or_no_cpu_sets_nothing() {
        let me = std::process::id() as i32;
        assert_eq!(set_process_cpus(me, &[]), 0);
        assert_eq!(set_process_cpus(i32::MAX, &cpus_of(0)), 0);
    }

    #[test]
    fn a_child_process_can_be_moved_and_moved_back() {
        let mut child = std::process::Command::new("sleep")
            .arg("5")
            .spawn()
            .expect("sleep runs");
        let pid = child.id() as i32;
        let all = cpus_of(pid);
        let one = [all[0]];
        assert_eq!(set_process_cpus(pid, &one), 1);
        assert_eq!(cpus_of(pid), one);
        assert_eq!(set_process_cpus(pid, &all), 1);
        assert_eq!(cpus_of(pid), all);
        child.kill().ok();
        child.wait().ok();
    }
}
