//! The latency monitor (Redis's `LATENCY`): with `latency-monitor-threshold` above 0, every
//! command that runs at least that many milliseconds is a sample of the event `command`
//! (or `fast-command` for a command flagged fast), kept as Redis keeps them: the last
//! [`HISTORY`] samples per event, one per second (the larger one wins), and the all-time
//! maximum.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

/// Samples kept per event (Redis's `LATENCY_TS_LEN`).
pub const HISTORY: usize = 160;

/// One event's samples: (unix seconds, milliseconds), oldest first, and its all-time max.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Event {
    pub samples: Vec<(u64, u64)>,
    pub max: u64,
}

impl Event {
    fn add(&mut self, unix_secs: u64, ms: u64) {
        self.max = self.max.max(ms);
        // Threads record concurrently: a sample dated before the last one joins it.
        if let Some(last) = self.samples.last_mut().filter(|l| l.0 >= unix_secs) {
            last.1 = last.1.max(ms);
            return;
        }
        if self.samples.len() == HISTORY {
            self.samples.remove(0);
        }
        self.samples.push((unix_secs, ms));
    }
}

/// A node's latency events.
#[derive(Debug, Default)]
pub struct LatencyMonitor {
    /// `latency-monitor-threshold` in milliseconds (0: off).
    threshold_ms: AtomicU64,
    events: Mutex<BTreeMap<&'static str, Event>>,
}

impl LatencyMonitor {
    pub fn configure(&self, threshold_ms: u64) {
        self.threshold_ms.store(threshold_ms, Ordering::Relaxed);
    }

    pub fn threshold_ms(&self) -> u64 {
        self.threshold_ms.load(Ordering::Relaxed)
    }

    /// Records `usec` for `event` if the monitor is on and it reaches the threshold, dated
    /// `unix_secs()` (read only then).
    pub fn observe(&self, event: &'static str, usec: u64, unix_secs: impl FnOnce() -> u64) {
        let threshold = self.threshold_ms();
        let ms = usec / 1000;
        if threshold == 0 || ms < threshold {
            return;
        }
        self.lock().entry(event).or_default().add(unix_secs(), ms);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<&'static str, Event>> {
        self.events.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Every event with its samples, by name.
    pub fn events(&self) -> Vec<(&'static str, Event)> {
        self.lock().iter().map(|(n, e)| (*n, e.clone())).collect()
    }

    pub fn event(&self, name: &[u8]) -> Option<Event> {
        let events = self.lock();
        events
            .iter()
            .find(|(n, _)| n.as_bytes() == name)
            .map(|(_, e)| e.clone())
    }

    /// Forgets the named events (all with None); returns how many there were.
    pub fn reset(&self, names: Option<&[&[u8]]>) -> usize {
        let mut events = self.lock();
        match names {
            None => {
                let n = events.len();
                events.clear();
                n
            }
            Some(names) => {
                let before = events.len();
                events.retain(|n, _| !names.iter().any(|x| x.eq_ignore_ascii_case(n.as_bytes())));
                before - events.len()
            }
        }
    }
}

/// LATENCY DOCTOR's report. Redis's own words while the monitor is off or has seen nothing;
/// otherwise, per event, its spikes, average, mean deviation and period, as Redis reports
/// them, with shorter advice.
pub fn doctor(threshold_ms: u64, events: &[(&str, Event)]) -> String {
    if threshold_ms == 0 {
        return "I'm sorry, Dave, I can't do that. Latency monitoring is disabled in this Redis \
                instance. You may use \"CONFIG SET latency-monitor-threshold <milliseconds>.\" \
                in order to enable it. If we weren't in a deep space mission I'd suggest to \
                take a look at https://redis.io/topics/latency-monitor.\n"
            .into();
    }
    if events.is_empty() {
        return "Dave, no latency spike was observed during the lifetime of this Redis \
                instance, not in the slightest bit. I honestly think you ought to sit down \
                calmly, take a stress pill, and think things over.\n"
            .into();
    }
    let mut out = String::from(
        "Dave, I have observed latency spikes in this Redis instance. You don't mind talking \
         about it, do you Dave?\n\n",
    );
    for (i, (name, e)) in events.iter().enumerate() {
        let n = e.samples.len().max(1) as f64;
        let avg = e.samples.iter().map(|s| s.1 as f64).sum::<f64>() / n;
        let mad = e
            .samples
            .iter()
            .map(|s| (s.1 as f64 - avg).abs())
            .sum::<f64>()
            / n;
        let (first, last) = (
            e.samples.first().map_or(0, |s| s.0),
            e.samples.last().map_or(0, |s| s.0),
        );
        let period = if e.samples.len() > 1 {
            last.saturating_sub(first) as f64 / (e.samples.len() - 1) as f64
        } else {
            0.0
        };
        out.push_str(&format!(
            "{}. {name}: {} latency spikes (average {}ms, mean deviation {}ms, period {:.2} \
             sec). Worst all time event {}ms.\n",
            i + 1,
            e.samples.len(),
            avg as u64,
            mad as u64,
            period,
            e.max
        ));
    }
    out.push_str(
        "\nI have a few advices for you:\n\n- Check SLOWLOG GET for the commands that ran \
         long, and INFO latencystats for each command's percentiles.\n",
    );
    out
}

/// LATENCY GRAPH's text for one event: its range, then one line per sample, newest last,
/// with its age and a bar scaled to the largest sample (Redis draws a sparkline instead).
pub fn graph(name: &str, e: &Event, now_secs: u64) -> String {
    let high = e.samples.iter().map(|s| s.1).max().unwrap_or(0);
    let low = e.samples.iter().map(|s| s.1).min().unwrap_or(0);
    let mut out = format!(
        "{name} - high {high} ms, low {low} ms (all time high {} ms)\n{}\n",
        e.max,
        "-".repeat(80)
    );
    for &(t, ms) in &e.samples {
        let bar = (ms * 60).checked_div(high).unwrap_or(0).max(1) as usize;
        out.push_str(&format!(
            "{:>8}s ago {:>8} ms {}\n",
            now_secs.saturating_sub(t),
            ms,
            "#".repeat(bar)
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn samples_reach_the_threshold_merge_per_second_and_keep_the_newest() {
        let m = LatencyMonitor::default();
        m.observe("command", 50_000, || 100);
        assert!(m.events().is_empty(), "off at threshold 0");
        m.configure(10);
        m.observe("command", 9_999, || 100);
        assert!(m.events().is_empty(), "below the threshold");
        m.observe("command", 12_000, || 100);
        m.observe("command", 30_000, || 100);
        m.observe("command", 11_000, || 101);
        // Out of order (another thread's older sample): joins the newest.
        m.observe("command", 13_000, || 100);
        let e = m.event(b"command").unwrap();
        assert_eq!(e.samples, vec![(100, 30), (101, 13)]);
        assert_eq!(e.max, 30);
        for t in 0..2 * HISTORY as u64 {
            m.observe("fast-command", 10_000, || 1000 + t);
        }
        let f = m.event(b"fast-command").unwrap();
        assert_eq!(f.samples.len(), HISTORY);
        assert_eq!(f.samples[0].0, 1000 + HISTORY as u64);
        assert_eq!(m.reset(Some(&[b"COMMAND", b"nope"])), 1);
        assert_eq!(m.reset(None), 1);
        assert!(m.events().is_empty());
    }

    #[test]
    fn the_doctor_speaks_as_redis_when_off_or_quiet() {
        assert!(doctor(0, &[]).starts_with("I'm sorry, Dave"));
        assert!(doctor(5, &[]).starts_with("Dave, no latency spike"));
        let e = Event {
            samples: vec![(10, 20), (20, 40)],
            max: 40,
        };
        let report = doctor(5, &[("command", e.clone())]);
        assert!(
            report.contains("1. command: 2 latency spikes (average 30ms, mean deviation 10ms, period 10.00 sec). Worst all time event 40ms."),
            "{report}"
        );
        let g = graph("command", &e, 25);
        assert!(g.starts_with("command - high 40 ms, low 20 ms (all time high 40 ms)\n"));
        assert_eq!(g.lines().count(), 4);
    }
}
