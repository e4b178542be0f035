//! The libbpf-rs skeletons build.rs generated for the four objects: [`task_iter`] (the task
//! iterator, the walk and the command-line programs; record layout in `c/record.h`),
//! [`states`] (the thread-state accounting; layout in `c/states.h`), [`exits`] (the exit
//! records; layout in `c/exits.h`) and [`changes`] (a live view's change set). Their Rust types come
//! from the objects' BTF: nothing here restates a C layout. Generated code: the lints
//! tasksnap keeps are off for it (lib.rs).

/// The task iterator, walk and command-line programs (`c/task_iter.bpf.c`).
pub mod task_iter {
    include!(concat!(env!("OUT_DIR"), "/task_iter.skel.rs"));
}

/// The thread-state accounting (`c/states.bpf.c`).
pub mod states {
    include!(concat!(env!("OUT_DIR"), "/states.skel.rs"));
}

/// The exit records (`c/exits.bpf.c`; layout in `c/exits.h`).
pub mod exits {
    include!(concat!(env!("OUT_DIR"), "/exits.skel.rs"));
}

/// A live view's change set: which processes to read again (`c/changes.bpf.c`).
pub mod changes {
    include!(concat!(env!("OUT_DIR"), "/changes.skel.rs"));
}
