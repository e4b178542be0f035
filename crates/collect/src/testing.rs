//! collect's insides, for its own tests and examples and for the CLI's test of the query
//! service's wire protocol: the `testing` feature, which only dev-dependencies turn on. A
//! front end never enables it: what it needs is [`crate::Host`]'s face.
#![allow(missing_docs)]

pub use crate::collector::*;

/// `pub mod NAME { pub use crate::NAME::*; }` for each module named: its insides, public here.
macro_rules! insides {
    ($($module:ident),+) => {
        $(
            pub mod $module {
                pub use crate::$module::*;
            }
        )+
    };
}

insides!(bpf, choice, exits, host, procfs, sampler, service, states);
