//! Kubernetes' sets extension (`sets.contains`, `sets.equivalent`, `sets.intersects`) and
//! three of its own CEL libraries, which the `cel` crate does not ship: the lists
//! library (`isSorted`, `sum`, `min`, `max`, `indexOf`, `lastIndexOf` on any list), the regex
//! library (`find`, `findAll` on strings, in RE2 syntax as Go's `regexp`) and the quantity
//! library (`quantity('64Gi')`, `isQuantity`, comparisons, `add`, `sub`, `asInteger`...).
//! Their semantics are those the Kubernetes CEL documentation gives: `min` and `max` of an
//! empty list are errors, `sum` of one is 0, a list of values that do not compare is an error,
//! and quantities are exact to a billionth of their unit, as `resource.Quantity` keeps them.
//!
//! A function that fails on the value it is given (`quantity('x')`, `[].min()`) fails with
//! [`refused`]: the error the API server reports, in its words, which [`refusal`] tells apart
//! from the errors of the engine itself (a value it cannot represent, a function it lacks),
//! which leave a rule unevaluated. The values of Kubernetes' own types ([`opaque`]) are the
//! crate's opaque values, so that they compare, and survive being bound to a variable.

use cel::common::types::{
    CelBool, CelDouble, CelInt, CelList, CelString, DYN_TYPE, INT_TYPE, LIST_TYPE, STRING_TYPE,
    Type,
};
use cel::common::value::{CowVal, StaticVal, Val};
use cel::objects::{Opaque, Value};
use cel::{DeclarationError, Env, ExecutionError};
use std::cmp::Ordering;
use std::sync::Arc;

/// The mark of the errors [`refused`] makes, before the function's name.
const REFUSED: &str = "kubernetes:";

/// A function's failure on its arguments, with the API server's message: the rule fails with
/// it, as on the API server.
pub(super) fn refused(function: &str, message: impl ToString) -> ExecutionError {
    ExecutionError::function_error(&format!("{REFUSED}{function}"), message)
}

/// The API server's message of an error made by [`refused`]; `None` for the engine's own.
pub(super) fn refusal(error: &ExecutionError) -> Option<&str> {
    match error {
        ExecutionError::FunctionError { function, message } if function.starts_with(REFUSED) => {
            Some(message)
        }
        _ => None,
    }
}

/// A value of one of Kubernetes' CEL types (`net.IP`, `kubernetes.URL`...), as an opaque value
/// of the crate: of the type its [`Opaque::runtime_type_name`] names, equal to another by `Eq`.
pub(super) fn opaque<'b, 'v>(value: impl Opaque) -> CowVal<'b, 'v> {
    let boxed: Box<dyn Val> =
        Box::<dyn Val>::try_from(Value::Opaque(Arc::new(value))).expect("an opaque value converts");
    CowVal::Owned(boxed)
}

/// The value of a Kubernetes type that `value` holds (see [`opaque`]).
pub(super) fn the<T: Opaque + Clone>(value: &dyn Val, function: &str) -> Result<T, ExecutionError> {
    match Value::try_from(value) {
        Ok(Value::Opaque(held)) => held.downcast_ref::<T>().cloned(),
        _ => None,
    }
    .ok_or_else(|| error(function, "unexpected argument type"))
}

/// The string argument of a function.
pub(super) fn string_arg<'a>(
    value: &'a dyn Val,
    function: &str,
) -> Result<&'a str, ExecutionError> {
    text(value, function)
}

pub(super) fn boolean<'b, 'v>(b: bool) -> CowVal<'b, 'v> {
    owned(CelBool::from(b))
}

pub(super) fn string<'b, 'v>(s: String) -> CowVal<'b, 'v> {
    owned(CelString::from(s))
}

pub(super) fn int<'b, 'v>(n: i64) -> CowVal<'b, 'v> {
    owned(CelInt::from(n))
}

/// The lists library.
pub fn lists(env: &mut Env) -> Result<(), DeclarationError> {
    env.add_member_overload("isSorted", "list_is_sorted", LIST_TYPE, vec![], is_sorted)?;
    env.add_member_overload("sum", "list_sum", LIST_TYPE, vec![], sum)?;
    env.add_member_overload("min", "list_min", LIST_TYPE, vec![], min)?;
    env.add_member_overload("max", "list_max", LIST_TYPE, vec![], max)?;
    env.add_member_overload(
        "indexOf",
        "list_index_of",
        LIST_TYPE,
        vec![DYN_TYPE],
        index_of,
    )?;
    env.add_member_overload(
        "lastIndexOf",
        "list_last_index_of",
        LIST_TYPE,
        vec![DYN_TYPE],
        last_index_of,
    )?;
    Ok(())
}

/// The regex library.
pub fn regex(env: &mut Env) -> Result<(), DeclarationError> {
    env.add_member_overload("find", "string_find", STRING_TYPE, vec![STRING_TYPE], find)?;
    env.add_member_overload(
        "findAll",
        "string_find_all",
        STRING_TYPE,
        vec![STRING_TYPE],
        find_all,
    )?;
    env.add_member_overload(
        "findAll",
        "string_find_all_n",
        STRING_TYPE,
        vec![STRING_TYPE, INT_TYPE],
        find_all,
    )?;
    Ok(())
}

/// The sets extension (cel-go's `ext.Sets`, which Kubernetes enables): lists as sets.
pub fn sets(env: &mut Env) -> Result<(), DeclarationError> {
    let pairs: [(&str, Function); 3] = [
        ("sets.contains", sets_contains),
        ("sets.equivalent", sets_equivalent),
        ("sets.intersects", sets_intersects),
    ];
    for (name, op) in pairs {
        env.add_overload(name, name, vec![LIST_TYPE, LIST_TYPE], op)?;
    }
    Ok(())
}

/// Whether every element of `b` is in `a` (by CEL equality: `1 == 1.0`).
fn holds_all(a: &[&dyn Val], b: &[&dyn Val]) -> bool {
    b.iter().all(|x| a.iter().any(|y| y.equals(*x)))
}

/// The elements of a list.
type Elements<'b, 'v> = Vec<&'b (dyn Val + 'v)>;

fn two_lists<'b, 'v>(
    args: &'b [CowVal<'b, 'v>],
    function: &str,
) -> Result<(Elements<'b, 'v>, Elements<'b, 'v>), ExecutionError> {
    Ok((
        elements(args[0].as_ref(), function)?,
        elements(args[1].as_ref(), function)?,
    ))
}

fn sets_contains<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let answer = {
        let (a, b) = two_lists(&args, "sets.contains")?;
        holds_all(&a, &b)
    };
    Ok(owned(CelBool::from(answer)))
}

fn sets_equivalent<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let answer = {
        let (a, b) = two_lists(&args, "sets.equivalent")?;
        holds_all(&a, &b) && holds_all(&b, &a)
    };
    Ok(owned(CelBool::from(answer)))
}

fn sets_intersects<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let answer = {
        let (a, b) = two_lists(&args, "sets.intersects")?;
        b.iter().any(|x| a.iter().any(|y| y.equals(*x)))
    };
    Ok(owned(CelBool::from(answer)))
}

/// The quantity library.
pub fn quantity(env: &mut Env) -> Result<(), DeclarationError> {
    env.add_type(QUANTITY.to_owned())?;
    env.add_overload(
        "quantity",
        "string_to_quantity",
        vec![STRING_TYPE],
        to_quantity,
    )?;
    env.add_overload(
        "isQuantity",
        "is_quantity_string",
        vec![STRING_TYPE],
        is_quantity,
    )?;
    let q = || QUANTITY.to_owned();
    let unary: [(&str, Function); 4] = [
        ("isInteger", q_is_integer),
        ("asInteger", q_as_integer),
        ("asApproximateFloat", q_as_float),
        ("sign", q_sign),
    ];
    methods(env, "quantity", q, Vec::new, &unary)?;
    let binary: [(&str, Function); 5] = [
        ("isGreaterThan", q_greater),
        ("isLessThan", q_less),
        ("compareTo", q_compare),
        ("add", q_add),
        ("sub", q_sub),
    ];
    methods(env, "quantity", q, || vec![q()], &binary)?;
    for (name, op) in [("add", q_add as Function), ("sub", q_sub)] {
        let id = format!("quantity_{name}_int");
        env.add_member_overload(name, &id, q(), vec![INT_TYPE], op)?;
    }
    Ok(())
}

pub(super) type Function = cel::common::functions::Function;

/// Methods of `receiver()` that take `args()`, each declared as the overload
/// `<prefix>_<name>` (a `Type` is made anew for each declaration: it is not `Clone`).
pub(super) fn methods(
    env: &mut Env,
    prefix: &str,
    receiver: impl Fn() -> Type,
    args: impl Fn() -> Vec<Type>,
    methods: &[(&str, Function)],
) -> Result<(), DeclarationError> {
    for &(name, op) in methods {
        env.add_member_overload(name, &format!("{prefix}_{name}"), receiver(), args(), op)?;
    }
    Ok(())
}

static QUANTITY: Type = Type::new_unspecified_type("kubernetes.Quantity");

/// A `resource.Quantity`: its value in billionths of its unit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct Quantity(i128);

impl Val for Quantity {
    fn get_type(&self) -> &Type {
        <Self as Val>::cel_type()
    }
    fn cel_type() -> &'static Type {
        &QUANTITY
    }
    fn equals(&self, other: &dyn Val) -> bool {
        other.downcast_ref::<Quantity>() == Some(self)
    }
    fn clone_as_boxed<'v>(&self) -> Box<dyn Val + 'v> {
        Box::new(*self)
    }
    fn as_any(&self) -> Option<&dyn std::any::Any> {
        Some(self)
    }
}
impl StaticVal for Quantity {}

const NANO: i128 = 1_000_000_000;

fn the_quantity(value: &dyn Val, function: &str) -> Result<Quantity, ExecutionError> {
    value
        .downcast_ref::<Quantity>()
        .copied()
        .ok_or_else(|| error(function, "expected a quantity"))
}

/// The other operand of `add` and `sub`: a quantity, or an int of whole units.
fn operand(value: &dyn Val, function: &str) -> Result<i128, ExecutionError> {
    if let Ok(n) = <&i64>::try_from(value) {
        return Ok(i128::from(*n) * NANO);
    }
    Ok(the_quantity(value, function)?.0)
}

fn to_quantity<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let text = text(args[0].as_ref(), "quantity")?;
    if let Some(why) = quantity_error(text) {
        return Err(refused("quantity", why));
    }
    // A quantity the API server reads that is not kept here (past `i128` billionths, or a
    // form `kube::quantity` does not read): not evaluated.
    let value = crate::kube::quantity::nano(text)
        .ok_or_else(|| error("quantity", "a quantity not represented here"))?;
    Ok(owned(Quantity(value)))
}

fn is_quantity<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let text = text(args[0].as_ref(), "isQuantity")?;
    Ok(owned(CelBool::from(quantity_error(text).is_none())))
}

/// Why apimachinery's `resource.ParseQuantity` refuses `text`, in its words: the shape of
/// `^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$` as its scanner reads it (a number, suffix
/// letters, an exponent's sign and digits), then a suffix it knows.
fn quantity_error(text: &str) -> Option<&'static str> {
    const FORMAT: &str = "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'";
    const SUFFIX: &str = "unable to parse quantity's suffix";
    if text.is_empty() {
        return Some(FORMAT);
    }
    let b = text.as_bytes();
    let mut at = usize::from(matches!(b[0], b'+' | b'-'));
    // Only a sign and zeros: zero.
    if b[at..].iter().all(|&c| c == b'0') {
        return None;
    }
    while at < b.len() && b[at].is_ascii_digit() {
        at += 1;
    }
    if at < b.len() && b[at] == b'.' {
        at += 1;
        while at < b.len() && b[at].is_ascii_digit() {
            at += 1;
        }
    }
    let suffix = &text[at..];
    let letters = suffix
        .bytes()
        .take_while(|c| b"eEinumkKMGTP".contains(c))
        .count();
    let rest = &suffix[letters..];
    let rest = rest.strip_prefix(['+', '-']).unwrap_or(rest);
    if !rest.bytes().all(|c| c.is_ascii_digit()) {
        return Some(FORMAT);
    }
    let known = matches!(
        suffix,
        "" | "n"
            | "u"
            | "m"
            | "k"
            | "M"
            | "G"
            | "T"
            | "P"
            | "E"
            | "Ki"
            | "Mi"
            | "Gi"
            | "Ti"
            | "Pi"
            | "Ei"
    ) || (suffix.len() > 1
        && suffix.starts_with(['e', 'E'])
        && suffix[1..].parse::<i64>().is_ok());
    (!known).then_some(SUFFIX)
}

fn q_is_integer<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let q = the_quantity(args[0].as_ref(), "isInteger")?;
    let whole = q.0 % NANO == 0 && i64::try_from(q.0 / NANO).is_ok();
    Ok(owned(CelBool::from(whole)))
}

fn q_as_integer<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let q = the_quantity(args[0].as_ref(), "asInteger")?;
    match i64::try_from(q.0 / NANO) {
        Ok(n) if q.0 % NANO == 0 => Ok(owned(CelInt::from(n))),
        _ => Err(refused("asInteger", "cannot convert value to integer")),
    }
}

fn q_as_float<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let q = the_quantity(args[0].as_ref(), "asApproximateFloat")?;
    Ok(owned(CelDouble::from(q.0 as f64 / NANO as f64)))
}

fn q_sign<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let q = the_quantity(args[0].as_ref(), "sign")?;
    Ok(owned(CelInt::from(q.0.signum() as i64)))
}

fn order(args: &[CowVal<'_, '_>], function: &str) -> Result<Ordering, ExecutionError> {
    let a = the_quantity(args[0].as_ref(), function)?;
    let b = the_quantity(args[1].as_ref(), function)?;
    Ok(a.cmp(&b))
}

fn q_greater<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let greater = order(&args, "isGreaterThan")? == Ordering::Greater;
    Ok(owned(CelBool::from(greater)))
}

fn q_less<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let less = order(&args, "isLessThan")? == Ordering::Less;
    Ok(owned(CelBool::from(less)))
}

fn q_compare<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let n = match order(&args, "compareTo")? {
        Ordering::Less => -1,
        Ordering::Equal => 0,
        Ordering::Greater => 1,
    };
    Ok(owned(CelInt::from(n)))
}

fn q_add<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let a = the_quantity(args[0].as_ref(), "add")?;
    let b = operand(args[1].as_ref(), "add")?;
    let sum = a.0.checked_add(b).ok_or_else(|| error("add", "overflow"))?;
    Ok(owned(Quantity(sum)))
}

fn q_sub<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let a = the_quantity(args[0].as_ref(), "sub")?;
    let b = operand(args[1].as_ref(), "sub")?;
    let difference = a.0.checked_sub(b).ok_or_else(|| error("sub", "overflow"))?;
    Ok(owned(Quantity(difference)))
}

fn error(function: &str, message: impl ToString) -> ExecutionError {
    ExecutionError::function_error(function, message)
}

/// The elements of the receiver, a list.
fn elements<'b, 'v>(
    list: &'b (dyn Val + 'v),
    function: &str,
) -> Result<Elements<'b, 'v>, ExecutionError> {
    let iterable = list
        .as_iterable()
        .ok_or_else(|| error(function, "the receiver is not a list"))?;
    let mut items = iterable.iter();
    let mut out = Vec::new();
    while let Some(item) = items.next() {
        out.push(item);
    }
    Ok(out)
}

fn compare(a: &dyn Val, b: &dyn Val, function: &str) -> Result<Ordering, ExecutionError> {
    let comparer = a
        .as_comparer()
        .ok_or_else(|| error(function, "list elements must be comparable"))?;
    comparer
        .compare(b)
        .map_err(|_| error(function, "list elements must be comparable"))
}

fn owned<'b, 'v>(value: impl Val + 'v) -> CowVal<'b, 'v> {
    CowVal::Owned(Box::new(value))
}

fn is_sorted<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let items = elements(args[0].as_ref(), "isSorted")?;
    for pair in items.windows(2) {
        if compare(pair[0], pair[1], "isSorted")? == Ordering::Greater {
            return Ok(owned(CelBool::from(false)));
        }
    }
    Ok(owned(CelBool::from(true)))
}

fn sum<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let items = elements(args[0].as_ref(), "sum")?;
    let Some((first, rest)) = items.split_first() else {
        return Ok(owned(CelInt::from(0)));
    };
    let mut total: Box<dyn Val + 'v> = first.clone_as_boxed();
    for item in rest {
        let adder = total
            .as_adder()
            .ok_or_else(|| error("sum", "list elements must be numbers or durations"))?;
        let next = adder.add(*item)?.into_owned();
        total = next;
    }
    Ok(CowVal::Owned(total))
}

/// The least (`Ordering::Less`) or greatest element.
fn extreme<'b, 'v>(
    args: Vec<CowVal<'b, 'v>>,
    function: &str,
    wanted: Ordering,
) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let items = elements(args[0].as_ref(), function)?;
    let Some((first, rest)) = items.split_first() else {
        return Err(refused(
            function,
            format!("{function} called on empty list"),
        ));
    };
    let mut best = *first;
    for item in rest {
        if compare(*item, best, function)? == wanted {
            best = *item;
        }
    }
    Ok(CowVal::Owned(best.clone_as_boxed()))
}

fn min<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    extreme(args, "min", Ordering::Less)
}

fn max<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    extreme(args, "max", Ordering::Greater)
}

fn position<'b, 'v>(
    args: Vec<CowVal<'b, 'v>>,
    function: &str,
    last: bool,
) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let items = elements(args[0].as_ref(), function)?;
    let wanted = args[1].as_ref();
    let mut found = items.iter().enumerate().filter(|(_, v)| v.equals(wanted));
    let index = if last { found.last() } else { found.next() };
    let index = index.map_or(-1, |(i, _)| i as i64);
    Ok(owned(CelInt::from(index)))
}

fn index_of<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    position(args, "indexOf", false)
}

fn last_index_of<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    position(args, "lastIndexOf", true)
}

fn text<'a>(value: &'a dyn Val, function: &str) -> Result<&'a str, ExecutionError> {
    <&str>::try_from(value).map_err(|_| error(function, "expected a string"))
}

/// The pattern, compiled with RE2's bounds (the `regex` crate, linear time).
fn pattern(source: &str, function: &str) -> Result<regex::Regex, ExecutionError> {
    regex::RegexBuilder::new(source)
        .size_limit(1 << 20)
        .build()
        .map_err(|e| error(function, format!("invalid regex: {e}")))
}

fn find<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let subject = text(args[0].as_ref(), "find")?;
    let re = pattern(text(args[1].as_ref(), "find")?, "find")?;
    let found = re.find(subject).map_or("", |m| m.as_str()).to_string();
    Ok(owned(CelString::from(found)))
}

fn find_all<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let subject = text(args[0].as_ref(), "findAll")?;
    let re = pattern(text(args[1].as_ref(), "findAll")?, "findAll")?;
    // A negative limit is no limit, as in Go's FindAllString.
    let limit = match args.get(2) {
        Some(n) => {
            let n =
                <&i64>::try_from(n.as_ref()).map_err(|_| error("findAll", "expected an int"))?;
            usize::try_from(*n).unwrap_or(usize::MAX)
        }
        None => usize::MAX,
    };
    let found: Vec<Box<dyn Val + 'v>> = re
        .find_iter(subject)
        .take(limit)
        .map(|m| Box::new(CelString::from(m.as_str().to_string())) as Box<dyn Val + 'v>)
        .collect();
    Ok(owned(CelList::from(found)))
}

#[cfg(test)]
pub(super) mod tests {
    use crate::crd::rules::{compile, evaluate};

    /// The value of `expression`, `None` when it is not evaluated (an error of the engine).
    pub(in crate::crd) fn eval(expression: &str) -> Option<cel::Value> {
        let program = compile(expression).unwrap();
        evaluate(&program, &[]).unwrap_or_else(|e| panic!("{expression}: {e}"))
    }

    /// The API server's error for `expression`, which fails on its values.
    pub(in crate::crd) fn error(expression: &str) -> String {
        let program = compile(expression).unwrap();
        match evaluate(&program, &[]) {
            Err(e) => e,
            Ok(v) => panic!("{expression}: {v:?}, not an error"),
        }
    }

    /// Every expression evaluates to `true`.
    pub(in crate::crd) fn all_true(expressions: &[&str]) {
        for expression in expressions {
            assert_eq!(
                eval(expression),
                Some(cel::Value::Bool(true)),
                "{expression}"
            );
        }
    }

    #[test]
    fn the_lists_library_answers_as_kubernetes_documents_it() {
        all_true(&[
            "[1, 2, 3].isSorted()",
            "!['b', 'a'].isSorted()",
            "[].isSorted()",
            "[1, 2, 3].sum() == 6",
            "[1.5, 2.5].sum() == 4.0",
            "[].sum() == 0",
            "[3, 1, 2].min() == 1",
            "[3, 1, 2].max() == 3",
            "['b', 'c', 'a'].max() == 'c'",
            "[1, 2, 2, 3].indexOf(2) == 1",
            "[1, 2, 2, 3].lastIndexOf(2) == 2",
            "[1, 2].indexOf(9) == -1",
            // The strings extension's indexOf is still the one on strings.
            "'a-b'.indexOf('-') == 1",
        ]);
        // Errors on the API server, in its words (lists.go).
        assert_eq!(error("[].min()"), "min called on empty list");
        assert_eq!(error("[].max()"), "max called on empty list");
        // Values that do not compare: a type error cel-go words otherwise, not evaluated.
        assert_eq!(eval("[1, 'a'].isSorted()"), None);
    }

    #[test]
    fn the_quantity_library_compares_exactly() {
        all_true(&[
            "quantity('1') == quantity('1000m')",
            "quantity('64Gi').isGreaterThan(quantity('64G'))",
            "quantity('500m').isLessThan(quantity('1'))",
            "quantity('1Ki').compareTo(quantity('1024')) == 0",
            "quantity('2').compareTo(quantity('3')) == -1",
            "quantity('8').isInteger() && quantity('8').asInteger() == 8",
            "!quantity('1500m').isInteger()",
            "quantity('1500m').asApproximateFloat() == 1.5",
            "quantity('1n').isGreaterThan(quantity('0'))",
            "quantity('-1').sign() == -1 && quantity('0').sign() == 0",
            "quantity('1Gi').add(quantity('1Gi')) == quantity('2Gi')",
            "quantity('1').add(2) == quantity('3')",
            "quantity('1').sub(quantity('250m')) == quantity('750m')",
            "isQuantity('64Gi') && !isQuantity('64 GB')",
            // A GPU policy of the kind clusters write.
            "quantity('8').isLessThan(quantity('9'))",
        ]);
        // Errors on the API server, in apimachinery's words (quantity.go's ParseQuantity).
        let format = "quantities must match the regular expression \
                      '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'";
        assert_eq!(error("quantity('64 GB') == quantity('1')"), format);
        assert_eq!(error("quantity('x')"), format);
        assert_eq!(error("quantity('')"), format);
        assert_eq!(error("quantity('1.2.3')"), format);
        assert_eq!(
            error("quantity('5ii')"),
            "unable to parse quantity's suffix"
        );
        assert_eq!(error("quantity('1e')"), "unable to parse quantity's suffix");
        assert_eq!(
            error("quantity('1500m').asInteger()"),
            "cannot convert value to integer"
        );
        all_true(&[
            "isQuantity('1e3') && isQuantity('1E-2') && isQuantity('0.5Ki')",
            "!isQuantity('5ii') && !isQuantity('') && !isQuantity('1K')",
            // An error on the left of `||` is absorbed when the right is true, as in cel-go.
            "quantity('x') == quantity('1') || true",
        ]);
    }

    #[test]
    fn the_sets_extension_treats_lists_as_sets() {
        all_true(&[
            "sets.contains([1, 2, 3], [2, 3])",
            "!sets.contains([1, 2], [3])",
            "sets.contains([1, 2], [])",
            "sets.contains([1], [1.0])",
            "sets.equivalent([1, 2, 2], [2, 1])",
            "!sets.equivalent([1], [1, 2])",
            "sets.intersects(['a', 'b'], ['b', 'c'])",
            "!sets.intersects([1], [])",
        ]);
    }

    #[test]
    fn the_regex_library_finds_in_re2_syntax() {
        all_true(&[
            "'abc 123'.find('[0-9]+') == '123'",
            "'abc'.find('[0-9]+') == ''",
            "'123 abc 456'.findAll('[0-9]+') == ['123', '456']",
            "'123 abc 456'.findAll('[0-9]+', 1) == ['123']",
            "'123 abc 456'.findAll('[0-9]+', -1).size() == 2",
        ]);
        // A look-ahead is not RE2: an error, as Go's regexp refuses it.
        assert_eq!(eval("'abc'.find('a(?=b)')"), None);
    }
}
