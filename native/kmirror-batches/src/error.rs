//! Why a merge failed. Both kinds reach Python as `kmirror_batches.MergeError`.

use std::fmt;

#[derive(Debug)]
pub enum Error {
    /// The batches are not a run the merge can take, or a batch is malformed.
    Input(String),
    /// A compressed records section would not decompress (or the merged one compress).
    Codec(String),
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Input(why) => f.write_str(why),
            Error::Codec(why) => write!(f, "compression: {why}"),
        }
    }
}
