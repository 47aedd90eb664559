//! Did-you-mean.

/// The closest known name, when it is close enough to be a likely typo: the did-you-mean of
/// the request loader, the request checks and the strict Kubernetes checker.
pub fn nearest<'a>(name: &str, known: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    known
        .into_iter()
        .map(|k| {
            (
                strsim::jaro_winkler(&name.to_lowercase(), &k.to_lowercase()),
                k,
            )
        })
        .filter(|(score, _)| *score >= 0.8)
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, k)| k)
}
