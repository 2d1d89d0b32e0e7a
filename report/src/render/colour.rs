//! Colours and line styles: the palette, each policy's colour and dash (the same in every
//! chart), the fills of fault windows and the warm-up, and the grid.

use lblab_record::ORACLE;
use plotters::prelude::*;

/// Ten distinct colours (matplotlib's "tab10").
pub(crate) const CATEGORY: [RGBColor; 10] = [
    RGBColor(31, 119, 180),  // blue
    RGBColor(255, 127, 14),  // orange
    RGBColor(44, 160, 44),   // green
    RGBColor(214, 39, 40),   // red
    RGBColor(148, 103, 189), // purple
    RGBColor(140, 86, 75),   // brown
    RGBColor(227, 119, 194), // pink
    RGBColor(127, 127, 127), // grey
    RGBColor(188, 189, 34),  // olive
    RGBColor(23, 190, 207),  // cyan
];

/// A dash pattern: `(dash, gap)` in pixels.
pub(crate) type Dash = (u32, u32);

/// The dash of a line drawn over an identical earlier one, so that the earlier one shows
/// through the gaps.
pub(crate) const TWIN_DASH: Dash = (7, 7);

/// How a policy's line looks: its colour, and a dash pattern (`None`: solid).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct PolicyStyle {
    pub colour: RGBColor,
    pub dash: Option<Dash>,
}

/// The policies lblab knows, each with its own colour in every chart.
const KNOWN: [(&str, RGBColor); 11] = [
    ("round_robin", CATEGORY[0]),
    ("pick_first", CATEGORY[5]),
    ("least_request", CATEGORY[1]),
    ("od(least_request)", CATEGORY[8]),
    ("peak_ewma", CATEGORY[2]),
    ("od(peak_ewma)", CATEGORY[9]),
    ("envoy_peak_ewma", CATEGORY[4]),
    ("weighted_round_robin", CATEGORY[6]),
    ("tower_p2c_peak_ewma", CATEGORY[3]),
    (ORACLE, CATEGORY[7]),
    // Beyond tab10: near black, unlike any other policy's colour.
    ("finagle_peak_ewma", RGBColor(30, 30, 30)),
];

/// Dash patterns of variants (`peak_ewma(with_replacement)`): the known ablations get their own,
/// other variants one by the hash of what is in the brackets.
const VARIANT_DASHES: [Dash; 5] = [(10, 4), (3, 3), (14, 4), (6, 6), (2, 5)];
const KNOWN_VARIANTS: [(&str, usize); 6] = [
    ("with_replacement", 0),
    ("streams=outstanding", 1),
    ("streams=count", 2),
    ("streams=ignore", 3),
    ("on_read", 3),
    ("first_written", 4),
];

/// FNV-1a: a stable hash (std's hasher may change between Rust releases).
fn fnv1a(s: &str) -> u64 {
    s.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ b as u64).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

/// The colour and dash of the policy labelled `label`, the same in every chart whatever the
/// order of the policies: a fixed table for the policies lblab knows; a variant of one of them
/// (`peak_ewma(with_replacement)`, `od(peak_ewma(streams=count))`) has its base's colour and a
/// dash; any other label a colour from the palette by the hash of the label.
pub(crate) fn policy_style(label: &str) -> PolicyStyle {
    if let Some((_, c)) = KNOWN.iter().find(|(k, _)| *k == label) {
        return PolicyStyle {
            colour: *c,
            dash: None,
        };
    }
    if let Some(open) = label.find('(') {
        if let Some(args) = label[open + 1..].strip_suffix(')') {
            let base = &label[..open];
            let dash = KNOWN_VARIANTS
                .iter()
                .find(|(v, _)| *v == args || args.ends_with(&format!("={v}")))
                .map(|(_, i)| VARIANT_DASHES[*i])
                .unwrap_or(VARIANT_DASHES[(fnv1a(args) % VARIANT_DASHES.len() as u64) as usize]);
            if let Some((_, c)) = KNOWN.iter().find(|(k, _)| *k == base) {
                return PolicyStyle {
                    colour: *c,
                    dash: Some(dash),
                };
            }
            // A wrapper (`od(...)`) around a policy or variant lblab knows: the inner one's
            // colour, darker, dashed.
            let inner = policy_style(args);
            if KNOWN
                .iter()
                .any(|(k, _)| args == *k || args.starts_with(&format!("{k}(")))
            {
                return PolicyStyle {
                    colour: shade(inner.colour, 0.3),
                    dash: Some(inner.dash.unwrap_or(dash)),
                };
            }
        }
    }
    // Darker than the palette, so that it never takes the colour of a policy lblab knows.
    let h = fnv1a(label);
    let c = CATEGORY[(h % CATEGORY.len() as u64) as usize];
    PolicyStyle {
        colour: if (h / CATEGORY.len() as u64).is_multiple_of(2) {
            shade(c, 0.35)
        } else {
            shade(c, 0.55)
        },
        dash: None,
    }
}

/// The colour of the policy labelled `label` (see [`policy_style`]).
pub(crate) fn policy_colour(label: &str) -> RGBColor {
    policy_style(label).colour
}

/// `c` mixed with black: `amount` 0 keeps it, 1 is black.
pub(crate) fn shade(c: RGBColor, amount: f64) -> RGBColor {
    let m = |v: u8| (v as f64 * (1.0 - amount)).round() as u8;
    RGBColor(m(c.0), m(c.1), m(c.2))
}

/// The colour of the `i`-th backend that has a fault (red first: it is the one in trouble).
pub(crate) fn fault_colour(i: usize) -> RGBColor {
    const ORDER: [usize; 10] = [3, 0, 1, 4, 2, 5, 6, 9, 8, 7];
    CATEGORY[ORDER[i % ORDER.len()]]
}

/// Fill for fault windows.
pub(crate) const FAULT_FILL: RGBColor = RGBColor(214, 39, 40);
/// Opacity of fault-window fills.
pub(crate) const FAULT_ALPHA: f64 = 0.13;
/// Fill for the warm-up.
pub(crate) const WARMUP_FILL: RGBColor = RGBColor(120, 120, 120);
/// Opacity of the warm-up fill.
pub(crate) const WARMUP_ALPHA: f64 = 0.16;
/// Lines of backends without a fault.
pub(crate) const QUIET_GREY: RGBColor = RGBColor(190, 190, 190);

/// `c` mixed with white: `amount` 0 keeps it, 1 is white.
pub(crate) fn tint(c: RGBColor, amount: f64) -> RGBColor {
    let m = |v: u8| (v as f64 + (255.0 - v as f64) * amount).round() as u8;
    RGBColor(m(c.0), m(c.1), m(c.2))
}

/// `c` with opacity `alpha` composited over white, as an opaque colour. Shading drawn this way
/// looks the same in PNG and SVG and is deterministic.
pub(crate) fn over_white(c: RGBColor, alpha: f64) -> RGBColor {
    tint(c, 1.0 - alpha)
}

/// For each item, the index of the first earlier one equal to it (by `same`), if any: a line
/// that lies exactly on an earlier one hides it, so it is drawn dashed and its legend says
/// "(= other)".
pub(crate) fn twins<T>(items: &[T], same: impl Fn(&T, &T) -> bool) -> Vec<Option<usize>> {
    (0..items.len())
        .map(|i| (0..i).find(|&j| same(&items[j], &items[i])))
        .collect()
}

/// `label` marked as drawn on top of an identical `twin`.
pub(crate) fn twin_label(label: &str, twin: &str) -> String {
    format!("{label} (= {twin})")
}

/// Style of the grid: bold lines at labelled ticks, light lines between.
pub(crate) fn grid_bold() -> ShapeStyle {
    RGBColor(215, 215, 215).stroke_width(1)
}

/// Style of the light grid lines.
pub(crate) fn grid_light() -> ShapeStyle {
    RGBColor(238, 238, 238).stroke_width(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_policy_has_one_style_whatever_the_order() {
        // A function of the label alone: known labels have fixed, distinct colours.
        let known: Vec<RGBColor> = KNOWN.iter().map(|(k, _)| policy_colour(k)).collect();
        for (i, c) in known.iter().enumerate() {
            assert!(!known[..i].contains(c), "{} shares a colour", KNOWN[i].0);
        }
        assert_eq!(policy_style("round_robin").colour, CATEGORY[0]);
        assert_eq!(policy_style("peak_ewma").dash, None);
        // Variants: the base's colour, each known ablation its own dash.
        let v = policy_style("peak_ewma(with_replacement)");
        let w = policy_style("peak_ewma(streams=outstanding)");
        assert_eq!(v.colour, policy_colour("peak_ewma"));
        assert_eq!(w.colour, policy_colour("peak_ewma"));
        assert!(v.dash.is_some() && w.dash.is_some() && v.dash != w.dash);
        // A wrapper around a known variant: derived from it.
        assert!(policy_style("od(peak_ewma(streams=count))").dash.is_some());
        // Anything else: deterministic.
        assert_eq!(policy_style("my_policy"), policy_style("my_policy"));
        assert_eq!(fnv1a("a"), 0xaf63_dc4c_8601_ec8c);
    }

    /// The policy labels of a scenario file: the `name` of each `[[policies]]` table.
    fn labels(toml: &str) -> Vec<String> {
        let mut labels = Vec::new();
        let mut in_policy = false;
        for line in toml.lines().map(str::trim) {
            if line.starts_with('[') {
                in_policy = line == "[[policies]]";
            } else if let Some(v) = line.strip_prefix("name = \"").filter(|_| in_policy) {
                labels.push(v.split('"').next().unwrap_or_default().to_string());
            }
        }
        labels
    }

    #[test]
    fn no_two_policies_of_a_canonical_scenario_look_alike() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios");
        let mut checked = 0;
        for entry in std::fs::read_dir(&dir).unwrap().flatten() {
            let path = entry.path();
            if path.extension().is_none_or(|x| x != "toml") {
                continue;
            }
            let labels = labels(&std::fs::read_to_string(&path).unwrap());
            assert!(labels.len() > 1, "{}", path.display());
            for (i, a) in labels.iter().enumerate() {
                for b in &labels[..i] {
                    assert_ne!(
                        policy_style(a),
                        policy_style(b),
                        "{a} and {b} look alike in {}",
                        path.display()
                    );
                }
            }
            checked += 1;
        }
        assert!(checked >= 10);
        // A label lblab does not know never takes a known policy's colour.
        let known: Vec<RGBColor> = KNOWN.iter().map(|(_, c)| *c).collect();
        for label in ["my_policy", "a", "b", "c", "custom_lb", "x(y)"] {
            assert!(!known.contains(&policy_colour(label)), "{label}");
        }
    }

    #[test]
    fn twins_point_at_the_first_equal_item() {
        assert_eq!(
            twins(&[1, 2, 1, 1], |a, b| a == b),
            vec![None, None, Some(0), Some(0)]
        );
        assert_eq!(twin_label("od(x)", "x"), "od(x) (= x)");
    }
}
