//! Bar charts as SVG, drawn with plotters' SVG backend: a bar per configuration at the median
//! of its runs, a line from the least to the most, and the median written above it.

use anyhow::Result;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use crate::results::{thousands, Spread};

/// The size of every chart, in pixels.
const WIDTH: u32 = 960;
const HEIGHT: u32 = 500;
const FONT: &str = "sans-serif";
const INK: RGBColor = RGBColor(0x33, 0x33, 0x33);

/// dbqueue's bars, in the order of its configurations.
pub(crate) const OURS: [RGBColor; 3] = [
    RGBColor(0x4C, 0x8B, 0xC9),
    RGBColor(0x1F, 0x4E, 0x79),
    RGBColor(0x8F, 0xB8, 0xE0),
];
/// The other job queues' bars.
pub(crate) const PEER: RGBColor = RGBColor(0xE0, 0x89, 0x2C);
/// The hand-written SQL's bars.
pub(crate) const HAND: RGBColor = RGBColor(0xA6, 0xA6, 0xA6);
/// The series of a chart with several (a legend tells them apart).
pub(crate) const SERIES: [RGBColor; 6] = [
    RGBColor(0x4C, 0x8B, 0xC9),
    RGBColor(0x1F, 0x4E, 0x79),
    RGBColor(0xE0, 0x89, 0x2C),
    RGBColor(0xA6, 0xA6, 0xA6),
    RGBColor(0x6B, 0x6B, 0x6B),
    RGBColor(0x9C, 0x6A, 0xB8),
];

/// One bar.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Bar {
    pub(crate) spread: Spread,
    pub(crate) colour: RGBColor,
}

/// A bar chart: groups along the x axis, up to one bar per series in each group.
#[derive(Clone, Debug)]
pub(crate) struct Bars {
    pub(crate) title: String,
    pub(crate) y_desc: String,
    /// Each group's label, a line per entry.
    pub(crate) groups: Vec<Vec<String>>,
    /// The series' names and colours; a legend shows them when there are two or more.
    pub(crate) series: Vec<(String, RGBColor)>,
    /// `bars[group][series]`; `None` where that series has no value in the group.
    pub(crate) bars: Vec<Vec<Option<Bar>>>,
    /// A line under the chart (what the bars and lines are).
    pub(crate) note: String,
    /// Written at the foot of a group that has no bar at all (empty: nothing).
    pub(crate) empty: String,
}

/// The chart as an SVG document.
pub(crate) fn render(chart: &Bars) -> Result<String> {
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (WIDTH, HEIGHT)).into_drawing_area();
        root.fill(&WHITE)?;
        let most = chart
            .bars
            .iter()
            .flatten()
            .flatten()
            .map(|b| b.spread.max)
            .fold(0.0, f64::max);
        let top = if most > 0.0 { most * 1.15 } else { 1.0 };
        let groups = chart.groups.len().max(1);
        let lines = chart.groups.iter().map(Vec::len).max().unwrap_or(1) as u32;
        let legend = legend_layout(chart);
        let legend_rows = legend.iter().map(|(_, row, _)| row + 1).max().unwrap_or(0) as u32;
        let mut ctx = ChartBuilder::on(&root)
            .caption(&chart.title, (FONT, 20).into_font().color(&INK))
            .margin(14)
            .margin_right(24)
            .x_label_area_size(18 * lines + 30 + 20 * legend_rows)
            .y_label_area_size(80)
            .build_cartesian_2d(0f64..groups as f64, 0f64..top)?;
        let format = |v: &f64| thousands(*v);
        ctx.configure_mesh()
            .disable_x_mesh()
            .x_labels(0)
            .y_labels(8)
            .y_desc(chart.y_desc.as_str())
            .y_label_formatter(&format)
            .label_style((FONT, 13).into_font().color(&INK))
            .axis_desc_style((FONT, 14).into_font().color(&INK))
            .bold_line_style(RGBColor(0xE4, 0xE4, 0xE4))
            .light_line_style(WHITE)
            .axis_style(INK)
            .draw()?;

        let slots = chart.series.len().max(1) as f64;
        let width = 0.76 / slots;
        let value_style = TextStyle::from((FONT, 12).into_font())
            .color(&INK)
            .pos(Pos::new(HPos::Center, VPos::Bottom));
        for (g, row) in chart.bars.iter().enumerate() {
            if row.iter().all(Option::is_none) && !chart.empty.is_empty() {
                let (px, py) = ctx.backend_coord(&(g as f64 + 0.5, 0.0));
                root.draw(&Text::new(chart.empty.as_str(), (px, py - 4), &value_style))?;
            }
            for (s, bar) in row.iter().enumerate() {
                let Some(bar) = bar else { continue };
                let x0 = g as f64 + 0.12 + s as f64 * width + width * 0.08;
                let x1 = x0 + width * 0.84;
                let mid = (x0 + x1) / 2.0;
                let Spread {
                    median, min, max, ..
                } = bar.spread;
                ctx.draw_series(std::iter::once(Rectangle::new(
                    [(x0, 0.0), (x1, median)],
                    bar.colour.filled(),
                )))?;
                if max > min {
                    let cap = (x1 - x0) * 0.2;
                    let line = INK.stroke_width(1);
                    ctx.draw_series([
                        PathElement::new(vec![(mid, min), (mid, max)], line),
                        PathElement::new(vec![(mid - cap, min), (mid + cap, min)], line),
                        PathElement::new(vec![(mid - cap, max), (mid + cap, max)], line),
                    ])?;
                }
                let (px, py) = ctx.backend_coord(&(mid, max.max(median)));
                root.draw(&Text::new(thousands(median), (px, py - 3), &value_style))?;
            }
        }

        let label_style = TextStyle::from((FONT, 13).into_font())
            .color(&INK)
            .pos(Pos::new(HPos::Center, VPos::Top));
        for (g, label) in chart.groups.iter().enumerate() {
            let (px, py) = ctx.backend_coord(&(g as f64 + 0.5, 0.0));
            for (i, line) in label.iter().enumerate() {
                root.draw(&Text::new(
                    line.as_str(),
                    (px, py + 8 + 17 * i as i32),
                    &label_style,
                ))?;
            }
        }

        let (_, axis) = ctx.backend_coord(&(0.0, 0.0));
        let legend_style = TextStyle::from((FONT, 13).into_font())
            .color(&INK)
            .pos(Pos::new(HPos::Left, VPos::Center));
        for (i, row, x) in legend {
            let (name, colour) = &chart.series[i];
            let y = axis + 18 * lines as i32 + 16 + 20 * row as i32;
            root.draw(&Rectangle::new([(x, y), (x + 12, y + 12)], colour.filled()))?;
            root.draw(&Text::new(name.as_str(), (x + 18, y + 6), &legend_style))?;
        }

        let note_style = TextStyle::from((FONT, 12).into_font())
            .color(&INK)
            .pos(Pos::new(HPos::Left, VPos::Bottom));
        root.draw(&Text::new(
            chart.note.as_str(),
            (14, HEIGHT as i32 - 6),
            &note_style,
        ))?;
        root.present()?;
    }
    Ok(svg)
}

/// Where each series' entry of the legend goes under the chart, when it has two series or
/// more: (series, row, x), rows filled left to right.
fn legend_layout(chart: &Bars) -> Vec<(usize, usize, i32)> {
    if chart.series.len() < 2 {
        return Vec::new();
    }
    let (left, right) = (90, WIDTH as i32 - 24);
    let mut out = Vec::new();
    let (mut row, mut x) = (0, left);
    for (i, (name, _)) in chart.series.iter().enumerate() {
        // About 7 pixels a character at 13 pixels, the swatch and a gap.
        let width = 18 + 7 * name.chars().count() as i32 + 28;
        if x + width > right && x > left {
            row += 1;
            x = left;
        }
        out.push((i, row, x));
        x += width;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spread(v: &[f64]) -> Spread {
        Spread::of(v).unwrap()
    }

    /// The `<rect` elements filled with a colour.
    fn filled(svg: &str, c: RGBColor) -> usize {
        let fill = format!("fill=\"#{:02X}{:02X}{:02X}\"", c.0, c.1, c.2);
        svg.split("<rect")
            .skip(1)
            .filter(|r| r.split('>').next().unwrap_or("").contains(&fill))
            .count()
    }

    #[test]
    fn a_chart_has_every_name_and_a_bar_per_value() {
        let chart = Bars {
            title: "Drain of 1,000 jobs".into(),
            y_desc: "jobs/s".into(),
            groups: vec![
                vec!["dbqueue".into(), "worker defaults".into()],
                vec!["Graphile Worker".into(), "best configuration".into()],
                vec!["Oban for Python".into()],
                vec!["PgQueuer".into()],
            ],
            series: vec![("PostgreSQL".into(), OURS[0])],
            bars: vec![
                vec![Some(Bar {
                    spread: spread(&[20_000.0, 21_000.0, 19_000.0]),
                    colour: OURS[0],
                })],
                vec![Some(Bar {
                    spread: spread(&[18_000.0]),
                    colour: PEER,
                })],
                vec![Some(Bar {
                    spread: spread(&[800.0, 900.0]),
                    colour: PEER,
                })],
                vec![None],
            ],
            note: "median of the reps".into(),
            empty: "failed".into(),
        };
        let svg = render(&chart).unwrap();
        assert!(svg.starts_with("<svg"), "{}", &svg[..svg.len().min(200)]);
        for name in [
            "dbqueue",
            "worker defaults",
            "Graphile Worker",
            "Oban for Python",
            "Drain of 1,000 jobs",
            "20,000",
            "18,000",
            "850",
            "PgQueuer",
            "failed",
        ] {
            assert!(svg.contains(name), "{name} is not in the chart");
        }
        assert_eq!(filled(&svg, OURS[0]), 1);
        assert_eq!(filled(&svg, PEER), 2);
    }

    #[test]
    fn a_chart_of_several_series_has_a_legend_and_leaves_gaps() {
        let bar = |v: f64, colour| {
            Some(Bar {
                spread: spread(&[v]),
                colour,
            })
        };
        let chart = Bars {
            title: "Default and tuned".into(),
            y_desc: "jobs/s".into(),
            groups: vec![vec!["SQLite".into()], vec!["PostgreSQL".into()]],
            series: vec![
                ("worker defaults".into(), SERIES[0]),
                ("prefetch 500".into(), SERIES[1]),
            ],
            bars: vec![
                vec![bar(30_000.0, SERIES[0]), None],
                vec![bar(40_000.0, SERIES[0]), bar(50_000.0, SERIES[1])],
            ],
            note: String::new(),
            empty: String::new(),
        };
        let svg = render(&chart).unwrap();
        for name in ["SQLite", "PostgreSQL", "worker defaults", "prefetch 500"] {
            assert!(svg.contains(name), "{name} is not in the chart");
        }
        // A bar per value, and a swatch per series in the legend.
        assert_eq!(filled(&svg, SERIES[0]), 2 + 1);
        assert_eq!(filled(&svg, SERIES[1]), 1 + 1);
    }
}
