//! The collector a non-root front end gets when the query service answers.
