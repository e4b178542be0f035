"""Where this checkout's build is: the cargo target directory (CARGO_TARGET_DIR when set, as
cargo and ./x take it, which exports it absolute; else target/ in the checkout), and the
programs built there that the tests run."""

import os

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def target_dir():
    """The cargo target directory."""
    return os.path.abspath(os.environ.get("CARGO_TARGET_DIR") or os.path.join(REPO, "target"))


def debug_binary(name):
    """A binary of the workspace's debug build (`cargo build`), e.g. "tasksnap"."""
    return os.path.join(target_dir(), "debug", name)
