//! `tasksnap report`: a recording's window as one self-contained HTML page, "what happened
//! at 3 a.m." to look at. The command line and the run are [`cli`]'s. The input is a
//! recording (its readings, through tasksnap-history as `dump` reads them, made
//! [`frame::Frame`]s by [`recorded`]) or a Parquet dump of one (its rows made frames by
//! [`mod@parquet`]); the figures are gathered from the frames ([`gather`]: one pass), become
//! charts ([`views`], drawn as SVG by [`chart`], at most
//! [`decimate::MAX_POINTS`] points each), moments worth looking at ([`moments`]) with the
//! ps-style listing of each ([`listing`]), and one page ([`page`]: style and script inline,
//! nothing fetched). Every recorded name is escaped by [`escape`].

mod chart;
mod cli;
mod decimate;
mod escape;
mod frame;
mod gather;
mod listing;
mod moments;
mod page;
mod parquet;
mod recorded;
mod views;

pub use cli::main;
