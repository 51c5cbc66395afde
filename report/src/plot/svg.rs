//! A small SVG writer for line charts: a frame, linear, logarithmic and "nines" axes with ticks and
//! grid lines, polylines with gaps, point markers and a legend beside the plot area.
//!
//! Written by hand rather than with a plotting crate: respbench needs a few line charts, and a
//! load generator with few dependencies is easier to build everywhere. Text is laid out from an
//! estimate of its width (`CHAR_W` per character), so labels never depend on a font being
//! installed; `font-family` is the generic `sans-serif`.

use std::fmt::Write;

/// Width of the plot area, in pixels.
const PLOT_W: f64 = 620.0;
/// Height of the plot area.
const PLOT_H: f64 = 330.0;
/// Room left of the plot area: the y tick labels and the y axis title.
const LEFT: f64 = 78.0;
/// Room above it: the chart's title.
const TOP: f64 = 40.0;
/// Room below it: the x tick labels and the x axis title.
const BOTTOM: f64 = 54.0;
/// Gap between the plot area and the legend, and after the legend: room for half of the last x
/// tick's label ("99.9999%").
const GAP: f64 = 36.0;
/// Height of a legend entry.
const ROW: f64 = 18.0;
/// Length of a legend entry's line sample.
const SWATCH: f64 = 28.0;
/// Font size of ticks and legend.
const FONT: f64 = 12.0;
/// Estimated advance of one character at `FONT`: DejaVu Sans, the widest common sans-serif, is
/// about 0.6 em on average, so labels laid out with it do not overlap in narrower fonts either.
const CHAR_W: f64 = FONT * 0.62;
/// Legend labels longer than this are cut with an ellipsis.
const LABEL_MAX: usize = 72;

/// Line colours: distinct hues that stay apart for the colour blind (Tableau 10).
const COLORS: [&str; 10] = [
    "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22",
    "#17becf",
];

/// How an axis maps values to positions.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Scale {
    /// Equal distances for equal differences.
    Linear,
    /// Equal distances for equal ratios (values must be positive).
    Log,
}

/// One tick: where, and its label.
#[derive(Clone, Debug, PartialEq)]
pub struct Tick {
    /// The value it marks.
    pub at: f64,
    /// Its label.
    pub label: String,
}

/// An axis: its title, scale, range and ticks.
#[derive(Clone, Debug)]
pub struct Axis {
    /// Title printed along the axis.
    pub title: String,
    /// Linear or logarithmic.
    pub scale: Scale,
    /// Lowest value shown.
    pub min: f64,
    /// Highest value shown.
    pub max: f64,
    /// Ticks, each with a grid line.
    pub ticks: Vec<Tick>,
}

impl Default for Axis {
    fn default() -> Axis {
        Axis::linear("", 0.0, 1.0)
    }
}

impl Axis {
    /// An axis of named categories at 0, 1, 2…: a tick under each, half a step of margin.
    pub fn categories(title: &str, names: &[String]) -> Axis {
        let ticks = names.iter().enumerate().map(|(i, n)| Tick { at: i as f64, label: n.clone() }).collect();
        Axis { title: title.into(), scale: Scale::Linear, min: -0.5, max: names.len() as f64 - 0.5, ticks }
    }

    /// A linear axis over `[lo, hi]` widened to round ticks (about six of them).
    pub fn linear(title: &str, lo: f64, hi: f64) -> Axis {
        let (lo, hi) = if hi > lo { (lo, hi) } else { (lo, lo + lo.abs().max(1.0)) };
        let step = nice_step((hi - lo) / 6.0);
        let min = (lo / step).floor() * step;
        let max = (hi / step).ceil() * step;
        let ticks = (0..)
            .map(|i| min + f64::from(i) * step)
            .take_while(|v| *v <= max + step * 1e-9)
            .map(|at| Tick { at, label: number(at) })
            .collect();
        Axis { title: title.into(), scale: Scale::Linear, min, max, ticks }
    }

    /// A logarithmic axis over `[lo, hi]` (both > 0), widened to the 1-2-5 values around them;
    /// ticks at 1, 2 and 5 per decade over up to three decades, at powers of ten beyond.
    pub fn log(title: &str, lo: f64, hi: f64) -> Axis {
        let lo = if lo > 0.0 && lo.is_finite() { lo } else { 1e-3 };
        let hi = if hi > lo && hi.is_finite() { hi } else { lo * 10.0 };
        let decades = (hi / lo).log10();
        let mantissas: &[f64] = if decades <= 3.2 { &[1.0, 2.0, 5.0] } else { &[1.0] };
        let candidates = |from: f64, to: f64| -> Vec<f64> {
            let first = from.log10().floor() as i32 - 1;
            let last = to.log10().ceil() as i32 + 1;
            (first..=last).flat_map(|e| mantissas.iter().map(move |m| m * 10f64.powi(e))).collect()
        };
        let all = candidates(lo, hi);
        // Comparisons allow for rounding: 0.1 * 3 is not 0.3.
        let min = all.iter().copied().filter(|v| *v <= lo * (1.0 + 1e-9)).fold(lo, |_, v| v);
        let max = all.iter().copied().find(|v| *v >= hi * (1.0 - 1e-9)).unwrap_or(hi);
        let ticks = all
            .into_iter()
            .filter(|v| *v >= min * (1.0 - 1e-9) && *v <= max * (1.0 + 1e-9))
            .map(|at| Tick { at, label: number(at) })
            .collect();
        Axis { title: title.into(), scale: Scale::Log, min, max, ticks }
    }

    /// The percentile axis in "nines": position `log10(1 / (1 − p))`, so 0%, 90%, 99%, 99.9%…
    /// are equally spaced; `nines` is how many nines the axis reaches (at least 1).
    pub fn nines(title: &str, nines: u32) -> Axis {
        let nines = nines.max(1);
        let ticks = (0..=nines).map(|k| Tick { at: f64::from(k), label: nines_label(k) }).collect();
        Axis { title: title.into(), scale: Scale::Linear, min: 0.0, max: f64::from(nines), ticks }
    }

    /// An axis for a few exact values (the steps of a sweep): ticks at the values themselves,
    /// with a margin so markers stay off the frame; logarithmic when they span a factor of 10 or
    /// more. Falls back to round ticks when the values' labels would collide.
    pub fn steps(title: &str, values: &[f64]) -> Axis {
        let lo = values.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let log = lo > 0.0 && hi / lo >= 10.0;
        let mut axis = if log { Axis::log(title, lo, hi) } else { Axis::linear(title, lo, hi) };
        if hi > lo {
            // The margin: 6% of the span on each side.
            if log {
                let f = (hi / lo).powf(0.06);
                (axis.min, axis.max) = (lo / f, hi * f);
            } else {
                let m = (hi - lo) * 0.06;
                (axis.min, axis.max) = (lo - m, hi + m);
            }
            let exact: Vec<Tick> = values.iter().map(|&at| Tick { at, label: number(at) }).collect();
            if !axis.crowded(&exact) {
                axis.ticks = exact;
            } else {
                axis.ticks.retain(|t| t.at >= axis.min && t.at <= axis.max);
            }
        } else {
            let v = lo;
            (axis.min, axis.max) = if log || v > 0.0 { (v / 2.0, v * 2.0) } else { (v - 1.0, v + 1.0) };
            axis.scale = if v > 0.0 { Scale::Log } else { Scale::Linear };
            axis.ticks = vec![Tick { at: v, label: number(v) }];
        }
        axis
    }

    /// [`Axis::steps`] over sizes in bytes, labelled in binary units (`16 B`, `16 KiB`, `1 MiB`);
    /// where the sizes' own labels would collide, ticks at powers of two (every other, every
    /// fourth… until they do not) rather than at round decimal values.
    pub fn byte_steps(title: &str, values: &[f64]) -> Axis {
        let mut axis = Axis::steps(title, values);
        let exact =
            axis.ticks.len() == values.len() && axis.ticks.iter().zip(values).all(|(t, v)| t.at == *v);
        if !exact {
            let (lo, hi) = (axis.min.max(1.0).log2().ceil() as i32, axis.max.max(1.0).log2().floor() as i32);
            for stride in [1, 2, 4, 8, 16] {
                let ticks: Vec<Tick> = (lo..=hi)
                    .filter(|e| (e - lo) % stride == 0)
                    .map(|e| 2f64.powi(e))
                    .map(|at| Tick { at, label: bytes(at) })
                    .collect();
                if !axis.crowded(&ticks) || stride == 16 {
                    axis.ticks = ticks;
                    break;
                }
            }
        }
        for t in &mut axis.ticks {
            t.label = bytes(t.at);
        }
        axis
    }

    /// Where `v` falls, from 0 (at `min`) to 1 (at `max`).
    fn frac(&self, v: f64) -> f64 {
        match self.scale {
            Scale::Linear => (v - self.min) / (self.max - self.min),
            Scale::Log => (v.log10() - self.min.log10()) / (self.max.log10() - self.min.log10()),
        }
    }

    /// Whether these ticks' labels, along a horizontal axis, would touch.
    fn crowded(&self, ticks: &[Tick]) -> bool {
        let mut spans: Vec<(f64, f64)> = ticks
            .iter()
            .map(|t| {
                let x = self.frac(t.at) * PLOT_W;
                let half = text_width(&t.label) / 2.0;
                (x - half, x + half)
            })
            .collect();
        spans.sort_by(|a, b| a.0.total_cmp(&b.0));
        spans.windows(2).any(|w| w[1].0 < w[0].1 + 6.0)
    }
}

/// How a line is drawn.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Dash {
    /// A solid line.
    Solid,
    /// Long dashes.
    Dashed,
    /// Dots.
    Dotted,
}

/// One line of a chart.
#[derive(Clone, Debug)]
pub struct Line {
    /// Its legend entry.
    pub label: String,
    /// Its points, in data units; a point with a NaN coordinate is a gap.
    pub points: Vec<(f64, f64)>,
    /// Index into the palette (wraps).
    pub color: usize,
    /// Dash pattern.
    pub dash: Dash,
    /// Whether each point gets a dot (for a few measured steps rather than a curve).
    pub markers: bool,
    /// Points (by index) that are flagged: measured when the server was not the limit; each
    /// gets a red ring and the legend says what it means.
    pub flags: Vec<bool>,
    /// Spread of each point (by index): a vertical bar from the lowest to the highest value.
    pub bars: Vec<Option<(f64, f64)>>,
    /// Drawn as a line, or as bars over a category axis.
    pub mark: Mark,
}

impl Default for Line {
    fn default() -> Line {
        Line {
            label: String::new(),
            points: Vec::new(),
            color: 0,
            dash: Dash::Solid,
            markers: false,
            flags: Vec::new(),
            bars: Vec::new(),
            mark: Mark::Line,
        }
    }
}

/// How a line's points are drawn.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub enum Mark {
    /// Joined by a polyline.
    #[default]
    Line,
    /// A bar from the axis to each point; the bar lines of a chart stand side by side in each
    /// category.
    Bars,
}

/// A line of text under a chart: what was measured around it.
#[derive(Clone, Debug, PartialEq)]
pub struct Note {
    /// The text.
    pub text: String,
    /// A warning (drawn in red): a step not limited by the server, a mixture.
    pub warn: bool,
}

/// The red of flagged points and warning notes.
const WARN: &str = "#b00020";
/// Font size of the notes under a chart.
const NOTE_FONT: f64 = 11.0;
/// Height of a note's line.
const NOTE_ROW: f64 = 14.0;
/// Longest note line, in characters, before it wraps.
const NOTE_MAX: usize = 130;

/// The lowest and highest finite y of the lines (positive ones for the lowest: log axes).
pub fn extent(lines: &[Line]) -> (f64, f64) {
    let ys = lines.iter().flat_map(|l| l.points.iter().map(|p| p.1)).filter(|y| y.is_finite());
    let (lo, hi) =
        ys.fold((f64::INFINITY, 0.0_f64), |(lo, hi), y| (if y > 0.0 { lo.min(y) } else { lo }, hi.max(y)));
    (if lo.is_finite() { lo } else { hi.max(1e-3) }, hi)
}

/// A line chart: a title, two axes and lines, drawn with a legend on the right.
#[derive(Clone, Debug, Default)]
pub struct Chart {
    /// Printed above the plot area.
    pub title: String,
    /// The horizontal axis.
    pub x: Axis,
    /// The vertical axis.
    pub y: Axis,
    /// The lines, drawn in order, listed in the legend in order.
    pub lines: Vec<Line>,
    /// The context under the chart: command line, server, date, backend, each step's verdict.
    pub notes: Vec<Note>,
    /// Spans of the x axis shaded, each marked at its start and labelled (`--at` events and
    /// their disruption windows).
    pub bands: Vec<Band>,
}

/// A span of the x axis shaded behind the lines: from `from` (marked by a line) to `to`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Band {
    /// Where it starts (an event), in the x axis' values.
    pub from: f64,
    /// Where it ends (the event's recovery, or the end of the test).
    pub to: f64,
    /// Written at its start, at the top of the plot.
    pub label: String,
}

/// `text` cut into lines of at most [`NOTE_MAX`] characters at spaces.
fn wrap(text: &str) -> Vec<String> {
    let mut lines = Vec::new();
    let mut cur = String::new();
    for word in text.split(' ') {
        if !cur.is_empty() && cur.chars().count() + 1 + word.chars().count() > NOTE_MAX {
            lines.push(std::mem::take(&mut cur));
            cur.push_str("    ");
        } else if !cur.is_empty() {
            cur.push(' ');
        }
        cur.push_str(word);
    }
    if !cur.is_empty() {
        lines.push(cur);
    }
    lines
}

impl Chart {
    /// Width of the drawing in pixels, legend and notes included.
    pub fn width(&self) -> f64 {
        let longest = self.legend().iter().map(|(l, _)| text_width(&legend_label(l))).fold(0.0, f64::max);
        let title = text_width(&self.title) * 14.0 / FONT + 10.0;
        let notes =
            self.note_lines().iter().map(|(t, _)| text_width(t) * NOTE_FONT / FONT).fold(0.0, f64::max);
        (LEFT + PLOT_W + GAP + SWATCH + 6.0 + longest + GAP).max(title).max(18.0 + notes + 10.0)
    }

    /// Height of the drawing in pixels (a long legend makes it taller than the plot; the notes
    /// go under it).
    pub fn height(&self) -> f64 {
        let legend = TOP + 8.0 + ROW * self.legend().len() as f64;
        (TOP + PLOT_H + BOTTOM).max(legend) + self.notes_height()
    }

    /// The legend's entries: each line's label, then what a flagged point means when there is one.
    fn legend(&self) -> Vec<(String, Option<&Line>)> {
        let mut l: Vec<(String, Option<&Line>)> =
            self.lines.iter().map(|l| (l.label.clone(), Some(l))).collect();
        if self.lines.iter().any(|l| l.flags.iter().any(|f| *f)) {
            l.push(("red ring: not server-limited".into(), None));
        }
        l
    }

    /// The notes, wrapped.
    fn note_lines(&self) -> Vec<(String, bool)> {
        self.notes.iter().flat_map(|n| wrap(&n.text).into_iter().map(move |t| (t, n.warn))).collect()
    }

    fn notes_height(&self) -> f64 {
        let n = self.note_lines().len();
        if n == 0 {
            0.0
        } else {
            NOTE_ROW * n as f64 + 8.0
        }
    }

    /// Writes the chart as an `<svg>` element at (`x`, `y`) of its parent. `id` makes the clip
    /// path's id unique in a document holding several charts. `standalone` adds the SVG
    /// namespace, which a file needs and HTML does without.
    pub fn write(&self, out: &mut String, id: &str, x: f64, y: f64, standalone: bool) {
        let (w, h) = (self.width(), self.height());
        let ns = if standalone { r#" xmlns="http://www.w3.org/2000/svg""# } else { "" };
        let _ = writeln!(
            out,
            r#"<svg{ns} x="{x}" y="{y}" width="{w:.0}" height="{h:.0}" viewBox="0 0 {w:.0} {h:.0}" font-family="sans-serif" font-size="{FONT}">"#
        );
        // The title element names the chart for screen readers and as a tooltip.
        let _ = writeln!(out, "<title>{}</title>", escape(&self.title));
        let _ = writeln!(out, r#"<rect width="100%" height="100%" fill="white"/>"#);
        let _ = writeln!(
            out,
            r#"<text x="{LEFT}" y="24" font-size="14" font-weight="bold">{}</text>"#,
            escape(&self.title)
        );
        let _ = writeln!(
            out,
            r#"<clipPath id="{id}-clip"><rect x="{LEFT}" y="{TOP}" width="{PLOT_W}" height="{PLOT_H}"/></clipPath>"#
        );
        self.write_grid(out);
        self.write_bands(out, id);
        let _ = writeln!(out, r#"<g clip-path="url(#{id}-clip)" fill="none" stroke-width="1.8">"#);
        let bar_lines: Vec<&Line> = self.lines.iter().filter(|l| l.mark == Mark::Bars).collect();
        for (k, line) in bar_lines.iter().enumerate() {
            self.write_bars(out, line, k, bar_lines.len());
        }
        for line in &self.lines {
            self.write_line(out, line);
        }
        out.push_str("</g>\n");
        let _ = writeln!(
            out,
            r##"<rect x="{LEFT}" y="{TOP}" width="{PLOT_W}" height="{PLOT_H}" fill="none" stroke="#444"/>"##
        );
        self.write_legend(out);
        self.write_notes(out);
        out.push_str("</svg>\n");
    }

    /// The bands, shaded behind the lines, each with a line at its start and its label.
    fn write_bands(&self, out: &mut String, id: &str) {
        for b in &self.bands {
            let (x0, x1) = (self.px(b.from), self.px(b.to.max(b.from)));
            let _ = writeln!(
                out,
                r##"<rect class="band" clip-path="url(#{id}-clip)" x="{x0:.1}" y="{TOP}" width="{:.1}" height="{PLOT_H}" fill="#f4a261" fill-opacity="0.3"/>"##,
                (x1 - x0).max(1.0)
            );
            let _ = writeln!(
                out,
                r##"<line class="event" x1="{x0:.1}" y1="{TOP}" x2="{x0:.1}" y2="{}" stroke="#c0392b" stroke-width="1.5"/>"##,
                TOP + PLOT_H
            );
            let _ = writeln!(
                out,
                r##"<text x="{:.1}" y="{}" fill="#c0392b">{}</text>"##,
                x0 + 3.0,
                TOP + 12.0,
                escape(&b.label)
            );
        }
    }

    /// The notes under the plot (and the legend, when it is longer).
    fn write_notes(&self, out: &mut String) {
        let lines = self.note_lines();
        if lines.is_empty() {
            return;
        }
        let top = self.height() - self.notes_height();
        let _ = writeln!(out, r#"<g font-size="{NOTE_FONT}">"#);
        for (i, (text, warn)) in lines.iter().enumerate() {
            let color = if *warn { WARN } else { "#444" };
            let _ = writeln!(
                out,
                r#"<text x="18" y="{:.1}" fill="{color}">{}</text>"#,
                top + NOTE_ROW * (i as f64 + 1.0),
                escape(text)
            );
        }
        out.push_str("</g>\n");
    }

    fn px(&self, v: f64) -> f64 {
        LEFT + self.x.frac(v) * PLOT_W
    }

    fn py(&self, v: f64) -> f64 {
        TOP + (1.0 - self.y.frac(v)) * PLOT_H
    }

    /// Grid lines, tick labels and axis titles.
    fn write_grid(&self, out: &mut String) {
        let bottom = TOP + PLOT_H;
        out.push_str(r##"<g stroke="#ddd" stroke-width="1">"##);
        out.push('\n');
        for t in self.x.ticks.iter().filter(|t| inside(&self.x, t.at)) {
            let x = self.px(t.at);
            let _ = writeln!(out, r#"<line x1="{x:.1}" y1="{TOP}" x2="{x:.1}" y2="{bottom}"/>"#);
        }
        for t in self.y.ticks.iter().filter(|t| inside(&self.y, t.at)) {
            let y = self.py(t.at);
            let _ = writeln!(out, r#"<line x1="{LEFT}" y1="{y:.1}" x2="{}" y2="{y:.1}"/>"#, LEFT + PLOT_W);
        }
        out.push_str("</g>\n<g fill=\"#222\">\n");
        // A label that would touch the one before it is left out (its grid line stays): nine
        // nines of "99.9999999%" do not fit under 620 pixels.
        let mut right = f64::NEG_INFINITY;
        for t in self.x.ticks.iter().filter(|t| inside(&self.x, t.at)) {
            let half = text_width(&t.label) / 2.0;
            if self.px(t.at) - half < right + 6.0 {
                continue;
            }
            right = self.px(t.at) + half;
            let _ = writeln!(
                out,
                r#"<text x="{:.1}" y="{}" text-anchor="middle">{}</text>"#,
                self.px(t.at),
                bottom + 17.0,
                escape(&t.label)
            );
        }
        for t in self.y.ticks.iter().filter(|t| inside(&self.y, t.at)) {
            let _ = writeln!(
                out,
                r#"<text x="{}" y="{:.1}" text-anchor="end">{}</text>"#,
                LEFT - 6.0,
                self.py(t.at) + 4.0,
                escape(&t.label)
            );
        }
        let _ = writeln!(
            out,
            r#"<text x="{:.1}" y="{}" text-anchor="middle" font-size="13">{}</text>"#,
            LEFT + PLOT_W / 2.0,
            bottom + 42.0,
            escape(&self.x.title)
        );
        let (yx, yy) = (18.0, TOP + PLOT_H / 2.0);
        let _ = writeln!(
            out,
            r#"<text x="{yx}" y="{yy}" text-anchor="middle" font-size="13" transform="rotate(-90 {yx} {yy})">{}</text>"#,
            escape(&self.y.title)
        );
        out.push_str("</g>\n");
    }

    /// Bars of `line`, the `k`th of `n` bar lines, side by side in each category.
    fn write_bars(&self, out: &mut String, line: &Line, k: usize, n: usize) {
        let color = COLORS[line.color % COLORS.len()];
        let step = PLOT_W / (self.x.max - self.x.min).max(1.0);
        let w = step * 0.8 / n.max(1) as f64;
        let base = self.py(self.y.min.max(if self.y.scale == Scale::Log { self.y.min } else { 0.0 }));
        for (i, &(x, y)) in line.points.iter().enumerate() {
            if !self.plottable(x, y) {
                continue;
            }
            let left = self.px(x) - step * 0.4 + w * k as f64;
            let top = self.py(y);
            let _ = writeln!(
                out,
                r#"<rect x="{left:.1}" y="{top:.1}" width="{:.1}" height="{:.1}" fill="{color}" stroke="none"/>"#,
                (w - 2.0).max(1.0),
                (base - top).max(0.0)
            );
            if line.flags.get(i).copied().unwrap_or(false) {
                let _ = writeln!(
                    out,
                    r#"<circle cx="{:.1}" cy="{top:.1}" r="6.5" fill="white" stroke="{WARN}" stroke-width="1.8"/>"#,
                    left + (w - 2.0).max(1.0) / 2.0
                );
            }
        }
    }

    /// A point's spread: a vertical bar with caps.
    fn write_spread(&self, out: &mut String, color: &str, x: f64, (lo, hi): (f64, f64)) {
        if !(self.plottable(x, lo) && self.plottable(x, hi)) {
            return;
        }
        let (px, top, bottom) = (self.px(x), self.py(hi), self.py(lo));
        let _ = writeln!(
            out,
            r#"<path d="M{px:.1},{top:.1}V{bottom:.1}M{:.1},{top:.1}h10M{:.1},{bottom:.1}h10" stroke="{color}" stroke-width="1.6"/>"#,
            px - 5.0,
            px - 5.0
        );
    }

    /// One line: polylines between gaps, and markers.
    fn write_line(&self, out: &mut String, line: &Line) {
        let color = COLORS[line.color % COLORS.len()];
        for (i, &(x, _)) in line.points.iter().enumerate() {
            if let Some(Some(range)) = line.bars.get(i) {
                self.write_spread(out, color, x, *range);
            }
        }
        for (i, &(x, y)) in line.points.iter().enumerate() {
            // A bar's ring is drawn with the bar (write_bars), over its own place in the group.
            if line.mark == Mark::Line && line.flags.get(i).copied().unwrap_or(false) && self.plottable(x, y)
            {
                let _ = writeln!(
                    out,
                    r#"<circle cx="{:.1}" cy="{:.1}" r="6.5" fill="none" stroke="{WARN}" stroke-width="1.8"/>"#,
                    self.px(x),
                    self.py(y)
                );
            }
        }
        if line.mark == Mark::Bars {
            return;
        }
        let dash = dasharray(line.dash);
        let mut run: Vec<(f64, f64)> = Vec::new();
        let flush = |run: &mut Vec<(f64, f64)>, out: &mut String| {
            if run.len() >= 2 {
                let pts: Vec<String> = run.iter().map(|(x, y)| format!("{x:.1},{y:.1}")).collect();
                let _ = writeln!(out, r#"<polyline stroke="{color}"{dash} points="{}"/>"#, pts.join(" "));
            }
            run.clear();
        };
        for &(x, y) in &line.points {
            if self.plottable(x, y) {
                run.push((self.px(x), self.py(y)));
            } else {
                flush(&mut run, out);
            }
        }
        flush(&mut run, out);
        // A lone point between gaps has no segment: it gets a marker, as do all points of a
        // line with markers.
        let lone = |i: usize| {
            let ok = |j: Option<usize>| {
                j.and_then(|j| line.points.get(j)).is_some_and(|p| self.plottable(p.0, p.1))
            };
            !ok(i.checked_sub(1)) && !ok(Some(i + 1))
        };
        for (i, &(x, y)) in line.points.iter().enumerate() {
            if self.plottable(x, y) && (line.markers || lone(i)) {
                let _ = writeln!(
                    out,
                    r#"<circle cx="{:.1}" cy="{:.1}" r="3.2" fill="{color}" stroke="none"/>"#,
                    self.px(x),
                    self.py(y)
                );
            }
        }
    }

    fn plottable(&self, x: f64, y: f64) -> bool {
        let ok = |a: &Axis, v: f64| v.is_finite() && (a.scale == Scale::Linear || v > 0.0);
        ok(&self.x, x) && ok(&self.y, y)
    }

    fn write_legend(&self, out: &mut String) {
        let x0 = LEFT + PLOT_W + GAP;
        out.push_str("<g>\n");
        for (i, (label, line)) in self.legend().iter().enumerate() {
            let y = TOP + 8.0 + ROW * i as f64;
            match line {
                Some(line) if line.mark == Mark::Bars => {
                    let color = COLORS[line.color % COLORS.len()];
                    let _ = writeln!(
                        out,
                        r#"<rect x="{}" y="{}" width="{}" height="10" fill="{color}"/>"#,
                        x0 + 6.0,
                        y - 5.0,
                        SWATCH - 12.0
                    );
                }
                Some(line) => {
                    let color = COLORS[line.color % COLORS.len()];
                    let _ = writeln!(
                        out,
                        r#"<line x1="{x0}" y1="{y}" x2="{}" y2="{y}" stroke="{color}" stroke-width="2.2"{}/>"#,
                        x0 + SWATCH,
                        dasharray(line.dash)
                    );
                    if line.markers {
                        let _ = writeln!(
                            out,
                            r#"<circle cx="{}" cy="{y}" r="3.2" fill="{color}"/>"#,
                            x0 + SWATCH / 2.0
                        );
                    }
                }
                None => {
                    let _ = writeln!(
                        out,
                        r#"<circle cx="{}" cy="{y}" r="6.5" fill="none" stroke="{WARN}" stroke-width="1.8"/>"#,
                        x0 + SWATCH / 2.0
                    );
                }
            }
            let _ = writeln!(
                out,
                r##"<text x="{}" y="{}" fill="#222">{}</text>"##,
                x0 + SWATCH + 6.0,
                y + 4.0,
                escape(&legend_label(label))
            );
        }
        out.push_str("</g>\n");
    }
}

/// Charts stacked top to bottom in one SVG document.
pub fn document(charts: &[Chart]) -> String {
    let charts = &notes_once(charts);
    let w = charts.iter().map(Chart::width).fold(0.0, f64::max);
    let h: f64 = charts.iter().map(Chart::height).sum();
    let mut out = String::new();
    let _ = writeln!(
        out,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{w:.0}" height="{h:.0}" viewBox="0 0 {w:.0} {h:.0}">"#
    );
    let _ = writeln!(out, r#"<rect width="100%" height="100%" fill="white"/>"#);
    let mut y = 0.0;
    for (i, c) in charts.iter().enumerate() {
        c.write(&mut out, &format!("c{i}"), 0.0, y, false);
        y += c.height();
    }
    out.push_str("</svg>\n");
    out
}

/// `charts` for one page: notes that the next chart repeats (the same context, the same
/// verdicts) are left to it, so each run of charts sharing their notes has them once, under its
/// last chart.
pub fn notes_once(charts: &[Chart]) -> Vec<Chart> {
    let mut out = charts.to_vec();
    for i in 1..out.len() {
        if out[i - 1].notes == out[i].notes {
            out[i - 1].notes.clear();
        }
    }
    out
}

fn inside(a: &Axis, v: f64) -> bool {
    let (lo, hi) = (a.min.min(a.max), a.max.max(a.min));
    let slack = (hi - lo).abs() * 1e-9;
    v >= lo - slack && v <= hi + slack && (a.scale == Scale::Linear || v > 0.0)
}

fn dasharray(d: Dash) -> &'static str {
    match d {
        Dash::Solid => "",
        Dash::Dashed => r#" stroke-dasharray="7 4""#,
        Dash::Dotted => r#" stroke-dasharray="2 3""#,
    }
}

fn legend_label(label: &str) -> String {
    if label.chars().count() <= LABEL_MAX {
        return label.to_string();
    }
    let mut s: String = label.chars().take(LABEL_MAX - 1).collect();
    s.push('…');
    s
}

/// Estimated width of `s` at the tick and legend font size.
fn text_width(s: &str) -> f64 {
    s.chars().count() as f64 * CHAR_W
}

/// A round step near `raw`: 1, 2, 2.5 or 5 times a power of ten.
fn nice_step(raw: f64) -> f64 {
    if !(raw > 0.0 && raw.is_finite()) {
        return 1.0;
    }
    let mag = 10f64.powf(raw.log10().floor());
    let r = raw / mag;
    let m = if r <= 1.0 {
        1.0
    } else if r <= 2.0 {
        2.0
    } else if r <= 2.5 {
        2.5
    } else if r <= 5.0 {
        5.0
    } else {
        10.0
    };
    m * mag
}

/// A tick label: at most four significant digits without trailing zeros; `k` and `M` from ten
/// thousand on (`20k`, `1.5M`).
pub fn number(v: f64) -> String {
    let (v, suffix) = if v.abs() >= 1e6 {
        (v / 1e6, "M")
    } else if v.abs() >= 1e4 {
        (v / 1e3, "k")
    } else {
        (v, "")
    };
    if v == 0.0 {
        return "0".into();
    }
    let digits = (4 - 1 - v.abs().log10().floor() as i32).clamp(0, 9) as usize;
    let mut s = format!("{v:.digits$}");
    if s.contains('.') {
        s = s.trim_end_matches('0').trim_end_matches('.').to_string();
    }
    if s == "-0" {
        s = "0".into();
    }
    s + suffix
}

/// A size in bytes in binary units, as [`number`] writes the figure: `512 B`, `16 KiB` (16,384
/// bytes), `1.5 MiB`, `97.66 KiB` (100,000 bytes).
pub fn bytes(v: f64) -> String {
    const UNITS: [(f64, &str); 4] = [
        (1024.0 * 1024.0 * 1024.0 * 1024.0, "TiB"),
        (1024.0 * 1024.0 * 1024.0, "GiB"),
        (1024.0 * 1024.0, "MiB"),
        (1024.0, "KiB"),
    ];
    match UNITS.iter().find(|(unit, _)| v.abs() >= *unit) {
        Some((unit, name)) => format!("{} {name}", number(v / unit)),
        None => format!("{} B", number(v)),
    }
}

/// "0%", "90%", "99%", "99.9%", … for `k` nines.
pub fn nines_label(k: u32) -> String {
    match k {
        0 => "0%".into(),
        1 => "90%".into(),
        2 => "99%".into(),
        _ => format!("99.{}%", "9".repeat(k as usize - 2)),
    }
}

/// Text and attribute values with `&`, `<`, `>` and quotes escaped.
pub fn escape(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&#39;"),
            c => o.push(c),
        }
    }
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers() {
        let got: Vec<String> = [0.0, 0.001, 0.05, 0.25, 1.0, 12.5, 2500.0, 20_000.0, 1_500_000.0, 123_456.0]
            .iter()
            .map(|v| number(*v))
            .collect();
        assert_eq!(got, ["0", "0.001", "0.05", "0.25", "1", "12.5", "2500", "20k", "1.5M", "123.5k"]);
    }

    #[test]
    fn nines() {
        let got: Vec<String> = (0..6).map(nines_label).collect();
        assert_eq!(got, ["0%", "90%", "99%", "99.9%", "99.99%", "99.999%"]);
        let a = Axis::nines("p", 3);
        assert_eq!(a.ticks.len(), 4);
        assert_eq!((a.min, a.max), (0.0, 3.0));
    }

    #[test]
    fn linear_ticks_are_round_and_cover() {
        let a = Axis::linear("rps", 0.0, 97_300.0);
        assert_eq!(a.min, 0.0);
        assert!(a.max >= 97_300.0 && a.max <= 120_000.0, "{}", a.max);
        let labels: Vec<&str> = a.ticks.iter().map(|t| t.label.as_str()).collect();
        assert_eq!(labels, ["0", "20k", "40k", "60k", "80k", "100k"]);
        // A flat range still makes an axis.
        let f = Axis::linear("x", 5.0, 5.0);
        assert!(f.max > f.min);
    }

    #[test]
    fn log_ticks() {
        let a = Axis::log("ms", 0.031, 7.9);
        assert!((a.min - 0.02).abs() < 1e-12 && (a.max - 10.0).abs() < 1e-9, "{} {}", a.min, a.max);
        let labels: Vec<&str> = a.ticks.iter().map(|t| t.label.as_str()).collect();
        assert_eq!(labels, ["0.02", "0.05", "0.1", "0.2", "0.5", "1", "2", "5", "10"]);
        // Over many decades only the powers of ten.
        let b = Axis::log("ms", 0.004, 3000.0);
        let labels: Vec<&str> = b.ticks.iter().map(|t| t.label.as_str()).collect();
        assert_eq!(labels, ["0.001", "0.01", "0.1", "1", "10", "100", "1000", "10k"]);
    }

    #[test]
    fn step_axes() {
        // Sizes spanning a factor of 128 go on a log axis, ticked at the sizes.
        let a = Axis::steps("bytes", &[16.0, 128.0, 256.0, 1024.0, 2048.0]);
        assert_eq!(a.scale, Scale::Log);
        let labels: Vec<&str> = a.ticks.iter().map(|t| t.label.as_str()).collect();
        assert_eq!(labels, ["16", "128", "256", "1024", "2048"]);
        assert!(a.min < 16.0 && a.max > 2048.0);
        // Rates close together on a linear axis; crowded values fall back to round ticks.
        let b = Axis::steps("rps", &[2000.0, 4000.0, 6000.0]);
        assert_eq!(b.scale, Scale::Linear);
        let c = Axis::steps("rps", &(1..=40).map(|i| f64::from(i) * 1000.0).collect::<Vec<_>>());
        assert!(c.ticks.len() < 15, "{:?}", c.ticks);
        // One value alone still makes a range around it.
        let d = Axis::steps("c", &[50.0]);
        assert!(d.min < 50.0 && d.max > 50.0);
    }

    /// Sizes in bytes read in binary units: 16,384 bytes is `16 KiB` (it was `16.38k`); crowded
    /// sizes fall back to powers of two, never to `9.766 KiB`.
    #[test]
    fn byte_axes_are_in_binary_units() {
        let got: Vec<String> =
            [0.0, 16.0, 1000.0, 1024.0, 1536.0, 16384.0, 100_000.0, 1048576.0, 3.0 * 1073741824.0]
                .iter()
                .map(|v| bytes(*v))
                .collect();
        assert_eq!(
            got,
            ["0 B", "16 B", "1000 B", "1 KiB", "1.5 KiB", "16 KiB", "97.66 KiB", "1 MiB", "3 GiB"]
        );
        let a = Axis::byte_steps("value size", &[16.0, 1024.0, 16384.0, 1048576.0]);
        let labels: Vec<&str> = a.ticks.iter().map(|t| t.label.as_str()).collect();
        assert_eq!(labels, ["16 B", "1 KiB", "16 KiB", "1 MiB"]);
        let sizes: Vec<f64> = (4..=20).map(|e| 2f64.powi(e)).collect();
        let b = Axis::byte_steps("value size", &sizes);
        assert!(b.ticks.len() < sizes.len() && b.ticks.len() >= 3, "{:?}", b.ticks);
        for t in &b.ticks {
            assert_eq!(t.at.log2().fract(), 0.0, "{:?}", b.ticks);
            assert_eq!(t.label, bytes(t.at));
        }
        assert!(!b.crowded(&b.ticks), "{:?}", b.ticks);
    }

    /// Nine nines: every grid line, but only labels that do not touch.
    #[test]
    fn crowded_x_labels_are_thinned() {
        let chart = Chart {
            title: "t".into(),
            x: Axis::nines("p", 9),
            y: Axis::log("y", 1.0, 10.0),
            lines: Vec::new(),
            ..Chart::default()
        };
        let svg = document(std::slice::from_ref(&chart));
        assert!(svg.contains(">0%<") && svg.contains(">99.9%<"), "{svg}");
        assert_eq!(svg.matches("<line").count(), 10 + 4, "a grid line per tick\n{svg}");
        // Ten ticks, fewer labels (the axis title is the one more "middle" text).
        let labels = svg.matches(r#"text-anchor="middle">"#).count() - 1;
        assert!((5..10).contains(&labels), "{labels} labels\n{svg}");
    }

    /// Three charts with the same notes: the page has them once, under the last; a chart whose
    /// notes differ keeps its own.
    #[test]
    fn a_page_has_its_notes_once() {
        let note = |t: &str| Note { text: t.into(), warn: false };
        let chart = |notes: Vec<Note>| Chart { title: "t".into(), notes, ..Chart::default() };
        let same = vec![note("redis-benchmark -t get · server redis 7.0.15"), note("GET: server-limited")];
        let charts = [chart(same.clone()), chart(same.clone()), chart(same.clone())];
        let svg = document(&charts);
        assert_eq!(svg.matches("GET: server-limited").count(), 1, "{svg}");
        assert_eq!(svg.matches("server redis 7.0.15").count(), 1, "{svg}");
        let once = notes_once(&[chart(vec![note("a")]), chart(same.clone()), chart(same)]);
        let kept: Vec<usize> = once.iter().map(|c| c.notes.len()).collect();
        assert_eq!(kept, [1, 0, 2]);
    }

    #[test]
    fn escapes_and_gaps() {
        assert_eq!(escape(r#"a<b & "c""#), "a&lt;b &amp; &quot;c&quot;");
        let chart = Chart {
            title: "t <1>".into(),
            x: Axis::linear("x", 0.0, 10.0),
            y: Axis::log("y", 1.0, 100.0),
            lines: vec![Line {
                label: "L".into(),
                // A gap (NaN), then a point a log axis cannot show (0), then a lone point.
                points: vec![(0.0, 1.0), (1.0, 2.0), (2.0, f64::NAN), (3.0, 5.0), (4.0, 0.0), (5.0, 50.0)],
                color: 0,
                dash: Dash::Solid,
                markers: false,
                ..Line::default()
            }],
            ..Chart::default()
        };
        let svg = document(std::slice::from_ref(&chart));
        assert_eq!(svg.matches("<polyline").count(), 1, "{svg}");
        // The two lone points get markers.
        assert_eq!(svg.matches("<circle").count(), 2, "{svg}");
        assert!(svg.contains("t &lt;1&gt;"));
        assert!(!svg.contains("NaN") && !svg.contains("inf"));
    }
}
