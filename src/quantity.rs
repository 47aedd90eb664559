//! Kubernetes resource quantities (`16`, `500m`, `64Gi`, `1.5e3`): validation with the API
//! server's grammar and a numeric value, so that `/dev/shm` can be compared with the memory
//! limit it counts against.

/// The value of a quantity in base units (bytes, cores), or `None` if it is not a quantity.
///
/// Grammar (apimachinery `resource.Quantity`): an optional sign, a decimal number, then a
/// binary suffix (`Ki`..`Ei`), a decimal suffix (`n u m k M G T P E`) or a decimal exponent
/// (`e3`, `E-2`).
pub fn parse(text: &str) -> Option<f64> {
    let digits_end = text
        .char_indices()
        .find(|&(i, c)| !(c.is_ascii_digit() || c == '.' || (i == 0 && (c == '+' || c == '-'))))
        .map_or(text.len(), |(i, _)| i);
    let (number, suffix) = text.split_at(digits_end);
    let unsigned = number.strip_prefix(['+', '-']).unwrap_or(number);
    let (int, frac) = unsigned.split_once('.').unwrap_or((unsigned, ""));
    if (int.is_empty() && frac.is_empty()) || frac.contains('.') {
        return None;
    }
    let value: f64 = number.parse().ok()?;
    let scale = match suffix {
        "" => 1.0,
        "Ki" => 1024f64,
        "Mi" => 1024f64.powi(2),
        "Gi" => 1024f64.powi(3),
        "Ti" => 1024f64.powi(4),
        "Pi" => 1024f64.powi(5),
        "Ei" => 1024f64.powi(6),
        "n" => 1e-9,
        "u" => 1e-6,
        "m" => 1e-3,
        "k" => 1e3,
        "M" => 1e6,
        "G" => 1e9,
        "T" => 1e12,
        "P" => 1e15,
        "E" => 1e18,
        exp => {
            let e = exp.strip_prefix(['e', 'E'])?;
            let digits = e.strip_prefix(['+', '-']).unwrap_or(e);
            if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
                return None;
            }
            10f64.powi(e.parse().ok()?)
        }
    };
    Some(value * scale)
}

#[cfg(test)]
mod tests {
    use super::parse;

    #[test]
    fn accepts_what_the_api_server_accepts() {
        assert_eq!(parse("16"), Some(16.0));
        assert_eq!(parse("500m"), Some(0.5));
        assert_eq!(parse("64Gi"), Some(64.0 * 1024f64.powi(3)));
        assert_eq!(parse("1.5e3"), Some(1500.0));
        assert_eq!(parse("1E-3"), Some(0.001));
        assert_eq!(parse(".5"), Some(0.5));
        assert_eq!(parse("2k"), Some(2000.0));
        assert_eq!(parse("+1"), Some(1.0));
    }

    #[test]
    fn refuses_the_rest() {
        for bad in [
            "", "Gi", "64GB", "64 Gi", "1.2.3", "ten", "1e", "1e+", "-", ".", "64gi", "1Ki2",
        ] {
            assert_eq!(parse(bad), None, "{bad}");
        }
    }
}
