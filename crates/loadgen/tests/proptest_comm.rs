//! Property test of [`kernel_comm`]: what `/proc/<pid>/comm` holds after `PR_SET_NAME` is
//! the first 15 bytes of the name. (The `/proc/<pid>/stat` parser [`read_stat`] uses is
//! tasksnap-procfs's; its properties are in crates/procfs/tests/proptest_parse.rs.)
//!
//! `PROPTEST_CASES` overrides the case count (512 by default here).
//!
//! [`read_stat`]: tasksnap_loadgen::read_stat

use proptest::prelude::*;
use tasksnap_loadgen::{kernel_comm, TASK_COMM_LEN};

#[path = "../../procfs/tests/strategies/mod.rs"]
mod strategies;
use strategies::cases;

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(), ..ProptestConfig::default() })]

    #[test]
    fn kernel_comm_keeps_the_first_15_bytes(name in ".{0,40}") {
        let c = kernel_comm(&name);
        prop_assert!(c.len() < TASK_COMM_LEN);
        prop_assert!(name.as_bytes().starts_with(&c));
        prop_assert_eq!(c.len(), name.len().min(TASK_COMM_LEN - 1));
    }
}
