//! Kubernetes resource quantities (`16`, `500m`, `64Gi`, `1.5e3`): validation with the API
//! server's grammar and a numeric value, so that `/dev/shm` can be compared with the memory
//! limit it counts against.

/// A quantity read by the grammar of apimachinery's `resource.Quantity`: an optional sign, a
/// decimal number, then a binary suffix (`Ki`..`Ei`), a decimal suffix (`n u m k M G T P E`)
/// or a decimal exponent (`e3`, `E-2`). Its value is `number × 2^binary × 10^decimal`.
struct Parts<'a> {
    negative: bool,
    int: &'a str,
    frac: &'a str,
    binary: u32,
    decimal: i32,
}

fn parts(text: &str) -> Option<Parts<'_>> {
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
    let (binary, decimal) = match suffix {
        "" => (0, 0),
        "Ki" => (10, 0),
        "Mi" => (20, 0),
        "Gi" => (30, 0),
        "Ti" => (40, 0),
        "Pi" => (50, 0),
        "Ei" => (60, 0),
        "n" => (0, -9),
        "u" => (0, -6),
        "m" => (0, -3),
        "k" => (0, 3),
        "M" => (0, 6),
        "G" => (0, 9),
        "T" => (0, 12),
        "P" => (0, 15),
        "E" => (0, 18),
        exp => {
            let e = exp.strip_prefix(['e', 'E'])?;
            let digits = e.strip_prefix(['+', '-']).unwrap_or(e);
            if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
                return None;
            }
            (0, e.parse().ok()?)
        }
    };
    Some(Parts {
        negative: number.starts_with('-'),
        int,
        frac,
        binary,
        decimal,
    })
}

/// The value of a quantity in base units (bytes, cores), or `None` if it is not a quantity.
pub fn parse(text: &str) -> Option<f64> {
    let p = parts(text)?;
    // Most quantities are whole (`16`, `64Gi`): their digits are the number as written.
    let number: f64 = if p.frac.is_empty() {
        p.int.parse().ok()?
    } else {
        format!("{}.{}", p.int, p.frac).parse().ok()?
    };
    let value = number * 2f64.powi(p.binary as i32) * 10f64.powi(p.decimal);
    Some(if p.negative { -value } else { value })
}

/// The value as a whole number of thousandths of its unit (millicores, millibytes), rounded
/// up as the scheduler rounds a request up: exact, in integers (`None` past `i128`).
pub fn milli(text: &str) -> Option<i128> {
    scaled(text, 3)
}

/// The value as a whole number of billionths of its unit, the finest a `resource.Quantity`
/// keeps (finer is rounded up, as apimachinery does): exact, in integers (`None` past `i128`).
pub fn nano(text: &str) -> Option<i128> {
    scaled(text, 9)
}

/// The value times `10^places`, rounded up.
fn scaled(text: &str, places: i32) -> Option<i128> {
    let p = parts(text)?;
    let joined;
    let digits = if p.frac.is_empty() {
        p.int
    } else {
        joined = format!("{}{}", p.int, p.frac);
        &joined
    };
    let digits = digits.trim_start_matches('0');
    if digits.len() > 30 {
        return None;
    }
    let mantissa: i128 = if digits.is_empty() {
        0
    } else {
        digits.parse().ok()?
    };
    // mantissa / 10^frac_len, times 2^binary, times 10^decimal, times 10^places.
    let exponent = p
        .decimal
        .checked_add(places)?
        .checked_sub(i32::try_from(p.frac.len()).ok()?)?;
    let mut value = mantissa.checked_mul(1i128.checked_shl(p.binary)?)?;
    if exponent >= 0 {
        value = value.checked_mul(10i128.checked_pow(exponent.unsigned_abs())?)?;
    } else {
        let divisor = 10i128
            .checked_pow(exponent.unsigned_abs())
            .unwrap_or(i128::MAX);
        value = value / divisor + i128::from(value % divisor != 0);
    }
    Some(if p.negative { -value } else { value })
}

#[cfg(test)]
mod tests {
    use super::{milli, parse};

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
        assert_eq!(parse("5."), Some(5.0));
        assert_eq!(parse("007"), Some(7.0));
        assert_eq!(milli("5."), Some(5000));
    }

    #[test]
    fn refuses_the_rest() {
        for bad in [
            "", "Gi", "64GB", "64 Gi", "1.2.3", "ten", "1e", "1e+", "-", ".", "64gi", "1Ki2",
        ] {
            assert_eq!(parse(bad), None, "{bad}");
            assert_eq!(milli(bad), None, "{bad}");
        }
    }

    /// Both readings agree, one exact and one in floating point.
    #[test]
    fn milli_is_parse_in_thousandths_rounded_up() {
        for q in [
            "16", "500m", "64Gi", "1.5e3", "1E-3", ".5", "2k", "+1", "-2", "1500u", "0.7",
        ] {
            let float = parse(q).unwrap() * 1000.0;
            let exact = milli(q).unwrap() as f64;
            assert!(
                (exact - float.ceil()).abs() <= 1.0,
                "{q}: {exact} vs {float}"
            );
        }
    }
}
