//! Column-aligned text tables, as Pulumi's commands print them: a header
//! row, then one row per item, columns padded to their widest cell and
//! separated by two spaces.

use std::fmt;

#[derive(Debug, Clone)]
pub struct Table<const N: usize> {
    header: [String; N],
    rows: Vec<[String; N]>,
}

impl<const N: usize> Table<N> {
    pub fn new(header: [&str; N]) -> Table<N> {
        Table {
            header: header.map(str::to_owned),
            rows: Vec::new(),
        }
    }

    pub fn row(&mut self, row: [String; N]) {
        self.rows.push(row);
    }
}

impl<const N: usize> fmt::Display for Table<N> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut widths = [0usize; N];
        for row in std::iter::once(&self.header).chain(&self.rows) {
            for (w, cell) in widths.iter_mut().zip(row) {
                *w = (*w).max(cell.chars().count());
            }
        }
        for row in std::iter::once(&self.header).chain(&self.rows) {
            let mut line = String::new();
            for (i, cell) in row.iter().enumerate() {
                if i + 1 < N {
                    line.push_str(&format!("{cell:<width$}  ", width = widths[i]));
                } else {
                    line.push_str(cell);
                }
            }
            writeln!(f, "{}", line.trim_end())?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_line_up() {
        let mut t = Table::new(["NAME", "KIND"]);
        t.row(["random".into(), "resource".into()]);
        t.row(["a".into(), String::new()]);
        assert_eq!(t.to_string(), "NAME    KIND\nrandom  resource\na\n");
    }
}
