//! Timing the phases of one snapshot (pass, decode, command lines, /proc fill...) for the
//! report `-v` prints: snapshot.rs and cmdlines.rs each mark the phases they run.

/// Times the phases of a snapshot (reported by `-v`).
pub(super) struct Lap {
    last: std::time::Instant,
    phases: Vec<(&'static str, f64)>,
}

impl Lap {
    pub(super) fn new() -> Lap {
        Lap {
            last: std::time::Instant::now(),
            phases: Vec::with_capacity(10),
        }
    }

    /// Ends the phase `name` now.
    pub(super) fn mark(&mut self, name: &'static str) {
        let now = std::time::Instant::now();
        self.phases
            .push((name, now.duration_since(self.last).as_secs_f64() * 1e3));
        self.last = now;
    }

    /// The phases ended so far, in order, each with its length in ms.
    pub(super) fn into_phases_ms(self) -> Vec<(&'static str, f64)> {
        self.phases
    }
}
