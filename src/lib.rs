//! tao-k8s compiles an NVIDIA TAO *action request* (one container action: train, evaluate,
//! export...) into Kubernetes manifests, offline:
//!
//! ```text
//! request.yaml --load--> ActionRequest --check--> Plan --render--> YAML --verify--> objects
//! ```
//!
//! - [`request`] loads YAML or JSON into typed fields and checks them, reporting every problem
//!   at once with its field path and line:col ([`diag`], [`source`], [`yaml`]).
//! - [`staging`] says where every producer-side path lands in the pod.
//! - [`plan`] makes every decision: names, labels, the command vector, env, resources,
//!   volumes, the staged config.
//! - [`render`] lays the Plan out through minijinja templates with JSON auto-escaping.
//! - [`compile`] parses the output back, validates each object with the strict checker of
//!   built-in kinds ([`k8s`]) and runs the project's own lint on it ([`lint`]) before anything
//!   is handed out.
//!
//! Beside the compiler: [`lint`] for any Kubernetes YAML, [`driver`] and [`gate`] for the
//! generated script, [`record`] for job records. [`kube`] holds what is true of Kubernetes
//! itself. The modules stand on floors (`ARCHITECTURE.md`): each imports only floors below it.
//!
//! The library reads no file and runs no process: text in, text and data out. The one
//! exception is [`record`], the store of job records, which owns its directory. The
//! `tao-k8s` binary reads every other file, prints, and owns the exit codes.

pub mod cluster;
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
