//! A moment: the one type for "when" in what a run observes and the clients report.

use std::time::{Duration, SystemTime};

/// A moment, as Unix time in milliseconds: the one type for "when" in what a run observes (the
/// list's last publish, a deployment's start, the run's own now). AWS's times carry
/// milliseconds, and a deployment forced within a second of a publish must still count as
/// after it. The state's timers are whole seconds, [`When::secs`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct When(u64);

impl When {
    pub fn from_millis(ms: u64) -> When {
        When(ms)
    }

    pub fn from_secs(secs: u64) -> When {
        When(secs.saturating_mul(1000))
    }

    /// `t`, if it is after the Unix epoch.
    pub fn from_system(t: SystemTime) -> Option<When> {
        let since = t.duration_since(SystemTime::UNIX_EPOCH).ok()?;
        Some(When(u64::try_from(since.as_millis()).unwrap_or(u64::MAX)))
    }

    pub fn now() -> When {
        When::from_system(SystemTime::now()).unwrap_or(When(0))
    }

    /// Whole seconds since the Unix epoch (how the state keeps its timers).
    pub fn secs(self) -> u64 {
        self.0 / 1000
    }

    /// How long after `earlier` this is (zero when it is not after it).
    pub fn since(self, earlier: When) -> Duration {
        Duration::from_millis(self.0.saturating_sub(earlier.0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_moment_keeps_its_milliseconds() {
        let published =
            When::from_system(SystemTime::UNIX_EPOCH + Duration::from_millis(1_700)).unwrap();
        let deployed = When::from_millis(1_950);
        // Within the same second, and still after it: the fleet rule compares moments.
        assert!(deployed > published);
        assert_eq!((published.secs(), deployed.secs()), (1, 1));
        assert_eq!(deployed.since(published), Duration::from_millis(250));
        assert_eq!(published.since(deployed), Duration::ZERO);
        assert_eq!(When::from_secs(3).secs(), 3);
    }
}
