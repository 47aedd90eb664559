//! tao-k8s compiles an NVIDIA TAO *action request* (one container action: train, evaluate,
//! export...) into Kubernetes manifests, offline:
//!
//! ```text
//! request.yaml --load--> ActionRequest --check--> Plan --render--> YAML --verify--> objects
//! ```
//!
//! - [`request`] loads YAML or JSON into typed fields, reporting every problem at once with
//!   its field path and line:col ([`diag`], [`source`], [`yaml`]).
//! - [`plan`] makes every decision: names ([`names`]), labels, the command vector, env,
//!   resources, volumes, the staged config.
//! - [`render`] lays the Plan out through minijinja templates with JSON auto-escaping.
//! - [`compile`] parses the output back and validates each object against a strict schema of
//!   its kind ([`schema`]) before anything is handed out.
//!
//! The library does no I/O: text in, text and data out. The `tao-k8s` binary reads files,
//! prints, and owns the exit codes.

pub mod codes;
pub mod compile;
pub mod crd;
pub mod diag;
pub mod driver;
pub mod gate;
pub mod k8s;
pub mod kube;
pub mod lint;
pub mod plan;
pub mod record;
pub mod render;
pub mod request;
pub mod schema;
pub mod secrets;
pub mod source;
pub mod staging;
pub mod yaml;

pub use compile::{Bundle, Compiled, Failure, bundle, compile};
