//! A run folder as one self-contained HTML page (`report.html`): its tables, and its SVG charts
//! inlined (no links to other files, no scripts, no fonts to fetch), so that it can be mailed or
//! attached to a ticket and opened anywhere.

use std::path::Path;

use crate::{ChartName, Format, ReportError};

/// A table for [`html_page`]: a title, a header row and rows of cells (text, escaped here).
#[derive(Debug, Clone, Default)]
pub struct HtmlTable {
    /// The heading above the table.
    pub title: String,
    /// The header cells.
    pub header: Vec<String>,
    /// The rows.
    pub rows: Vec<Vec<String>>,
}

/// The page: `title`, the `tables` in order, then each of the run's charts
/// ([`ChartName::RUN`]) found as SVG in `dir`, inlined. A chart that is missing (not drawn) is
/// left out; one that cannot be read is an error naming it.
pub fn html_page(dir: &Path, title: &str, tables: &[HtmlTable]) -> Result<String, ReportError> {
    let mut out = String::new();
    out += "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n";
    out += &format!("<title>{}</title>\n", escape(title));
    out += "<style>body{font-family:sans-serif;margin:2em;max-width:80em}\
            table{border-collapse:collapse;margin-bottom:1.5em}\
            th,td{border:1px solid #ccc;padding:.25em .6em;text-align:right}\
            th:first-child,td:first-child{text-align:left}\
            figure{margin:0 0 2em 0}svg{max-width:100%;height:auto}</style>\n";
    out += "</head>\n<body>\n";
    out += &format!("<h1>{}</h1>\n", escape(title));
    for t in tables {
        out += &format!("<h2>{}</h2>\n<table>\n<tr>", escape(&t.title));
        for h in &t.header {
            out += &format!("<th>{}</th>", escape(h));
        }
        out += "</tr>\n";
        for row in &t.rows {
            out += "<tr>";
            for cell in row {
                out += &format!("<td>{}</td>", escape(cell));
            }
            out += "</tr>\n";
        }
        out += "</table>\n";
    }
    for chart in ChartName::RUN {
        let path = chart.path(dir, Format::Svg);
        let svg = match std::fs::read_to_string(&path) {
            Ok(svg) => svg,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(source) => return Err(ReportError::Io { file: path, source }),
        };
        // The SVG's own XML declaration is not allowed inside HTML.
        let body = match svg.find("<svg") {
            Some(i) => &svg[i..],
            None => svg.as_str(),
        };
        out += &format!(
            "<figure>\n<figcaption>{}</figcaption>\n{body}\n</figure>\n",
            escape(&chart.stem())
        );
    }
    out += "</body>\n</html>\n";
    Ok(out)
}

/// Text escaped for HTML.
fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn charts_are_inlined_and_text_escaped() {
        let dir = std::env::temp_dir().join(format!("lblab-html-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            ChartName::Spectrum.path(&dir, Format::Svg),
            "<?xml version=\"1.0\"?>\n<svg><text>p</text></svg>",
        )
        .unwrap();
        let table = HtmlTable {
            title: "a<b".into(),
            header: vec!["policy".into()],
            rows: vec![vec!["r&r".into()]],
        };
        let page = html_page(&dir, "t", &[table]).unwrap();
        assert!(page.contains("<svg><text>p</text></svg>"), "{page}");
        assert!(!page.contains("<?xml"), "{page}");
        assert!(
            page.contains("a&lt;b") && page.contains("r&amp;r"),
            "{page}"
        );
        std::fs::remove_dir_all(&dir).ok();
    }
}
