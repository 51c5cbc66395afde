//! A scenario group's latency objective (`slo` in its `[[groups]]` table, `--slo`'s syntax),
//! judged on the group's figures at its own rate: no search, a verdict. A leaf over
//! [`crate::slo`]'s objectives.

use crate::slo::{format_us, values_of, Objective};

/// A group's objectives and what its test measured of each.
#[derive(Clone, Debug, PartialEq)]
pub struct Judged {
    /// The objectives, as given.
    pub objectives: Vec<Objective>,
    /// Each objective's value in microseconds (its percentile of the corrected latency, or of
    /// the service time), in the order of `objectives`.
    pub values_us: Vec<f64>,
}

impl Judged {
    /// `objectives` judged on `stats`.
    pub fn of(objectives: &[Objective], stats: &respbench_core::Stats) -> Judged {
        Judged { objectives: objectives.to_vec(), values_us: values_of(objectives, stats) }
    }

    /// Whether objective `i` held.
    pub fn held(&self, i: usize) -> bool {
        match (self.objectives.get(i), self.values_us.get(i)) {
            (Some(o), Some(v)) => *v <= o.limit_us,
            _ => false,
        }
    }

    /// Whether every objective held.
    pub fn met(&self) -> bool {
        (0..self.objectives.len()).all(|i| self.held(i))
    }

    /// The verdict in words: `met (p99 1.234 ms <= 2ms)`, or the objectives missed with their
    /// values: `missed: p99 3.100 ms > 2ms`.
    pub fn text(&self) -> String {
        let said = |i: usize, held: bool| {
            let o = &self.objectives[i];
            let v = format_us(self.values_us.get(i).copied().unwrap_or(0.0));
            let limit = o.text.rsplit("<=").next().unwrap_or(&o.text);
            format!("{} {v} {} {limit}", o.label(), if held { "<=" } else { ">" })
        };
        let missed: Vec<String> =
            (0..self.objectives.len()).filter(|&i| !self.held(i)).map(|i| said(i, false)).collect();
        match missed.is_empty() {
            true => format!(
                "met ({})",
                (0..self.objectives.len()).map(|i| said(i, true)).collect::<Vec<_>>().join(", ")
            ),
            false => format!("missed: {}", missed.join(", ")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::slo::parse_objectives;

    /// Each objective against its own percentile, the verdict's words, and a merged group's
    /// verdict judged again on the merged figures.
    #[test]
    fn each_objective_is_judged_on_its_percentile() {
        let mut stats = respbench_core::Stats::new(respbench_core::Time::ZERO, 3, false).unwrap();
        for us in 1..=1000u64 {
            stats.latency.record(us).unwrap();
        }
        let o = parse_objectives("p50<=600us,p99<=900us").unwrap();
        let j = Judged::of(&o, &stats);
        assert!(j.held(0) && !j.held(1), "{j:?}");
        assert!(!j.met());
        assert!(j.text().starts_with("missed: p99 "), "{}", j.text());
        assert!(j.text().ends_with(" > 900us"), "{}", j.text());
        let loose = parse_objectives("p99<=2ms").unwrap();
        let j = Judged::of(&loose, &stats);
        assert!(j.met());
        assert!(j.text().starts_with("met (p99 ") && j.text().ends_with(" <= 2ms)"), "{}", j.text());
        // Merged (two workers' shares of a group): judged again on the figures added up.
        let group = |us: u64| {
            let mut s = respbench_core::Stats::new(respbench_core::Time::ZERO, 3, false).unwrap();
            s.latency.record_n(us, 100).unwrap();
            s.requests = 100;
            let mut g = crate::result::TestResult::new("readers".into(), String::new(), s);
            g.slo = Some(Judged::of(&loose, &g.stats));
            let mut t = crate::result::TestResult::new("rw".into(), String::new(), g.stats.clone());
            t.groups.push(g);
            t
        };
        let (mut a, b) = (group(500), group(5000));
        assert!(a.groups[0].slo.as_ref().unwrap().met());
        a.merge(b).unwrap();
        let merged = a.groups[0].slo.as_ref().unwrap();
        assert!(!merged.met(), "{merged:?}");
        assert!(merged.values_us[0] >= 4990.0, "{merged:?}");
    }
}
