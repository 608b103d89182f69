//! Aligned plain-text tables: a header row and data rows, columns padded to their widest cell.

/// A table being built, row by row.
pub(crate) struct Table {
    header: Vec<String>,
    rows: Vec<Vec<String>>,
    /// Columns aligned right (numbers).
    right: Vec<bool>,
}

impl Table {
    /// A table with these column titles, every column aligned left.
    pub(crate) fn new<const N: usize>(header: [&str; N]) -> Self {
        Table {
            header: header.iter().map(|h| h.to_string()).collect(),
            rows: Vec::new(),
            right: vec![false; N],
        }
    }

    /// Aligns the columns at `columns` (from 0) right.
    pub(crate) fn right(mut self, columns: &[usize]) -> Self {
        for &c in columns {
            self.right[c] = true;
        }
        self
    }

    /// Adds a row (missing cells are empty, extra ones dropped).
    pub(crate) fn row(&mut self, cells: Vec<String>) {
        self.rows.push(cells);
    }

    /// The table as text, one line per row, each ending in a newline, with no trailing spaces.
    pub(crate) fn render(&self) -> String {
        let n = self.header.len();
        let mut widths: Vec<usize> = self.header.iter().map(|h| width(h)).collect();
        for row in &self.rows {
            for (w, cell) in widths.iter_mut().zip(row) {
                *w = (*w).max(width(cell));
            }
        }
        let mut out = String::new();
        for row in std::iter::once(&self.header).chain(&self.rows) {
            let mut line = String::new();
            for (i, w) in widths.iter().copied().enumerate() {
                let cell = row.get(i).map(String::as_str).unwrap_or("");
                let pad = " ".repeat(w - width(cell));
                if i > 0 {
                    line.push_str("  ");
                }
                if self.right[i] {
                    line.push_str(&pad);
                    line.push_str(cell);
                } else {
                    line.push_str(cell);
                    if i + 1 < n {
                        line.push_str(&pad);
                    }
                }
            }
            out.push_str(line.trim_end());
            out.push('\n');
        }
        out
    }
}

/// A cell's width in characters (cells hold no control characters or wide glyphs that matter).
fn width(cell: &str) -> usize {
    cell.chars().count()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_pad_to_their_widest_cell_and_numbers_align_right() {
        let mut t = Table::new(["QUEUE", "PENDING", "NOTE"]).right(&[1]);
        t.row(vec!["email".into(), "12".into(), "ok".into()]);
        t.row(vec!["a".into(), "3".into(), String::new()]);
        assert_eq!(
            t.render(),
            "QUEUE  PENDING  NOTE\nemail       12  ok\na            3\n"
        );
    }

    #[test]
    fn widths_count_characters_not_bytes() {
        let mut t = Table::new(["A", "B"]);
        t.row(vec!["é…".into(), "x".into()]);
        assert_eq!(t.render(), "A   B\né…  x\n");
    }
}
