//! One rule per file; `registry.rs` lists them.

mod duplicate_key;
mod gpu_limit;
mod gpu_toleration;
mod headless_service;
mod indexed_job_shm;
mod inline_credential;
mod job_name_length;
mod job_restart_policy;
mod job_ttl;
mod master_addr;
mod nvcr_pull_secret;
mod secret_data;
mod shm_memory;
mod strict_schema;
mod unpinned_image;
mod world_size;
mod yaml11_boolean;

pub use duplicate_key::DuplicateKey;
pub use gpu_limit::GpuLimit;
pub use gpu_toleration::GpuToleration;
pub use headless_service::HeadlessService;
pub use indexed_job_shm::IndexedJobShm;
pub use inline_credential::InlineCredential;
pub use job_name_length::JobNameLength;
pub use job_restart_policy::JobRestartPolicy;
pub use job_ttl::JobTtl;
pub use master_addr::MasterAddr;
pub use nvcr_pull_secret::NvcrPullSecret;
pub use secret_data::SecretData;
pub use shm_memory::ShmMemory;
pub use strict_schema::StrictSchema;
pub use unpinned_image::UnpinnedImage;
pub use world_size::WorldSize;
pub use yaml11_boolean::Yaml11Boolean;
