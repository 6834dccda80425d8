//! One error type for everything below the CLI.

use std::fmt;

#[derive(Debug)]
pub enum Error {
    /// The device could not be read (or written).
    Io {
        what: String,
        source: std::io::Error,
    },
    /// On-disk data is malformed beyond what the checker can reason about.
    Corrupt(String),
    /// The file system uses something pfsck does not support.
    Incompatible(String),
    /// The user interrupted the run.
    Interrupted,
    /// A repair's staged writes refused a block (beyond the device, the
    /// staging limit reached, its spill file failing).
    Staging(String),
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Io { what, source } => write!(f, "{what}: {source}"),
            Error::Corrupt(s) => write!(f, "{s}"),
            Error::Incompatible(s) => write!(f, "{s}"),
            Error::Interrupted => write!(f, "interrupted"),
            Error::Staging(s) => write!(f, "{s}"),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Io { source, .. } => Some(source),
            _ => None,
        }
    }
}

pub type Result<T> = std::result::Result<T, Error>;

/// The repair's fixes still report failures as text; a library error
/// becomes its message.
impl From<Error> for String {
    fn from(e: Error) -> String {
        e.to_string()
    }
}
