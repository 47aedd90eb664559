//! The kinds and schemars definitions of the one Kubernetes minor this build is for, from the
//! k8s-openapi crate line that carries it (build.rs lists the kinds from the crate's source).

use crate::k8s_description::Kind;
use serde_json::{Map, Value};

/// The minor this build describes, and the crate it comes from.
pub const MINOR: u32 = const_minor();
#[cfg(k8s24)]
pub const SOURCE: &str = "k8s-openapi 0.24.0";
#[cfg(k8s29)]
pub const SOURCE: &str = "k8s-openapi 0.29.0";

const fn const_minor() -> u32 {
    let digits = env!("K8S_MINOR").as_bytes();
    ((digits[0] - b'0') * 10 + (digits[1] - b'0')) as u32
}

/// Every built-in kind and the draft-07 definitions of all types they reach.
#[cfg(k8s24)]
pub fn collect() -> Result<(Vec<Kind>, Map<String, Value>), serde_json::Error> {
    use k8s_openapi_24 as k8s;
    use k8s_openapi_24::Resource;
    use schemars::JsonSchema;
    let mut generator = schemars::r#gen::SchemaSettings::draft07().into_generator();
    let mut kinds = Vec::new();
    macro_rules! kinds {
        ($($t:ty),* $(,)?) => {{$(
            generator.subschema_for::<$t>();
            kinds.push(Kind {
                api_version: <$t as Resource>::API_VERSION.to_owned(),
                kind: <$t as Resource>::KIND.to_owned(),
                definition: <$t as JsonSchema>::schema_name(),
            });
        )*}};
    }
    // A block of one push per kind.
    include!(concat!(env!("OUT_DIR"), "/kinds.rs"));
    let definitions = match serde_json::to_value(generator.definitions())? {
        Value::Object(map) => map,
        _ => unreachable!("definitions serialise as a map"),
    };
    Ok((kinds, definitions))
}

/// Every built-in kind and the draft-07 definitions of all types they reach.
#[cfg(k8s29)]
pub fn collect() -> Result<(Vec<Kind>, Map<String, Value>), serde_json::Error> {
    use k8s_openapi_29 as k8s;
    use k8s_openapi_29::Resource;
    use schemars1::JsonSchema;
    let mut generator = schemars1::generate::SchemaSettings::draft07().into_generator();
    let mut kinds = Vec::new();
    macro_rules! kinds {
        ($($t:ty),* $(,)?) => {{$(
            generator.subschema_for::<$t>();
            kinds.push(Kind {
                api_version: <$t as Resource>::API_VERSION.to_owned(),
                kind: <$t as Resource>::KIND.to_owned(),
                definition: <$t as JsonSchema>::schema_name().into_owned(),
            });
        )*}};
    }
    // A block of one push per kind.
    include!(concat!(env!("OUT_DIR"), "/kinds.rs"));
    Ok((kinds, generator.definitions().clone()))
}
