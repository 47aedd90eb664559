//! tao-k8s: an offline compiler from NVIDIA TAO action requests to Kubernetes manifests.
pub mod names;
pub mod secrets;
