//! `respbench plot RESULT.json… -o FILE`: draws the results of `--json` runs as SVG charts
//! stacked in one SVG document, or as one self-contained HTML report (a summary table and the
//! same charts inline). Built with the default cargo feature `plot`.

mod capacity;
mod charts;
mod compare;
mod data;
mod growth;
mod html;
mod notify;
mod server_panel;
mod svg;

use std::io::Write;

use crate::error::Error;

use charts::Kind;

/// What `respbench plot` was asked to do: its options as plain data (the binary parses them).
#[derive(Clone, Debug, Default)]
pub struct PlotArgs {
    /// `-o`: NAME.svg, NAME.html or `-` (SVG on stdout).
    pub output: Option<String>,
    /// `--charts`: the charts to draw, comma separated.
    pub charts: Option<String>,
    /// The documents to draw.
    pub files: Vec<String>,
}

/// What `-o` asks for.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Format {
    Svg,
    Html,
}

/// Runs `respbench plot`: reads the documents and writes the charts or the report (to `out`, the
/// binary's stdout, for `-o -`). The error is the message for stderr.
pub fn run(opts: &PlotArgs, out: &mut dyn Write) -> Result<(), Error> {
    let output = opts.output.as_deref().ok_or_else(|| {
        Error::Refused("no output file: give -o FILE.svg (charts) or -o FILE.html (report)".into())
    })?;
    let format = format_of(output)?;
    let kinds = kinds(opts.charts.as_deref())?;
    if opts.files.is_empty() {
        return Err(Error::Refused(
            "no files to plot; usage: respbench plot RESULT.json… -o FILE.svg|FILE.html".into(),
        ));
    }
    let inputs = data::read(&opts.files)?;
    let charts = draw(&inputs, kinds.as_deref())?;
    let text = match format {
        Format::Svg => svg::document(&charts),
        Format::Html => html::report(&inputs, &charts),
    };
    let written = if output == "-" {
        out.write_all(text.as_bytes()).and_then(|_| out.flush())
    } else {
        crate::files::write_atomically(std::path::Path::new(output), text.as_bytes())
    };
    let output = if output == "-" { "the SVG" } else { output };
    written.map_err(|source| Error::Write { output: output.into(), source })
}

/// The charts of `kinds` (every one the inputs allow, by default) drawn from `inputs`.
fn draw(inputs: &[data::Input], kinds: Option<&[Kind]>) -> Result<Vec<svg::Chart>, Error> {
    let mut charts = Vec::new();
    for &kind in kinds.unwrap_or(&Kind::ALL) {
        // By default the capacity chart is a search's; `--rps` steps get it when asked for.
        if kind == Kind::Capacity && kinds.is_none() && inputs.iter().all(|i| i.capacity.is_empty()) {
            continue;
        }
        // The client-against-server chart when asked for (`--charts server`).
        if kind == Kind::Server && kinds.is_none() {
            continue;
        }
        let made = charts::build(kind, inputs);
        if made.is_empty() && kinds.is_some() {
            return Err(Error::Refused(format!("cannot draw the {} chart: {}", kind.name(), kind.missing())));
        }
        charts.extend(made);
    }
    if charts.is_empty() {
        return Err(Error::Refused(format!("nothing to plot: {}", Kind::Percentiles.missing())));
    }
    Ok(charts)
}

/// `respbench plot` of a document given as bytes, to SVG and to HTML, as the fuzz target drives
/// it (fuzz/fuzz_targets/document.rs): any bytes give the drawings or an error, never a panic.
pub fn draw_untrusted(bytes: &[u8]) -> Result<(String, String), Error> {
    let inputs = vec![data::input_of("input", 0, bytes)?];
    let charts = draw(&inputs, None)?;
    Ok((svg::document(&charts), html::report(&inputs, &charts)))
}

/// The format `-o` names by its extension: SVG unless `.html`; another extension (`.png`) is
/// refused rather than given SVG it does not expect.
fn format_of(output: &str) -> Result<Format, Error> {
    let ext = std::path::Path::new(output).extension().map(|e| e.to_string_lossy().to_ascii_lowercase());
    match ext.as_deref() {
        None | Some("svg") => Ok(Format::Svg),
        Some("html" | "htm") => Ok(Format::Html),
        Some(_) => Err(Error::Refused(format!(
            "-o {output}: name a .svg file (charts) or a .html file (report), or - for SVG on stdout"
        ))),
    }
}

/// The kinds `--charts` names, `None` without it.
fn kinds(list: Option<&str>) -> Result<Option<Vec<Kind>>, Error> {
    let Some(list) = list else { return Ok(None) };
    list.split(',')
        .map(|name| {
            Kind::ALL.into_iter().find(|k| k.name() == name.trim()).ok_or_else(|| {
                let names: Vec<&str> = Kind::ALL.iter().map(|k| k.name()).collect();
                Error::Refused(format!(
                    "--charts: unknown chart '{name}'; the charts are {}",
                    names.join(", ")
                ))
            })
        })
        .collect::<Result<Vec<_>, _>>()
        .map(Some)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_and_kinds() {
        assert_eq!(format_of("a.svg").ok(), Some(Format::Svg));
        assert_eq!(format_of("-").ok(), Some(Format::Svg));
        assert_eq!(format_of("out/latency").ok(), Some(Format::Svg));
        assert_eq!(format_of("R.HTML").ok(), Some(Format::Html));
        assert!(format_of("a.png").unwrap_err().to_string().contains(".svg"));
        assert_eq!(kinds(Some("rate, series")).ok(), Some(Some(vec![Kind::Rate, Kind::Series])));
        assert!(kinds(Some("pie"))
            .unwrap_err()
            .to_string()
            .contains("percentiles, service, rate, series, sweep, repeat, backends"));
        assert_eq!(kinds(None).ok(), Some(None));
    }
}
