//! collect's insides, for its own tests and examples and for the CLI's test of the query
//! service's wire protocol: the `testing` feature, which only dev-dependencies turn on. A
//! front end never enables it: what it needs is [`crate::Host`]'s face.
#![allow(missing_docs)]

pub use crate::collector::*;

pub mod bpf {
    pub use crate::bpf::*;
}
pub mod choice {
    pub use crate::choice::*;
}
pub mod exits {
    pub use crate::exits::*;
}
pub mod host {
    pub use crate::host::*;
}
pub mod procfs {
    pub use crate::procfs::*;
}
pub mod sampler {
    pub use crate::sampler::*;
}
pub mod service {
    pub use crate::service::*;
}
pub mod states {
    pub use crate::states::*;
}
